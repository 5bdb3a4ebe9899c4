import { createRequire } from 'node:module';
import type { ResultSet, Row } from '@libsql/client';
import type { Statement } from './sql.ts';

/** What a statement returns: its rows (by column name and index), or how many rows it changed. */
export type Result = Pick<ResultSet, 'columns' | 'rows' | 'rowsAffected'>;

/** Anything that runs statements: a client or an open transaction (whose `batch` takes no mode). */
export interface Executor {
  execute(statement: Statement | string): Promise<Result>;
  batch(statements: (Statement | string)[], mode?: 'write' | 'read'): Promise<Result[]>;
}

/** A transaction: statements, then `commit`; `close` rolls back what was not committed. */
export interface Transaction extends Executor {
  commit(): Promise<void>;
  close(): void;
}

/** What the store runs statements on: an `@libsql/client` client or an `EmbeddedDatabase`. */
export interface Database extends Executor {
  /** `'write'`: `BEGIN IMMEDIATE` on embedded databases, which takes the write lock at once. */
  transaction(mode: 'write' | 'read'): Promise<Transaction>;
  close(): void;
}

/** Runs statements in order (in a transaction when `db` is one), for writes that return nothing. */
export async function exec(db: Executor, ...statements: (Statement | string)[]): Promise<void> {
  for (const statement of statements) await db.execute(statement);
}

/** Runs `fn` in a transaction of `db` and commits; rolls back when it throws. */
export async function inTransaction<T>(
  db: Pick<Database, 'transaction'>,
  fn: (tx: Transaction) => Promise<T>,
  mode: 'write' | 'read' = 'write',
): Promise<T> {
  const tx = await db.transaction(mode);
  try {
    const result = await fn(tx);
    await tx.commit();
    return result;
  } finally {
    try {
      tx.close();
    } catch {
      // The connection is already gone; there is nothing left to roll back.
    }
  }
}

/** The members of `libsql/promise`'s prepared statement and connection this binding uses. */
interface NativeStatement {
  readonly reader: boolean;
  raw(toggle: boolean): NativeStatement;
  columns(): { name: string }[];
  run(args: unknown): { changes: number };
  get(args: unknown): unknown[] | undefined;
  all(args: unknown): Promise<unknown[][]>;
}
interface NativeDatabase {
  readonly inTransaction: boolean;
  prepare(sql: string): Promise<NativeStatement>;
  close(): void;
}

/** The `libsql` package's promise API (CommonJS, typed here by the members used). */
const NativeDatabase = createRequire(import.meta.url)('libsql/promise') as new (
  path: string,
  options: { timeout: number },
) => NativeDatabase;

/**
 * Prepared statements kept per connection, least recently used dropped first. The store's SQL
 * has few shapes; metadata filters with many distinct key sets could push older ones out.
 */
const STATEMENT_CACHE_SIZE = 256;

/** A row readable by column name and by index, like `@libsql/client`'s rows (blobs as `ArrayBuffer`). */
function toRow(values: unknown[], columns: string[]): Row {
  const row: Record<string, unknown> = {};
  Object.defineProperty(row, 'length', { value: values.length });
  values.forEach((raw, i) => {
    const value = Buffer.isBuffer(raw) ? new Uint8Array(raw).buffer : raw;
    Object.defineProperty(row, i, { value });
    if (!Object.hasOwn(row, columns[i]!)) row[columns[i]!] = value;
  });
  return row as Row;
}

/**
 * One connection to an embedded database (`file:` path or `:memory:`) through the `libsql`
 * package, answering like `@libsql/client` (arguments, rows, error codes), statements kept prepared
 * (`@libsql/client` 0.18 prepares each anew, leaking about 3.5 KB a run). A `one` statement is read
 * by `get`, on this thread; `all` reads on libsql's worker thread (its synchronous twin leaks).
 */
export class EmbeddedDatabase implements Database {
  private readonly db: NativeDatabase;
  private readonly statements = new Map<string, { statement: NativeStatement; columns: string[] | null }>();

  /** Opens `path` (`:memory:` for an in-memory database) with a busy timeout in milliseconds. */
  constructor(path: string, busyTimeoutMs: number) {
    this.db = new NativeDatabase(path, { timeout: busyTimeoutMs });
  }

  async execute(statement: Statement | string): Promise<Result> {
    const { sql, args, one } = typeof statement === 'string' ? { sql: statement, args: [] } : statement;
    const { statement: prepared, columns } = await this.prepared(sql);
    // Booleans as `@libsql/client` binds them (the engine binds the rest alike).
    const bound = args.map((value) => (typeof value === 'boolean' ? Number(value) : value));
    if (!columns) return { columns: [], rows: [], rowsAffected: prepared.run(bound).changes };
    const values = one ? [prepared.get(bound)].filter((row) => row !== undefined) : await prepared.all(bound);
    return { columns, rows: values.map((row) => toRow(row, columns)), rowsAffected: 0 };
  }

  /** Runs the statements in one transaction (`BEGIN IMMEDIATE` for `'write'`), all or none. */
  batch(statements: (Statement | string)[], mode: 'write' | 'read' = 'read'): Promise<Result[]> {
    return inTransaction(this, (tx) => tx.batch(statements), mode);
  }

  async transaction(mode: 'write' | 'read'): Promise<Transaction> {
    // Prepared before the transaction starts, so that `close` can roll back synchronously.
    const rollback = (await this.prepared('ROLLBACK')).statement;
    await this.execute(mode === 'write' ? 'BEGIN IMMEDIATE' : 'BEGIN DEFERRED');
    let open = true;
    return {
      execute: (statement) => this.execute(statement),
      batch: async (statements) => {
        const results: Result[] = [];
        for (const statement of statements) results.push(await this.execute(statement));
        return results;
      },
      commit: async () => {
        await this.execute('COMMIT');
        open = false;
      },
      close: () => {
        if (open && this.db.inTransaction) rollback.run([]);
        open = false;
      },
    };
  }

  /** Closes the connection; its prepared statements go with it. */
  close(): void {
    this.statements.clear();
    this.db.close();
  }

  private async prepared(sql: string): Promise<{ statement: NativeStatement; columns: string[] | null }> {
    let prepared = this.statements.get(sql);
    if (!prepared) {
      const statement = await this.db.prepare(sql);
      const columns = statement.reader ? statement.raw(true).columns() : undefined;
      prepared = { statement, columns: columns?.map((column) => column.name) ?? null };
    }
    // Most recently used last, so the first key is the one to drop.
    this.statements.delete(sql);
    this.statements.set(sql, prepared);
    if (this.statements.size > STATEMENT_CACHE_SIZE)
      this.statements.delete(this.statements.keys().next().value!);
    return prepared;
  }
}
