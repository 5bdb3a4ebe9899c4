import {
  type BackfillListener,
  defaultKeywordAnalyzer,
  driverCode,
  KEYWORD_BACKFILL,
  type KeywordAnalyzer,
  MemoryError,
  NO_KEYWORD_INDEX,
} from '@engram/core/driver';
import { backfillKeywords, type KeywordDialect } from './keywords.ts';
import { toTimestampText } from './mapping.ts';
import type { OracleDbType } from './oracledb.ts';
import type { Session } from './session.ts';
import { type JsonStorage, type Statement, type TableNames, timestampBind } from './sql.ts';

/** One DDL statement and the Oracle errors that mean "already done" (so a rerun is harmless). */
export interface MigrationStep {
  sql: string;
  alreadyDone: readonly string[];
}

/** One schema change. Its position in `MIGRATIONS` (counting from 1) is its version. */
export interface Migration {
  description: string;
  /** The oldest major server version it runs on; skipped (not recorded) on an older one. */
  minMajorVersion?: number;
  steps: (names: TableNames, json: JsonStorage) => MigrationStep[];
  /**
   * Fills in data for the rows already stored, after the steps and before the version is
   * recorded, committing as it goes: stopped, it goes on at the next `migrate`.
   */
  backfill?: (session: Session, context: BackfillContext) => Promise<void>;
}

/** What a backfill needs besides the session. */
export interface BackfillContext {
  dialect: KeywordDialect;
  /** The store's keyword analyzer. */
  analyzer: KeywordAnalyzer;
  /** `onBackfillProgress`, checked. */
  progress: BackfillListener;
}

/** Oracle has no `CREATE … IF NOT EXISTS` before 23ai: ORA-00955 (name already used) means done. */
const table = (sql: string): MigrationStep => ({ sql, alreadyDone: ['ORA-00955'] });
/** An index is also done when its columns are indexed already (ORA-01408). */
const index = (sql: string): MigrationStep => ({ sql, alreadyDone: ['ORA-00955', 'ORA-01408'] });

/** The DDL of a JSON column: the `JSON` type (21c+) or a `CLOB` checked with `IS JSON`. */
export function jsonColumn(column: string, json: JsonStorage, constraint: string): string {
  return json === 'json'
    ? `${column} JSON NOT NULL`
    : `${column} CLOB NOT NULL CONSTRAINT ${constraint} CHECK (${column} IS JSON)`;
}

/** The DDL type of a metadata column (see `jsonColumn`). */
export function metadataColumn(json: JsonStorage, constraint: string): string {
  return jsonColumn('metadata', json, constraint);
}

