import {
  type BackfillListener,
  type BackfillStep,
  defaultKeywordAnalyzer,
  KEYWORD_BACKFILL,
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  MemoryError,
  NO_KEYWORD_INDEX,
  runBackfill,
} from '@engram/core/driver';
import { type Database, type Executor, inTransaction, type Transaction } from './embedded.ts';
import { ADAPTER } from './errors.ts';
import { CREATE_KEYWORDS, indexBatch, KEYWORDS, type MessageKey, messagesAfter } from './keywords.ts';
import { NEXT_SEQ, NOW_MS, TABLES } from './sql.ts';

/** One schema change. Its version is its position in `MIGRATIONS` plus one. */
export interface Migration {
  /** What the change does, recorded next to the version. */
  readonly name: string;
  readonly statements: readonly string[];
  /**
   * The index the statements create (or empty), has to be filled in for the messages already
   * stored: recorded in `engram_backfills` and done after the upgrade commits, resumable. Before
   * version 13 (which added that table) it was done inside the upgrade's transaction.
   */
  readonly backfill?: typeof KEYWORD_BACKFILL;
}

const {
  threads,
  messages,
  resources,
  messageCounts,
  migrations,
  vectors,
  vectorSpace,
  messageBatches,
  observations,
  vectorRemovals,
  vectorWrites,
  settings,
  turns,
  backfills,
} = TABLES;

/**
 * What the trigger of `engram_message_batches` (migration 5) raises when a batch needs the
 * store's full save. Part of stored schemas: never change it.
 */
export const BATCH_REFUSED = 'engram: batch needs the full save';

/** The thread's `updated_at` after a one-statement save (since migration 6): the write's time, never backwards. */
const SAVED_AT = `MAX(updated_at, ${NOW_MS}, (SELECT MAX(json_extract(value, '$[4]')) FROM json_each(NEW.messages)))`;

/**
 * The trigger behind `engram_message_batches` (migration 5), setting the thread's `updated_at`
 * to `updatedAt`. `NEW.messages`: [id, role, content, type, created_at] of new messages. No
 * thread of this id and resource, or an id stored already (a re-save, a move, another resource's
 * message): RAISE(ABORT) undoes the statement, and core's composed save refuses or replaces the
 * batch. `json_extract`, not `->>`, so older SQLite tools read the schema. `keyed` (since
 * migration 15): each message gets its `seq` (see `NEXT_SEQ`). Part of stored schemas: a change is
 * a new migration that drops and recreates it.
 */
function saveTrigger(updatedAt: string, keyed = false): string {
  const seq = keyed ? { column: ', seq', value: `, ${NEXT_SEQ} + key` } : { column: '', value: '' };
  return `CREATE TRIGGER ${messageBatches}_save INSTEAD OF INSERT ON ${messageBatches}
  BEGIN
    UPDATE ${threads} SET updated_at = ${updatedAt}
      WHERE id = NEW.thread_id AND resource_id = NEW.resource_id;
    SELECT RAISE(ABORT, '${BATCH_REFUSED}') WHERE changes() = 0;
    INSERT INTO ${messages} (id, thread_id, resource_id, role, content, type, created_at${seq.column})
      SELECT json_extract(value, '$[0]'), NEW.thread_id, NEW.resource_id, json_extract(value, '$[1]'),
        json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]')${seq.value}
      FROM json_each(NEW.messages) WHERE true
      ON CONFLICT (id) DO NOTHING;
    SELECT RAISE(ABORT, '${BATCH_REFUSED}') WHERE changes() < json_array_length(NEW.messages);
    INSERT INTO ${messageCounts} (thread_id, resource_id, n)
      VALUES (NEW.thread_id, NEW.resource_id, json_array_length(NEW.messages))
      ON CONFLICT (thread_id, resource_id) DO UPDATE SET n = n + excluded.n;
  END`;
}

