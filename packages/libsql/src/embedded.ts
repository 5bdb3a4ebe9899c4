import { createRequire } from 'node:module';
import type { InStatement, InValue, ResultSet, Row } from '@libsql/client';

/** The members of `libsql/promise`'s prepared statement this binding uses. */
interface NativeStatement {
  readonly reader: boolean;
  raw(toggle: boolean): NativeStatement;
  columns(): { name: string }[];
  run(args: unknown): { changes: number; lastInsertRowid: number | bigint };
  all(args: unknown): Promise<unknown[][]>;
}

/** The members of `libsql/promise`'s database connection this binding uses. */
interface NativeDatabase {
  readonly inTransaction: boolean;
  prepare(sql: string): Promise<NativeStatement>;
  close(): void;
}

const require = createRequire(import.meta.url);
/** The `libsql` package's promise API (CommonJS, typed here by the members used). */
const NativeDatabase = require('libsql/promise') as new (
  path: string,
  options: { timeout: number },
) => NativeDatabase;

/**
 * Prepared statements kept per connection, least recently used dropped first. The store's SQL
 * comes from a bounded set of shapes (one per statement kind and chunk length), so in practice
 * every statement is prepared once; metadata filters with many distinct key sets are what
 * could push older ones out.
 */
const STATEMENT_CACHE_SIZE = 256;

/** A statement kept prepared, with its result columns (for rows) when it returns rows. */
interface Prepared {
  statement: NativeStatement;
  columns: string[] | null;
}

/** An argument as the engine binds it, converted as `@libsql/client` converts it. */
function toSql(value: InValue): unknown {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('only finite numbers can be passed as arguments');
    return value;
  }
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Date) return value.valueOf();
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) {
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  if (value === undefined) throw new TypeError('undefined cannot be passed as argument to the database');
  return value;
}

/** A column value as `@libsql/client` returns it (blobs as `ArrayBuffer`). */
function fromSql(value: unknown): Row[number] {
  if (Buffer.isBuffer(value)) {
    return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
  }
  return value as Row[number];
}

/** A row readable by column name and by index, like `@libsql/client`'s rows. */
function toRow(values: unknown[], columns: string[]): Row {
  const row: Record<string, unknown> = {};
  Object.defineProperty(row, 'length', { value: values.length });
  for (let i = 0; i < values.length; i++) {
    const value = fromSql(values[i]);
    Object.defineProperty(row, i, { value });
    const column = columns[i]!;
    if (!Object.hasOwn(row, column)) row[column] = value;
  }
  return row as Row;
}

function resultSet(
  columns: string[],
  rows: Row[],
  rowsAffected: number,
  lastInsertRowid?: bigint,
): ResultSet {
  return {
    columns,
    columnTypes: columns.map(() => ''),
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({ columns, rows, rowsAffected, lastInsertRowid: lastInsertRowid?.toString() ?? null }),
  };
}

/** A write transaction on an `EmbeddedDatabase`, shaped like `@libsql/client`'s. */
export interface EmbeddedTransaction {
  execute(statement: InStatement): Promise<ResultSet>;
  batch(statements: InStatement[]): Promise<ResultSet[]>;
  commit(): Promise<void>;
  /** Rolls back what was not committed. */
  close(): void;
}

/**
 * One connection to an embedded database (`file:` path or `:memory:`) through the `libsql`
 * package, with the subset of `@libsql/client`'s `Client` the store uses (same statements,
 * argument conversion, rows and error codes) and one difference: statements stay prepared.
 *
 * `@libsql/client` 0.18 prepares every statement anew on `libsql`'s synchronous API, whose
 * prepared statements and row readers are never freed: about 3.5 KB of native memory per
 * statement run (and a new connection per transaction or batch). Statements prepared once
 * and run through `libsql`'s promise API keep the process's memory flat.
 */
export class EmbeddedDatabase {
  private readonly db: NativeDatabase;
  private readonly statements = new Map<string, Prepared>();

  /** Opens `path` (`:memory:` for an in-memory database) with a busy timeout in milliseconds. */
  constructor(path: string, busyTimeoutMs: number) {
    this.db = new NativeDatabase(path, { timeout: busyTimeoutMs });
  }

  /** Runs one statement: its rows, or the number of rows it changed. */
  async execute(statement: InStatement): Promise<ResultSet> {
    const { sql, args } = typeof statement === 'string' ? { sql: statement, args: [] } : statement;
    const prepared = await this.prepared(sql);
    const bound = Array.isArray(args) ? args.map(toSql) : namedArgs(args ?? {});
    if (prepared.columns) {
      const rows = await prepared.statement.all(bound);
      return resultSet(
        prepared.columns,
        rows.map((values) => toRow(values, prepared.columns!)),
        0,
      );
    }
    const info = prepared.statement.run(bound);
    return resultSet([], [], info.changes, BigInt(info.lastInsertRowid));
  }

  /** Runs the statements in one transaction (`BEGIN IMMEDIATE` for `'write'`), all or none. */
  async batch(
    statements: InStatement[],
    mode: 'write' | 'read' | 'deferred' = 'deferred',
  ): Promise<ResultSet[]> {
    const tx = await this.begin(mode === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN DEFERRED');
    try {
      const results = await tx.batch(statements);
      await tx.commit();
      return results;
    } finally {
      tx.close();
    }
  }

  /** Starts a write transaction (`BEGIN IMMEDIATE`) on this connection. */
  transaction(_mode: 'write'): Promise<EmbeddedTransaction> {
    return this.begin('BEGIN IMMEDIATE');
  }

  /** Closes the connection; its prepared statements go with it. */
  close(): void {
    this.statements.clear();
    this.db.close();
  }

  private async begin(sql: string): Promise<EmbeddedTransaction> {
    // Prepared before the transaction starts, so that `close` can roll back synchronously.
    const rollback = (await this.prepared('ROLLBACK')).statement;
    await this.execute(sql);
    let open = true;
    const tx: EmbeddedTransaction = {
      execute: (statement) => this.execute(statement),
      batch: async (statements) => {
        const results: ResultSet[] = [];
        for (const statement of statements) results.push(await this.execute(statement));
        return results;
      },
      commit: async () => {
        await this.execute('COMMIT');
        open = false;
      },
      close: () => {
        if (!open) return;
        open = false;
        try {
          if (this.db.inTransaction) rollback.run([]);
        } catch {
          // The connection is broken; the engine rolled back or will on close.
        }
      },
    };
    return tx;
  }

  private async prepared(sql: string): Promise<Prepared> {
    const cached = this.statements.get(sql);
    if (cached) {
      // Most recently used last, so the first key is the one to drop.
      this.statements.delete(sql);
      this.statements.set(sql, cached);
      return cached;
    }
    const statement = await this.db.prepare(sql);
    const columns = statement.reader
      ? statement
          .raw(true)
          .columns()
          .map((column) => column.name)
      : null;
    const prepared = { statement, columns };
    this.statements.set(sql, prepared);
    if (this.statements.size > STATEMENT_CACHE_SIZE) {
      this.statements.delete(this.statements.keys().next().value!);
    }
    return prepared;
  }
}

/** Named arguments (`:name`, `@name`, `$name`) as the engine binds them (by bare name). */
function namedArgs(args: Record<string, InValue>): Record<string, unknown> {
  const bound: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    bound[/^[:@$]/.test(name) ? name.slice(1) : name] = toSql(value);
  }
  return bound;
}