/**
 * Every schema change ever made, oldest first. Append only: a released migration is never edited
 * (later ones add columns with `ALTER TABLE … ADD`, ORA-01430 when the column exists).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    description:
      'threads, messages and resources; messages indexed by (thread_id, created_at, id), threads by resource',
    steps: (n, json) => [
      table(`CREATE TABLE ${n.threads} (
  id VARCHAR2(255 CHAR) NOT NULL,
  resource_id VARCHAR2(255 CHAR) NOT NULL,
  title CLOB,
  ${metadataColumn(json, `${n.prefix}threads_metadata_json`)},
  created_at TIMESTAMP(3) NOT NULL,
  updated_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}threads_pk PRIMARY KEY (id)
)`),
      index(`CREATE INDEX ${n.prefix}threads_resource_idx ON ${n.threads} (resource_id, created_at, id)`),
      index(`CREATE INDEX ${n.prefix}threads_updated_idx ON ${n.threads} (resource_id, updated_at, id)`),
      table(`CREATE TABLE ${n.messages} (
  id VARCHAR2(255 CHAR) NOT NULL,
  thread_id VARCHAR2(255 CHAR) NOT NULL,
  resource_id VARCHAR2(255 CHAR) NOT NULL,
  message_role VARCHAR2(16 CHAR) NOT NULL,
  message_type VARCHAR2(255 CHAR),
  content CLOB NOT NULL,
  created_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}messages_pk PRIMARY KEY (id),
  CONSTRAINT ${n.prefix}messages_thread_fk FOREIGN KEY (thread_id) REFERENCES ${n.threads} (id) ON DELETE CASCADE
)`),
      index(`CREATE INDEX ${n.prefix}messages_thread_idx ON ${n.messages} (thread_id, created_at, id)`),
      table(`CREATE TABLE ${n.resources} (
  id VARCHAR2(255 CHAR) NOT NULL,
  working_memory CLOB,
  working_memory_empty NUMBER(1) DEFAULT 0 NOT NULL,
  ${metadataColumn(json, `${n.prefix}resources_metadata_json`)},
  created_at TIMESTAMP(3) NOT NULL,
  updated_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}resources_pk PRIMARY KEY (id)
)`),
    ],
  },
  {
    description:
      'semantic recall (23ai): message vectors as VECTOR(*, FLOAT32) keyed by (message_id, space), cascading from messages; the recorded space; messages indexed by (resource_id, created_at, id)',
    minMajorVersion: 23,
    steps: (n) => [
      table(`CREATE TABLE ${n.vectorSpace} (
  id NUMBER(1) NOT NULL CONSTRAINT ${n.prefix}vector_space_one CHECK (id = 1),
  embedder VARCHAR2(512 CHAR) NOT NULL,
  dimensions NUMBER(5) NOT NULL,
  CONSTRAINT ${n.prefix}vector_space_pk PRIMARY KEY (id)
)`),
      // The dimension is the recorded space's, checked by core before every write: one column
      // type serves whatever embedder the store is first used with.
      table(`CREATE TABLE ${n.vectors} (
  message_id VARCHAR2(255 CHAR) NOT NULL,
  space VARCHAR2(512 CHAR) NOT NULL,
  hash VARCHAR2(1000 CHAR) NOT NULL,
  embedding VECTOR(*, FLOAT32) NOT NULL,
  CONSTRAINT ${n.prefix}message_vectors_pk PRIMARY KEY (message_id, space),
  CONSTRAINT ${n.prefix}message_vectors_fk FOREIGN KEY (message_id) REFERENCES ${n.messages} (id) ON DELETE CASCADE
)`),
      index(`CREATE INDEX ${n.prefix}messages_resource_idx ON ${n.messages} (resource_id, created_at, id)`),
    ],
  },
  {
    description:
      'observation logs for observational memory: one row per (log_key, generation), the body a JSON string literal in a CLOB; indexed by thread_id',
    steps: (n) => [
      table(`CREATE TABLE ${n.observations} (
  log_key VARCHAR2(300 CHAR) NOT NULL,
  generation NUMBER(16) NOT NULL,
  resource_id VARCHAR2(255 CHAR) NOT NULL,
  thread_id VARCHAR2(255 CHAR),
  version NUMBER(16) NOT NULL,
  body CLOB NOT NULL,
  updated_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}observations_pk PRIMARY KEY (log_key, generation)
)`),
      index(`CREATE INDEX ${n.prefix}observations_thread_idx ON ${n.observations} (thread_id)`),
    ],
  },
  {
    description:
      'store-level settings (the recorded memory configuration): one row per key, the value stored like metadata (JSON or a CLOB checked IS JSON)',
    steps: (n, json) => [
      table(`CREATE TABLE ${n.settings} (
  setting_key VARCHAR2(512 CHAR) NOT NULL,
  ${jsonColumn('setting_value', json, `${n.prefix}settings_json`)},
  updated_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}settings_pk PRIMARY KEY (setting_key)
)`),
    ],
  },
  {
    description:
      'turn records: one row per turn, the body a JSON string literal in a CLOB, created_at epoch ms; indexed by (thread_id, created_at, id)',
    steps: (n) => [
      table(`CREATE TABLE ${n.turns} (
  id VARCHAR2(255 CHAR) NOT NULL,
  thread_id VARCHAR2(255 CHAR) NOT NULL,
  resource_id VARCHAR2(255 CHAR) NOT NULL,
  created_at NUMBER(16) NOT NULL,
  body CLOB NOT NULL,
  CONSTRAINT ${n.prefix}turns_pk PRIMARY KEY (id)
)`),
      index(`CREATE INDEX ${n.prefix}turns_thread_idx ON ${n.turns} (thread_id, created_at, id)`),
    ],
  },
  {
    description:
      'keyword index: postings (term, message_id, tf) and each message term count, cascading from messages; backfilled',
    steps: (n) => [
      table(`CREATE TABLE ${n.keywords} (
  term VARCHAR2(255 CHAR) NOT NULL,
  message_id VARCHAR2(255 CHAR) NOT NULL,
  tf NUMBER(10) NOT NULL,
  CONSTRAINT ${n.prefix}message_terms_pk PRIMARY KEY (term, message_id),
  CONSTRAINT ${n.prefix}message_terms_fk FOREIGN KEY (message_id) REFERENCES ${n.messages} (id) ON DELETE CASCADE
)`),
      // The foreign key's column, indexed: a cascading delete then locks and scans no more.
      index(`CREATE INDEX ${n.prefix}message_terms_message_idx ON ${n.keywords} (message_id)`),
      table(`CREATE TABLE ${n.keywordCounts} (
  message_id VARCHAR2(255 CHAR) NOT NULL,
  term_count NUMBER(10) NOT NULL,
  CONSTRAINT ${n.prefix}message_term_counts_pk PRIMARY KEY (message_id),
  CONSTRAINT ${n.prefix}message_term_counts_fk FOREIGN KEY (message_id) REFERENCES ${n.messages} (id) ON DELETE CASCADE
)`),
    ],
    backfill: (session, { dialect, analyzer, progress }) =>
      backfillKeywords(session, dialect, analyzer, progress),
  },
  {
    description:
      "threads indexed by created_at across resources: a walk of the store's threads reads on from the last",
    steps: (n) => [index(`CREATE INDEX ${n.prefix}threads_created_idx ON ${n.threads} (created_at, id)`)],
  },
  {
    description:
      'backfills to run at the next open, by name: the keyword index after a store opened with keywords: false',
    steps: (n) => [
      table(`CREATE TABLE ${n.backfills} (
  name VARCHAR2(64 CHAR) NOT NULL,
  CONSTRAINT ${n.prefix}backfills_pk PRIMARY KEY (name)
)`),
    ],
  },
];

/** The major version of the connected server (`23` for 23.4), 0 when the driver did not say. */
export function serverMajorVersion(session: Session): number {
  return Math.floor((session.connection.oracleServerVersion ?? 0) / 100_000_000);
}