/**
 * The schema, as an append-only list: never edit or reorder an entry, only add new ones. A
 * database records the versions it has applied in `engram_migrations`; `init()` applies the
 * missing ones in one write transaction.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    name: 'threads, messages and resources',
    statements: [
      `CREATE TABLE ${threads} (
        id TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL,
        title TEXT NOT NULL,
        metadata TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
      `CREATE TABLE ${messages} (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        created_at INTEGER NOT NULL
      )`,
      `CREATE INDEX ${messages}_thread_created_id ON ${messages} (thread_id, created_at, id)`,
      `CREATE TABLE ${resources} (
        id TEXT PRIMARY KEY,
        working_memory TEXT,
        metadata TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      )`,
    ],
  },
  {
    name: 'message type; thread listing indexes',
    statements: [
      `ALTER TABLE ${messages} ADD COLUMN type TEXT NOT NULL DEFAULT 'text'`,
      `CREATE INDEX ${threads}_resource_created_id ON ${threads} (resource_id, created_at, id)`,
      `CREATE INDEX ${threads}_resource_updated_id ON ${threads} (resource_id, updated_at, id)`,
    ],
  },
  {
    name: 'message counts per thread and resource',
    statements: [
      `CREATE TABLE ${messageCounts} (
        thread_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (thread_id, resource_id)
      ) WITHOUT ROWID`,
      `INSERT INTO ${messageCounts} (thread_id, resource_id, n)
        SELECT thread_id, resource_id, COUNT(*) FROM ${messages} GROUP BY thread_id, resource_id`,
    ],
  },
  {
    name: 'message vectors for semantic recall',
    statements: [
      `CREATE TABLE ${vectorSpace} (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        embedder TEXT NOT NULL,
        dimensions INTEGER NOT NULL
      )`,
      // F32_BLOB without a length: the dimension is the recorded space's, checked by core
      // (libSQL's column type would not enforce it either).
      `CREATE TABLE ${vectors} (
        message_id TEXT NOT NULL,
        space TEXT NOT NULL,
        hash TEXT NOT NULL,
        embedding F32_BLOB NOT NULL,
        PRIMARY KEY (message_id, space)
      ) WITHOUT ROWID`,
      `CREATE TRIGGER ${vectors}_on_message_delete AFTER DELETE ON ${messages}
        BEGIN DELETE FROM ${vectors} WHERE message_id = OLD.id; END`,
      `CREATE INDEX ${messages}_resource ON ${messages} (resource_id)`,
    ],
  },
  {
    name: 'one-statement message saves',
    statements: [
      // Never holds rows: an insert runs the trigger below instead.
      `CREATE VIEW ${messageBatches} AS
        SELECT NULL AS thread_id, NULL AS resource_id, NULL AS saved_at, NULL AS messages WHERE 0`,
      saveTrigger('NEW.saved_at'),
    ],
  },
  {
    name: 'one-statement saves stamp updated_at at the write, never backwards',
    statements: [
      `DROP TRIGGER ${messageBatches}_save`,
      // NEW.saved_at, the caller's clock before it waited for the write lock, is no longer read.
      saveTrigger(SAVED_AT),
    ],
  },
  {
    name: 'vectors deleted by the store, in the write that deletes their messages',
    // The vector domain's delete hooks run in that write, before the messages go.
    statements: [`DROP TRIGGER ${vectors}_on_message_delete`],
  },
  {
    name: 'observation logs for observational memory, one row per (key, generation)',
    statements: [
      // A rowid table: bodies run to megabytes, which WITHOUT ROWID tables store poorly.
      // `body` is a JSON string literal (reads of TEXT stop at a NUL); `updated_at` epoch ms.
      `CREATE TABLE ${observations} (
        key TEXT NOT NULL,
        generation INTEGER NOT NULL,
        resource_id TEXT NOT NULL,
        thread_id TEXT,
        version INTEGER NOT NULL,
        body TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (key, generation)
      )`,
      `CREATE INDEX ${observations}_thread ON ${observations} (thread_id)`,
    ],
  },
  {
    name: 'keyword index: FTS5 terms of each message with text, backfilled',
    statements: [CREATE_KEYWORDS],
    // Filled in within this transaction until version 13; since then after it, resumable.
    backfill: KEYWORD_BACKFILL,
  },
  {
    name: 'vector write order and a log of vector deletes, for searches over vectors kept in process',
    statements: [
      // Vectors stored before keep seq 0: a kept copy reads them when it reads the whole resource.
      `ALTER TABLE ${vectors} ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`,
      `CREATE INDEX ${vectors}_seq ON ${vectors} (seq)`,
      // seq: the rowid, one above the newest entry (the newest is never dropped).
      `CREATE TABLE ${vectorRemovals} (seq INTEGER PRIMARY KEY, resource_id TEXT NOT NULL, message_id TEXT NOT NULL)`,
      // A message moved to another thread or time: its vectors count as written again, so a
      // kept copy reads them back with the new thread and time.
      `CREATE TRIGGER ${vectors}_on_message_move AFTER UPDATE OF thread_id, created_at ON ${messages}
        WHEN OLD.thread_id IS NOT NEW.thread_id OR OLD.created_at IS NOT NEW.created_at
        BEGIN
          UPDATE ${vectors} SET seq = (SELECT max(seq) + 1 FROM ${vectors}) WHERE message_id = NEW.id;
        END`,
    ],
  },
  {
    name: 'store-level settings (the recorded memory configuration)',
    statements: [
      // `value`: JSON text of an object; `updated_at` epoch ms.
      `CREATE TABLE ${settings} (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at INTEGER NOT NULL)`,
    ],
  },
  {
    name: 'turn records: one row per turn, listed per thread newest first',
    statements: [
      // `body` is a JSON string literal (reads of TEXT stop at a NUL); `created_at` epoch ms.
      `CREATE TABLE ${turns} (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
      )`,
      `CREATE INDEX ${turns}_thread_created_id ON ${turns} (thread_id, created_at, id)`,
    ],
  },
  {
    name: 'backfills an upgrade left to do, each with the last message id done, so a stopped one resumes',
    statements: [`CREATE TABLE ${backfills} (name TEXT PRIMARY KEY, last_id TEXT NOT NULL)`],
  },
  {
    name: 'vector write order from a counter that never goes back (max(seq) went back when the newest vector was deleted)',
    statements: [
      `CREATE TABLE ${vectorWrites} (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL)`,
      `INSERT INTO ${vectorWrites} (id, seq) SELECT 1, coalesce(max(seq), 0) FROM ${vectors}`,
      `DROP TRIGGER ${vectors}_on_message_move`,
      // A message with vectors moved to another thread or time: its vectors count as written
      // again, so a kept copy reads them back with the new thread and time.
      `CREATE TRIGGER ${vectors}_on_message_move AFTER UPDATE OF thread_id, created_at ON ${messages}
        WHEN (OLD.thread_id IS NOT NEW.thread_id OR OLD.created_at IS NOT NEW.created_at)
          AND EXISTS (SELECT 1 FROM ${vectors} WHERE message_id = NEW.id)
        BEGIN
          UPDATE ${vectorWrites} SET seq = seq + 1;
          UPDATE ${vectors} SET seq = (SELECT seq FROM ${vectorWrites}) WHERE message_id = NEW.id;
        END`,
    ],
  },
  {
    name: 'messages keyed for the keyword index by a column of their own (a .dump and restore renumbers rowids)',
    statements: [
      `ALTER TABLE ${messages} ADD COLUMN seq INTEGER`,
      `UPDATE ${messages} SET seq = rowid`,
      `CREATE UNIQUE INDEX ${messages}_seq ON ${messages} (seq)`,
      `DROP TRIGGER ${messageBatches}_save`,
      saveTrigger(SAVED_AT, true),
      // Built again: an index keyed by rowids a logical copy renumbered names other messages.
      `DELETE FROM ${KEYWORDS}`,
    ],
    backfill: KEYWORD_BACKFILL,
  },
  {
    name: "threads indexed by created_at across resources: a walk of the store's threads reads on from the last",
    statements: [`CREATE INDEX ${threads}_created_id ON ${threads} (created_at, id)`],
  },
];

/** The first version whose messages carry `seq`, the keyword index's key. */
const KEYED_VERSION = MIGRATIONS.findIndex((m) => m.name.startsWith('messages keyed')) + 1;

