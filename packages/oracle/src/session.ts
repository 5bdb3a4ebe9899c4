import type { OracleColumnMetadata, OracleConnection, OracleDriver, OracleExecuteOptions } from './driver.ts';
import { errorCode } from './errors.ts';
import type { Statement } from './sql.ts';

/**
 * The options of every `execute`: rows as objects keyed by upper-case column name, CLOB and
 * NCLOB columns fetched as strings (the driver reads the whole LOB), and no auto-commit.
 */
export function executeOptions(driver: OracleDriver): OracleExecuteOptions {
  const clobs = new Set<object>([driver.DB_TYPE_CLOB, driver.DB_TYPE_NCLOB]);
  return {
    outFormat: driver.OUT_FORMAT_OBJECT,
    autoCommit: false,
    fetchTypeHandler: (metadata: OracleColumnMetadata) =>
      metadata.dbType !== undefined && clobs.has(metadata.dbType)
        ? { type: driver.DB_TYPE_VARCHAR }
        : undefined,
  };
}

/**
 * One pooled connection for one operation. Queries return rows as objects keyed by upper-case
 * column name, with CLOB and NCLOB columns fetched as strings (`fetchTypeHandler`), and never
 * auto-commit: the caller commits or rolls back.
 */
export class Session {
  private readonly options: OracleExecuteOptions;

  constructor(
    readonly connection: OracleConnection,
    driver: OracleDriver,
  ) {
    const clobs = new Set<object>([driver.DB_TYPE_CLOB, driver.DB_TYPE_NCLOB]);
    this.options = {
      outFormat: driver.OUT_FORMAT_OBJECT,
      autoCommit: false,
      fetchTypeHandler: (metadata: OracleColumnMetadata) =>
        metadata.dbType !== undefined && clobs.has(metadata.dbType)
          ? { type: driver.DB_TYPE_VARCHAR }
          : undefined,
    };
  }

  /** Runs a query and returns its rows. */
  async rows<T>(statement: Statement): Promise<T[]> {
    const result = await this.connection.execute(statement.sql, statement.binds, this.options);
    return (result.rows ?? []) as T[];
  }

  /** Runs a DML or DDL statement and returns how many rows it touched. */
  async run(statement: Statement): Promise<number> {
    const result = await this.connection.execute(statement.sql, statement.binds, this.options);
    return result.rowsAffected ?? 0;
  }

  /**
   * Runs an upsert (`MERGE`) and repeats it when a concurrent session inserted the same key
   * first (ORA-00001): the failed statement alone is rolled back, and the repeat finds the row.
   * Returns how many rows it merged (0 when a conditional update left the row alone).
   */
  async upsert(statement: Statement, attempts = 3): Promise<number> {
    for (let n = 1; ; n++) {
      try {
        return await this.run(statement);
      } catch (error) {
        if (errorCode(error) !== 'ORA-00001' || n >= attempts) throw error;
      }
    }
  }

  commit(): Promise<void> {
    return this.connection.commit();
  }

  /** Rolls back, ignoring a failure (the connection may already be gone). */
  async rollbackQuietly(): Promise<void> {
    try {
      await this.connection.rollback();
    } catch {
      // the original error is the one worth reporting
    }
  }

  /** Returns the connection to its pool, ignoring a failure. */
  async release(): Promise<void> {
    try {
      await this.connection.close();
    } catch {
      // a dropped connection cannot be released; the pool discards it
    }
  }
}
