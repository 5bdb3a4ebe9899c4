import {
  type BackfillListener,
  type BackfillStep,
  defaultKeywordAnalyzer,
  KEYWORD_BACKFILL,
  KEYWORD_BACKFILL_BATCH,
  type KeywordAnalyzer,
  NO_KEYWORD_INDEX,
  retry,
  runBackfill,
} from '@engram/core/driver';
import type { ClientBase } from 'pg';
import { isRetryable } from './errors.ts';
import { indexBatch, keywordStats, keywordTable, messagesAfter } from './keywords.ts';
import { type Names, quoteIdent } from './sql.ts';

/** One schema change: its statements, and the backfill it leaves for the rows stored before it. */
interface Migration {
  description: string;
  statements: (n: Names) => string[];
  /**
   * The index the statements create, empty, has to be filled in for the messages already stored:
   * recorded in `backfills` and done after the upgrade commits (`finishBackfill`). Before version
   * 10 (which made it resumable) it was done inside the upgrade's transaction.
   */
  backfill?: typeof KEYWORD_BACKFILL;
}

/**
 * Every schema change ever made, oldest first; a change's position (counting from 1) is its
 * version. Append only: a released migration is never edited, so a database at any version is
 * upgraded by running the ones after it.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    description: 'threads, messages and resources; messages indexed by (thread_id, createdAt, id)',
    statements: (n) => [
      `CREATE TABLE ${n.threads} (
        id text COLLATE "C" PRIMARY KEY,
        resource_id text COLLATE "C" NOT NULL,
        title text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        "createdAt" timestamptz(3) NOT NULL,
        "updatedAt" timestamptz(3) NOT NULL
      )`,
      `CREATE TABLE ${n.messages} (
        id text COLLATE "C" PRIMARY KEY,
        thread_id text COLLATE "C" NOT NULL REFERENCES ${n.threads} (id) ON DELETE CASCADE,
        resource_id text COLLATE "C" NOT NULL,
        role text NOT NULL,
        content jsonb NOT NULL,
        type text NOT NULL,
        "createdAt" timestamptz(3) NOT NULL
      )`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}messages_thread_idx`)}
        ON ${n.messages} (thread_id, "createdAt", id)`,
      `CREATE TABLE ${n.resources} (
        id text COLLATE "C" PRIMARY KEY,
        "workingMemory" text,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        "createdAt" timestamptz(3) NOT NULL,
        "updatedAt" timestamptz(3) NOT NULL
      )`,
    ],
  },
  {
    description: 'threads indexed for listing by resource, newest first',
    statements: (n) => [
      `CREATE INDEX ${quoteIdent(`${n.prefix}threads_resource_created_idx`)}
        ON ${n.threads} (resource_id, "createdAt", id)`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}threads_resource_updated_idx`)}
        ON ${n.threads} (resource_id, "updatedAt", id)`,
    ],
  },
  {
    description: 'messages counted per thread and resource, so totals need no count(*)',
    statements: (n) => [
      // Holds off message writers of an older version until the counts are in.
      `LOCK TABLE ${n.messages} IN SHARE MODE`,
      `CREATE TABLE ${n.counts} (
        thread_id text COLLATE "C" NOT NULL REFERENCES ${n.threads} (id) ON DELETE CASCADE,
        resource_id text COLLATE "C" NOT NULL,
        n integer NOT NULL,
        PRIMARY KEY (thread_id, resource_id)
      )`,
      `INSERT INTO ${n.counts} (thread_id, resource_id, n)
        SELECT thread_id, resource_id, count(*) FROM ${n.messages} GROUP BY thread_id, resource_id`,
    ],
  },
  {
    description: 'message vectors for semantic recall (real[] until pgvector takes the column)',
    statements: (n) => [
      `CREATE TABLE ${n.vectorSpace} (
        id smallint PRIMARY KEY CHECK (id = 1),
        embedder text NOT NULL,
        dimensions integer NOT NULL
      )`,
      `CREATE TABLE ${n.vectors} (
        message_id text COLLATE "C" NOT NULL REFERENCES ${n.messages} (id) ON DELETE CASCADE,
        space text NOT NULL,
        hash text NOT NULL,
        embedding real[] NOT NULL,
        PRIMARY KEY (message_id, space)
      )`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}messages_resource_idx`)} ON ${n.messages} (resource_id)`,
    ],
  },
  {
    description: 'every column in snake_case: "createdAt", "updatedAt" and "workingMemory" renamed',
    statements: (n) => [
      `ALTER TABLE ${n.threads} RENAME COLUMN "createdAt" TO created_at`,
      `ALTER TABLE ${n.threads} RENAME COLUMN "updatedAt" TO updated_at`,
      `ALTER TABLE ${n.messages} RENAME COLUMN "createdAt" TO created_at`,
      `ALTER TABLE ${n.resources} RENAME COLUMN "workingMemory" TO working_memory`,
      `ALTER TABLE ${n.resources} RENAME COLUMN "createdAt" TO created_at`,
      `ALTER TABLE ${n.resources} RENAME COLUMN "updatedAt" TO updated_at`,
      `ALTER TABLE ${n.version} RENAME COLUMN "updatedAt" TO updated_at`,
    ],
  },
  {
    description: 'observation logs for observational memory, one row per (key, generation)',
    statements: (n) => [
      // `body` holds the body as a JSON string literal: text holds no NUL character.
      `CREATE TABLE ${n.observations} (
        key text COLLATE "C" NOT NULL,
        generation bigint NOT NULL,
        resource_id text COLLATE "C" NOT NULL,
        thread_id text COLLATE "C",
        version bigint NOT NULL,
        body text NOT NULL,
        updated_at timestamptz(3) NOT NULL,
        PRIMARY KEY (key, generation)
      )`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}observations_thread_idx`)} ON ${n.observations} (thread_id)`,
    ],
  },
  {
    description:
      'keyword index: analyzed terms of each message with text, a GIN-indexed tsvector, backfilled',
    statements: keywordTable,
    // Filled in within this transaction until version 10; since then after it, resumable.
    backfill: KEYWORD_BACKFILL,
  },
  {
    description: 'store-level settings (the recorded memory configuration), one jsonb object per key',
    statements: (n) => [
      `CREATE TABLE ${n.settings} (
        key text COLLATE "C" PRIMARY KEY,
        value jsonb NOT NULL,
        updated_at timestamptz(3) NOT NULL
      )`,
    ],
  },
  {
    description: 'turn records: one row per turn, listed per thread newest first',
    statements: (n) => [
      // `body` holds the body as a JSON string literal (text holds no NUL); `created_at` epoch ms.
      `CREATE TABLE ${n.turns} (
        id text COLLATE "C" PRIMARY KEY,
        thread_id text COLLATE "C" NOT NULL,
        resource_id text COLLATE "C" NOT NULL,
        created_at bigint NOT NULL,
        body text NOT NULL
      )`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}turns_thread_created_id_idx`)} ON ${n.turns} (thread_id, created_at, id)`,
    ],
  },
  {
    description:
      'backfills an upgrade left to do, each with the last message id done, so a stopped one resumes',
    statements: (n) => [
      `CREATE TABLE ${n.backfills} (
        name text COLLATE "C" PRIMARY KEY,
        last_id text COLLATE "C" NOT NULL
      )`,
    ],
  },
  {
    description:
      "vectors carry their message's resource, thread and createdAt, kept by a trigger: a search reads no message row",
    statements: (n) => [
      `ALTER TABLE ${n.vectors} ADD COLUMN resource_id text COLLATE "C",
        ADD COLUMN thread_id text COLLATE "C", ADD COLUMN created_at timestamptz(3)`,
      `UPDATE ${n.vectors} v SET resource_id = m.resource_id, thread_id = m.thread_id, created_at = m.created_at
        FROM ${n.messages} m WHERE m.id = v.message_id`,
      `ALTER TABLE ${n.vectors} ALTER COLUMN resource_id SET NOT NULL, ALTER COLUMN thread_id SET NOT NULL,
        ALTER COLUMN created_at SET NOT NULL`,
      `CREATE INDEX ${quoteIdent(`${n.prefix}message_vectors_scope_idx`)} ON ${n.vectors} (space, resource_id, thread_id)`,
      // The vectors table by name (a trigger argument), in the messages table's schema. `OR
      // REPLACE`: dropping the tables of a prefix in a shared schema leaves the function behind.
      `CREATE OR REPLACE FUNCTION ${n.vectorsFollow}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          EXECUTE format('UPDATE %I.%I SET resource_id = $1, thread_id = $2, created_at = $3 WHERE message_id = $4',
            TG_TABLE_SCHEMA, TG_ARGV[0]) USING NEW.resource_id, NEW.thread_id, NEW.created_at, NEW.id;
          RETURN NULL;
        END $$`,
      `CREATE TRIGGER ${quoteIdent(`${n.prefix}message_vectors_follow`)}
        AFTER UPDATE OF resource_id, thread_id, created_at ON ${n.messages} FOR EACH ROW
        WHEN (OLD.resource_id IS DISTINCT FROM NEW.resource_id OR OLD.thread_id IS DISTINCT FROM NEW.thread_id
          OR OLD.created_at IS DISTINCT FROM NEW.created_at)
        EXECUTE FUNCTION ${n.vectorsFollow}('${n.prefix}message_vectors')`,
    ],
  },
  {
    description:
      "threads indexed by createdAt across resources: a walk of the store's threads reads on from the last",
    statements: (n) => [
      `CREATE INDEX ${quoteIdent(`${n.prefix}threads_created_idx`)} ON ${n.threads} (created_at, id)`,
    ],
  },
  {
    description:
      "the keyword index's pending list kept to 64 kB (PostgreSQL's least; 4 MB by default), and merged in now",
    // A search reads the whole pending list of the GIN index, and the planner passes over the
    // index while it is long. It is merged only by a vacuum or when it outgrows its limit: a
    // resource of 10,000 fresh messages had all its entries there, and a search took 17 ms
    // where it takes 4.5 ms merged. Taking each entry in at once (fastupdate off) costs every
    // save more; 64 kB is merged about every 500 messages.
    statements: (n) => {
      const index = `${n.schema}.${n.keywordsIndex}`;
      return [
        `ALTER INDEX ${index} SET (gin_pending_list_limit = 64)`,
        `SELECT gin_clean_pending_list('${index.replaceAll("'", "''")}'::regclass)`,
      ];
    },
  },
  {
    description:
      "the keyword index's document count and total length kept by triggers: a search reads them, not every index row",
    statements: (n) => [
      // Holds off keyword writers of an older version until the statistics are in.
      `LOCK TABLE ${n.keywords} IN SHARE MODE`,
      ...keywordStats(n),
    ],
  },
];

/** The version a fully migrated schema is at. */
export const LATEST_VERSION = MIGRATIONS.length;