/** The version a fully migrated schema is at. */
export const LATEST_VERSION = MIGRATIONS.length;

/** The table that records applied versions. */
export function createMigrationsTable(n: TableNames): MigrationStep {
  return table(`CREATE TABLE ${n.migrations} (
  version NUMBER(10) NOT NULL,
  description VARCHAR2(400 CHAR) NOT NULL,
  applied_at TIMESTAMP(3) NOT NULL,
  CONSTRAINT ${n.prefix}migrations_pk PRIMARY KEY (version)
)`);
}

export function selectAppliedVersions(n: TableNames): Statement {
  return { sql: `SELECT version FROM ${n.migrations} ORDER BY version`, binds: {} };
}

/** `INSERT` recording one version (ORA-00001 when a concurrent `init` recorded it first). */
export function insertAppliedVersion(
  n: TableNames,
  version: number,
  description: string,
  at: Date,
): Statement {
  return {
    sql: `INSERT INTO ${n.migrations} (version, description, applied_at) VALUES (:version, :description, ${timestampBind('applied_at')})`,
    binds: { version, description, applied_at: toTimestampText(at) },
  };
}

/** The data type of the threads' metadata column as the data dictionary reports it. */
export function selectMetadataType(n: TableNames): Statement {
  return {
    sql: `SELECT data_type FROM user_tab_columns WHERE table_name = :table_name AND column_name = 'METADATA'`,
    binds: { table_name: n.threads.toUpperCase() },
  };
}

