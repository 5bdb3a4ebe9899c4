import { driverCode, retry } from '@engram/core/driver';
import type { OracleConnection, OracleExecuteOptions, OracleModule } from './oracledb.ts';
import { chunks, type Statement } from './sql.ts';

/** Options of every `execute`: rows as objects, CLOB and NCLOB read whole as strings, no auto-commit. */
export function executeOptions(oracledb: OracleModule): OracleExecuteOptions {
  const clobs = new Set<object>([oracledb.DB_TYPE_CLOB, oracledb.DB_TYPE_NCLOB]);
  return {
    outFormat: oracledb.OUT_FORMAT_OBJECT,
    autoCommit: false,
    fetchTypeHandler: (metadata) =>
      metadata.dbType !== undefined && clobs.has(metadata.dbType)
        ? { type: oracledb.DB_TYPE_VARCHAR }
        : undefined,
  };
}

/**
 * One pooled connection for one operation, the `tx` of a write: statements never auto-commit;
 * the driver commits or rolls back its `connection`.
 */
export class Session {
  constructor(
    readonly connection: OracleConnection,
    private readonly options: OracleExecuteOptions,
  ) {}

  async rows<T>(statement: Statement): Promise<T[]> {
    return ((await this.connection.execute(statement.sql, statement.binds, this.options)).rows ?? []) as T[];
  }

  /** The rows of one query per chunk of `ids` that fits an `IN` list, together. */
  async rowsByChunk<T>(ids: readonly string[], statement: (chunk: string[]) => Statement): Promise<T[]> {
    const rows: T[] = [];
    for (const chunk of chunks(ids)) rows.push(...(await this.rows<T>(statement(chunk))));
    return rows;
  }

  /** The `TOTAL` of a `COUNT(*)` query. */
  async count(statement: Statement): Promise<number> {
    const [row] = await this.rows<{ TOTAL: number }>(statement);
    return Number(row?.TOTAL ?? 0);
  }

  /** Runs a DML or DDL statement and returns how many rows it touched. */
  async run(statement: Statement): Promise<number> {
    return (await this.connection.execute(statement.sql, statement.binds, this.options)).rowsAffected ?? 0;
  }

  /**
   * Runs a `MERGE`, again (core's `retry`) while a concurrent session inserted the same key first
   * (ORA-00001: only the statement is rolled back). Returns how many rows it merged.
   */
  upsert(statement: Statement): Promise<number> {
    const retryable = (error: unknown) => driverCode(error) === 'ORA-00001';
    return retry(() => this.run(statement), { adapter: 'oracle', what: 'upsert', retryable });
  }
}