/** The first version whose columns are all snake_case (the version table's included). */
const SNAKE_CASE_VERSION = 5;

/** The first version with the `backfills` table: backfills run after the upgrade, resumable. */
const BACKFILLS_VERSION = 10;

/** The advisory lock upgrades and backfills of the schema take, keyed on its name. */
const lockSchema = (client: ClientBase, n: Names) =>
  client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`engram:${n.schemaName}`]);

/**
 * Brings the schema (created when missing) up to `target` in one transaction, under an advisory
 * lock keyed on its name, so processes may call it at once: the first does the work, the others
 * find nothing to do. Then finishes a backfill left pending, by this upgrade or one stopped
 * before (one query when none is), or, with the keyword index off, records one from the start. Returns the version the schema is at afterwards (more when
 * it is newer).
 */
export async function migrate(
  client: ClientBase,
  n: Names,
  target = LATEST_VERSION,
  analyzer: KeywordAnalyzer = defaultKeywordAnalyzer,
  progress: BackfillListener = () => {},
): Promise<number> {
  const version = await upgrade(client, n, target, analyzer, progress);
  if (version < BACKFILLS_VERSION || version > LATEST_VERSION) return version;
  if (analyzer.id === NO_KEYWORD_INDEX.id) {
    // The keyword index off (`keywords: false`): saves index nothing, so the next open with it on
    // indexes every message again, from the start, before it serves.
    await client.query(
      `INSERT INTO ${n.backfills} (name, last_id) VALUES ($1, '') ON CONFLICT (name) DO UPDATE SET last_id = ''`,
      [KEYWORD_BACKFILL],
    );
    return version;
  }
  const pending = await client.query(`SELECT 1 FROM ${n.backfills} WHERE name = $1`, [KEYWORD_BACKFILL]);
  if (pending.rowCount !== 0) await backfillKeywords(client, n, analyzer, progress, true);
  return version;
}