/** The schema version this package writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

const CREATE_VERSION_TABLE = `CREATE TABLE IF NOT EXISTS ${migrations} (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at INTEGER NOT NULL
)`;

/** The highest applied version, or 0 when the version table does not exist yet. */
async function appliedVersion(db: Executor): Promise<number> {
  const exists = await db.execute({
    sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    args: [migrations],
  });
  if (exists.rows.length === 0) return 0;
  const result = await db.execute(`SELECT COALESCE(MAX(version), 0) AS version FROM ${migrations}`);
  return Number(result.rows[0]?.version ?? 0);
}

function tooNew(found: number, target: number): MemoryError {
  return new MemoryError(
    'MIGRATION',
    `${ADAPTER}: the database has schema version ${found}, newer than the ${target} this version of @engram/libsql knows; upgrade the package`,
    { adapter: ADAPTER, details: { found, target } },
  );
}

/** The first version with `engram_backfills`: backfills run after the upgrade, resumable. */
const BACKFILLS_VERSION = 13;

/**
 * Brings the schema up to `target` (default: all migrations). Reads the version first and
 * takes the write lock only when something is missing; the check is repeated inside the
 * `BEGIN IMMEDIATE` transaction, so concurrent `init()` calls from several processes apply each
 * migration exactly once. Then finishes a backfill left pending, by this upgrade or one stopped
 * before (one query when none is), or, with the keyword index off, records one (`keywordIndexOff`).
 */
