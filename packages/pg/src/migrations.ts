import { type BackfillListener, defaultKeywordAnalyzer, type KeywordAnalyzer } from '@engram/core/driver';
import type { ClientBase } from 'pg';
import { backfillKeywords, keywordTable } from './keywords.ts';
import { type Names, quoteIdent } from './sql.ts';

/** One schema change: its statements, then (same transaction) data the SQL alone cannot make. */
interface Migration {
  description: string;
  statements: (n: Names) => string[];
  backfill?: (
    client: ClientBase,
    n: Names,
    analyzer: KeywordAnalyzer,
    progress: BackfillListener,
  ) => Promise<void>;
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
    backfill: backfillKeywords,
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
];

/** The version a fully migrated schema is at. */
export const LATEST_VERSION = MIGRATIONS.length;

/** The first version whose columns are all snake_case (the version table's included). */
const SNAKE_CASE_VERSION = 5;

/**
 * Brings the schema (created when missing) up to `target` in one transaction, under an advisory
 * lock keyed on its name, so processes may call it at once: the first does the work, the others
 * find nothing to do. Returns the version the schema is at afterwards (more when it is newer).
 */
export async function migrate(
  client: ClientBase,
  n: Names,
  target = LATEST_VERSION,
  analyzer: KeywordAnalyzer = defaultKeywordAnalyzer,
  progress: BackfillListener = () => {},
): Promise<number> {
  // The recorded version, or 0 when nothing was ever created.
  const [table] = (await client.query('SELECT to_regclass($1) AS found', [n.version])).rows;
  const [row] = table?.found
    ? (await client.query(`SELECT version FROM ${n.version} WHERE id = 1`)).rows
    : [];
  const found: number = row?.version ?? 0;
  if (found >= target) return found;
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`engram:${n.schemaName}`]);
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
    for (const migration of MIGRATIONS.slice(from, target)) {
      for (const statement of migration.statements(n)) await client.query(statement);
      await migration.backfill?.(client, n, analyzer, progress);
    }
    if (target > from) {
      const stamp = target >= SNAKE_CASE_VERSION ? 'updated_at' : '"updatedAt"';
      await client.query(
        `INSERT INTO ${n.version} (id, version) VALUES (1, $1)
          ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, ${stamp} = now()`,
        [target],
      );
    }
    await client.query('COMMIT');
    return Math.max(from, target);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