/** The schema transaction of `migrate`; the version the schema is at afterwards. */
async function upgrade(
  client: ClientBase,
  n: Names,
  target: number,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
): Promise<number> {
  // The recorded version, or 0 when nothing was ever created.
  const [table] = (await client.query('SELECT to_regclass($1) AS found', [n.version])).rows;
  const [row] = table?.found
    ? (await client.query(`SELECT version FROM ${n.version} WHERE id = 1`)).rows
    : [];
  const found: number = row?.version ?? 0;
  if (found >= target) return found;
  return inTransaction(client, async () => {
    await lockSchema(client, n);
    const schema = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [n.schemaName]);
    if (schema.rowCount === 0) await client.query(`CREATE SCHEMA ${n.schema}`);
    // Created as it was before any migration; migration 5 renames its "updatedAt".
    await client.query(`CREATE TABLE IF NOT EXISTS ${n.version} (
      id smallint PRIMARY KEY CHECK (id = 1),
      version integer NOT NULL,
      "updatedAt" timestamptz NOT NULL DEFAULT now()
    )`);
    const row = await client.query<{ version: number }>(
      `SELECT version FROM ${n.version} WHERE id = 1 FOR UPDATE`,
    );
    const from = row.rows[0]?.version ?? 0;
    const applied = MIGRATIONS.slice(from, target);
    for (const migration of applied) {
      for (const statement of migration.statements(n)) await client.query(statement);
    }
    if (applied.some((migration) => migration.backfill)) {
      if (target >= BACKFILLS_VERSION) {
        await client.query(`INSERT INTO ${n.backfills} (name, last_id) VALUES ($1, '')`, [KEYWORD_BACKFILL]);
      } else {
        // An older schema (tests build them): filled in here, as its release did.
        await backfillKeywords(client, n, analyzer, progress, false);
      }
    }
    if (target > from) {
      const stamp = target >= SNAKE_CASE_VERSION ? 'updated_at' : '"updatedAt"';
      await client.query(
        `INSERT INTO ${n.version} (id, version) VALUES (1, $1)
          ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, ${stamp} = now()`,
        [target],
      );
    }
    return Math.max(from, target);
  });
}