export async function migrate(
  client: Database,
  target: number = SCHEMA_VERSION,
  analyzer: KeywordAnalyzer = defaultKeywordAnalyzer,
  progress: BackfillListener = () => {},
): Promise<void> {
  const before = await appliedVersion(client);
  if (before > SCHEMA_VERSION) throw tooNew(before, SCHEMA_VERSION);
  if (before < target) await upgrade(client, target, analyzer, progress);
  if (Math.max(before, target) < BACKFILLS_VERSION) return;
  const pending = await client.execute({
    sql: `SELECT 1 FROM ${backfills} WHERE name = ?`,
    args: [KEYWORD_BACKFILL],
  });
  const key = Math.max(before, target) >= KEYED_VERSION ? 'seq' : 'rowid';
  if (analyzer.id === NO_KEYWORD_INDEX.id) await keywordIndexOff(client);
  else if (pending.rows.length > 0) await backfillKeywords(client, analyzer, progress, key);
}

/**
 * A store with the keyword index off (`keywords: false`) records a keyword backfill from the start
 * (its saves index nothing), which the next open with the index on runs: every message indexed
 * again before that store serves.
 */
function keywordIndexOff(client: Database): Promise<unknown> {
  return client.execute({
    sql: `INSERT INTO ${backfills} (name, last_id) VALUES (?, '') ON CONFLICT (name) DO UPDATE SET last_id = ''`,
    args: [KEYWORD_BACKFILL],
  });
}

/** The schema transaction of `migrate`. */
function upgrade(
  client: Database,
  target: number,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
): Promise<void> {
  return inTransaction(client, async (tx) => {
    await tx.execute(CREATE_VERSION_TABLE);
    const current = await appliedVersion(tx);
    if (current > SCHEMA_VERSION) throw tooNew(current, SCHEMA_VERSION);
    const applied = MIGRATIONS.slice(current, target);
    for (const [i, migration] of applied.entries()) {
      for (const sql of migration.statements) await tx.execute(sql);
      await tx.execute({
        sql: `INSERT INTO ${migrations} (version, name, applied_at) VALUES (?, ?, ?)`,
        args: [current + i + 1, migration.name, Date.now()],
      });
    }
    if (!applied.some((migration) => migration.backfill)) return;
    if (target >= BACKFILLS_VERSION) {
      // From the start again, also when one was left pending (the index was emptied since).
      await tx.execute({
        sql: `INSERT INTO ${backfills} (name, last_id) VALUES (?, '') ON CONFLICT (name) DO UPDATE SET last_id = ''`,
        args: [KEYWORD_BACKFILL],
      });
    } else {
      // An older schema (tests build them): filled in here, as its release did.
      await backfillKeywords(tx, analyzer, progress, 'rowid');
    }
  });
}

/**
 * Indexes the messages in id order, a batch at a time, reporting after each (`total`: the messages
 * left when this run started). Given the database, it finishes the backfill recorded in
 * `engram_backfills`: each batch is a write transaction of its own (`BEGIN IMMEDIATE`), which
 * reads the last id done from the marker row, indexes the batch after it and moves the marker on,
 * deleting it with the last batch. So a backfill stopped half-way resumes after the last batch
 * committed, processes that open at once take turns, and none returns before the index is
 * complete. Given the upgrade's transaction (an older target), the batches run in it.
 */
async function backfillKeywords(
  db: Database | Transaction,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
  key: MessageKey,
): Promise<void> {
  const resumable = 'transaction' in db;
  let lastId = '';
  let total: number | undefined;
  const batch = async (tx: Executor): Promise<BackfillStep> => {
    if (resumable) {
      const { rows } = await tx.execute({
        sql: `SELECT last_id FROM ${backfills} WHERE name = ?`,
        args: [KEYWORD_BACKFILL],
      });
      // Finished by another process meanwhile.
      if (rows.length === 0) return { read: 0 };
      lastId = String(rows[0]?.last_id);
    }
    total ??= await messagesAfter(tx, lastId);
    const next = await indexBatch(tx, analyzer, lastId, key);
    lastId = next.lastId;
    if (resumable) {
      await tx.execute(
        next.read < KEYWORD_BACKFILL_BATCH
          ? { sql: `DELETE FROM ${backfills} WHERE name = ?`, args: [KEYWORD_BACKFILL] }
          : { sql: `UPDATE ${backfills} SET last_id = ? WHERE name = ?`, args: [lastId, KEYWORD_BACKFILL] },
      );
    }
    return { read: next.read, total };
  };
  await runBackfill(KEYWORD_BACKFILL, KEYWORD_BACKFILL_BATCH, progress, () =>
    resumable ? inTransaction(db, batch) : batch(db),
  );
}