/** Makes DDL wait up to 60 s for a concurrent session's DDL lock instead of failing with ORA-00054. */
export const DDL_LOCK_TIMEOUT: Statement = { sql: 'ALTER SESSION SET DDL_LOCK_TIMEOUT = 60', binds: {} };

/** Runs one step, treating its "already done" errors as success. */
export async function runStep(session: Session, step: MigrationStep): Promise<void> {
  await session.run({ sql: step.sql, binds: {} }).catch((error: unknown) => {
    if (!step.alreadyDone.includes(driverCode(error) ?? '')) throw error;
  });
}

/**
 * Brings the schema to `LATEST_VERSION`. Oracle commits each DDL statement, so instead of a
 * rollback every step is idempotent, and processes may migrate at once (`DDL_LOCK_TIMEOUT` waits
 * for a concurrent step); a version is recorded once all its steps and its backfill succeeded
 * (a backfill commits batch by batch and resumes with what is left). Returns the
 * storage the metadata columns actually have (an existing schema keeps its own).
 */
export async function migrate(
  session: Session,
  n: TableNames,
  preferred: JsonStorage,
  clobType: OracleDbType,
  keywords: { analyzer: KeywordAnalyzer; progress: BackfillListener } = {
    analyzer: defaultKeywordAnalyzer,
    progress: () => {},
  },
): Promise<JsonStorage> {
  await session.run(DDL_LOCK_TIMEOUT);
  await runStep(session, createMigrationsTable(n));
  const rows = await session.rows<{ VERSION: number }>(selectAppliedVersions(n));
  const applied = new Set(rows.map((row) => Number(row.VERSION)));
  const newest = Math.max(0, ...applied);
  if (newest > LATEST_VERSION) {
    throw new MemoryError(
      'MIGRATION',
      `oracle: the schema is at version ${newest}, newer than this package knows (${LATEST_VERSION}); upgrade @engram/oracle`,
      { adapter: 'oracle' },
    );
  }
  const major = serverMajorVersion(session);
  for (const [i, migration] of MIGRATIONS.entries()) {
    const version = i + 1;
    if (applied.has(version) || major < (migration.minMajorVersion ?? 0)) continue;
    for (const step of migration.steps(n, preferred)) await runStep(session, step);
    await migration.backfill?.(session, { dialect: { names: n, clobType }, ...keywords });
    // ORA-00001: a concurrent `init` recorded it first.
    await session.run(insertAppliedVersion(n, version, migration.description, new Date())).then(
      () => session.connection.commit(),
      (error: unknown) => {
        if (driverCode(error) !== 'ORA-00001') throw error;
        return session.connection.rollback();
      },
    );
  }
  await keywordBackfill(session, { dialect: { names: n, clobType }, ...keywords });
  const [type] = await session.rows<{ DATA_TYPE: string }>(selectMetadataType(n));
  return type?.DATA_TYPE === 'JSON' ? 'json' : 'clob';
}

/**
 * With the keyword index off (`keywords: false`, saves index nothing) records the keyword backfill
 * in `backfills`; with it on, runs a backfill recorded there (every message without index rows)
 * and then removes the record, so the index is whole again before the store serves.
 */
async function keywordBackfill(session: Session, context: BackfillContext): Promise<void> {
  const { names: n } = context.dialect;
  const name = { name: KEYWORD_BACKFILL };
  if (context.analyzer.id === NO_KEYWORD_INDEX.id) {
    // ORA-00001: recorded already.
    await session
      .run({ sql: `INSERT INTO ${n.backfills} (name) VALUES (:name)`, binds: name })
      .catch((error) => {
        if (driverCode(error) !== 'ORA-00001') throw error;
      });
    await session.connection.commit();
    return;
  }
  const pending = await session.rows({
    sql: `SELECT name FROM ${n.backfills} WHERE name = :name`,
    binds: name,
  });
  if (pending.length === 0) return;
  await backfillKeywords(session, context.dialect, context.analyzer, context.progress);
  await session.run({ sql: `DELETE FROM ${n.backfills} WHERE name = :name`, binds: name });
  await session.connection.commit();
}