/**
 * Indexes the messages in id order, a batch at a time, reporting after each (`total`: the messages
 * left when this run started). `resumable` (the backfill recorded in `backfills`): each batch is a
 * transaction of its own under the schema's advisory lock, which reads the last id done from the
 * marker row, indexes the batch after it and moves the marker on, deleting it with the last batch.
 * So a backfill stopped half-way resumes after the last batch committed, processes that open at
 * once take turns, and none returns before the index is complete. Otherwise the batches run in
 * the caller's transaction.
 */
async function backfillKeywords(
  client: ClientBase,
  n: Names,
  analyzer: KeywordAnalyzer,
  progress: BackfillListener,
  resumable: boolean,
): Promise<void> {
  let lastId = '';
  let total: number | undefined;
  const batch = async (): Promise<BackfillStep> => {
    if (resumable) {
      await lockSchema(client, n);
      const marker = `SELECT last_id FROM ${n.backfills} WHERE name = $1`;
      const [row] = (await client.query<{ last_id: string }>(marker, [KEYWORD_BACKFILL])).rows;
      // Finished by another process meanwhile.
      if (!row) return { read: 0 };
      lastId = row.last_id;
    }
    total ??= await messagesAfter(client, n, lastId);
    const next = await indexBatch(client, n, analyzer, lastId);
    lastId = next.lastId;
    if (resumable) {
      await client.query(
        next.read < KEYWORD_BACKFILL_BATCH
          ? `DELETE FROM ${n.backfills} WHERE name = $1`
          : `UPDATE ${n.backfills} SET last_id = $2 WHERE name = $1`,
        next.read < KEYWORD_BACKFILL_BATCH ? [KEYWORD_BACKFILL] : [KEYWORD_BACKFILL, lastId],
      );
    }
    return { read: next.read, total };
  };
  const options = { adapter: 'pg', what: 'keyword backfill', retryable: isRetryable };
  await runBackfill(KEYWORD_BACKFILL, KEYWORD_BACKFILL_BATCH, progress, () =>
    resumable ? retry(() => inTransaction(client, batch), options) : batch(),
  );
}

/** `fn` in a transaction of `client`, committed, or rolled back when it throws. */
async function inTransaction<T>(client: ClientBase, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
