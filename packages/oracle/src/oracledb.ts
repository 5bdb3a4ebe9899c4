import { createRequire } from 'node:module';
import type { OracleConnectionConfig } from './url.ts';

/** The part of `oracledb` (6+, thin mode) the adapter uses, typed structurally: any pool fits. */

/** A database type constant such as `oracledb.DB_TYPE_CLOB` (opaque to this adapter). */
export type OracleDbType = object;

/** A bind value: a plain JS value, or one with an explicit database type (a CLOB, a 23ai vector). */
export type OracleBindValue =
  | string
  | number
  | null
  | { val: string | Float32Array | null; type: OracleDbType };

/** Named binds: `{ thread_id: 'x' }` for `:thread_id`. */
export type OracleBinds = Record<string, OracleBindValue>;

/** The per-statement options this adapter passes to `execute`. */
export interface OracleExecuteOptions {
  /** `oracledb.OUT_FORMAT_OBJECT`: rows as objects keyed by upper-case column name. */
  outFormat?: number;
  autoCommit?: boolean;
  /** Chooses the JS type of each column (given its name and `dbType`); used to fetch CLOBs as strings. */
  fetchTypeHandler?: (column: { name: string; dbType?: OracleDbType }) => { type: OracleDbType } | undefined;
}

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

export interface OracleModule {
  /** Takes the credentials and connect string, and any other pool attribute. */
  createPool(attributes: OracleConnectionConfig & Record<string, unknown>): Promise<OraclePool>;
  readonly OUT_FORMAT_OBJECT: number;
  readonly DB_TYPE_CLOB: OracleDbType;
  readonly DB_TYPE_NCLOB: OracleDbType;
  readonly DB_TYPE_VARCHAR: OracleDbType;
  /** 23ai vectors (node-oracledb 6.5+). */
  readonly DB_TYPE_VECTOR: OracleDbType;
}

let oracledb: OracleModule | undefined;

/** Loads `oracledb` once. Thin mode is its default: no Oracle Client libraries are needed. */
export function loadOracledb(): OracleModule {
  oracledb ??= createRequire(import.meta.url)('oracledb') as OracleModule;
  return oracledb;
}
