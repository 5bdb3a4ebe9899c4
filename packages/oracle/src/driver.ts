import { createRequire } from 'node:module';

/**
 * The part of the `oracledb` driver (node-oracledb 6+, thin mode) this adapter uses, typed
 * structurally so an injected pool from any caller satisfies it without extra type packages.
 */

/** A database type constant such as `oracledb.DB_TYPE_CLOB` (opaque to this adapter). */
export type OracleDbType = object;

/** A bind value: a plain JS value, or one with an explicit database type. */
export type OracleBindValue =
  | string
  | number
  | null
  | { val: string | null; type: OracleDbType }
  /** A vector (`oracledb.DB_TYPE_VECTOR`, 23ai). */
  | { val: Float32Array; type: OracleDbType };

/** Named binds: `{ thread_id: 'x' }` for `:thread_id`. */
export type OracleBinds = Record<string, OracleBindValue>;

/** Column description handed to a `fetchTypeHandler`. */
export interface OracleColumnMetadata {
  name: string;
  dbType?: OracleDbType;
}

/** The per-statement options this adapter passes to `execute`. */
export interface OracleExecuteOptions {
  /** `oracledb.OUT_FORMAT_OBJECT`: rows as objects keyed by upper-case column name. */
  outFormat?: number;
  autoCommit?: boolean;
  /** Chooses the JS type of each column; used to fetch CLOBs as strings. */
  fetchTypeHandler?: (metadata: OracleColumnMetadata) => { type: OracleDbType } | undefined;
}

/** What `execute` resolves to. */
export interface OracleResult {
  rows?: unknown[];
  rowsAffected?: number;
}

/** One session, taken from the pool for one operation. */
export interface OracleConnection {
  /** The server version as a number, e.g. `2304000000` for 23.4 (thin mode fills it at connect). */
  readonly oracleServerVersion?: number;
  execute(sql: string, binds: OracleBinds, options: OracleExecuteOptions): Promise<OracleResult>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): Promise<void>;
}

/** A connection pool (`oracledb.createPool()`), or anything that hands out connections. */
export interface OraclePool {
  getConnection(): Promise<OracleConnection>;
  /** Closes the pool; `drainTime` 0 closes it at once. */
  close(drainTime?: number): Promise<void>;
}

/** Attributes passed to `oracledb.createPool`. */
export interface OraclePoolAttributes {
  user: string;
  password: string;
  connectString: string;
  [key: string]: unknown;
}

/** The driver module's members this adapter reads. */
export interface OracleDriver {
  createPool(attributes: OraclePoolAttributes): Promise<OraclePool>;
  readonly OUT_FORMAT_OBJECT: number;
  readonly DB_TYPE_CLOB: OracleDbType;
  readonly DB_TYPE_NCLOB: OracleDbType;
  readonly DB_TYPE_VARCHAR: OracleDbType;
  /** 23ai vectors (node-oracledb 6.5+). */
  readonly DB_TYPE_VECTOR: OracleDbType;
}

let driver: OracleDriver | undefined;

/** Loads `oracledb` once. Thin mode is its default: no Oracle Client libraries are needed. */
export function loadDriver(): OracleDriver {
  driver ??= createRequire(import.meta.url)('oracledb') as OracleDriver;
  return driver;
}
