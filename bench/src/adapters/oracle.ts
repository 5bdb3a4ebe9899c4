import { createRequire } from 'node:module';
import type { JsonObject, Message } from '@engram/core';
import { type OracleBinds, type OracleConnection, OracleStore, parseOracleUrl } from '@engram/oracle';
import { deepMerge } from '../deep-merge.ts';
import { runScoped, serviceUrl } from '../env.ts';
import type { BenchTarget, RawBaseline } from '../target.ts';

/** The run's table prefix: `ENGRAM_BENCH_ORACLE_PREFIX`, or a fresh one whose tables are dropped at the end. */
const given = process.env.ENGRAM_BENCH_ORACLE_PREFIX;
const prefix = () => runScoped('ENGRAM_BENCH_ORACLE_PREFIX', () => `bench${process.pid}_`);
const table = (name: string) => `${prefix()}${name}`;

/** The part of node-oracledb the raw side uses (it ships no types; the adapter types it structurally too). */
interface RawConnection extends OracleConnection {
  executeMany(sql: string, binds: OracleBinds[], options: { autoCommit: boolean }): Promise<unknown>;
}
interface RawPool {
  getConnection(): Promise<RawConnection>;
  close(drainTime?: number): Promise<void>;
}
interface RawDriver {
  createPool(attributes: object): Promise<RawPool>;
  readonly OUT_FORMAT_OBJECT: number;
  readonly DB_TYPE_CLOB: object;
  readonly DB_TYPE_VARCHAR: object;
}

const loadDriver = () => createRequire(import.meta.url)('oracledb') as RawDriver;

async function openPool(url: string, poolMax: number): Promise<RawPool> {
  return loadDriver().createPool({ ...parseOracleUrl(url), poolMin: 0, poolMax });
}

/** Runs `fn` on one pooled connection, rolled back when it throws. */
async function withConnection<T>(pool: RawPool, fn: (c: RawConnection) => Promise<T>): Promise<T> {
  const connection = await pool.getConnection();
  try {
    return await fn(connection);
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  } finally {
    await connection.close();
  }
}

/** A `TIMESTAMP(3)` bind in the adapter's UTC text form (`TO_TIMESTAMP(:b, …FF3)`). */
const at = (date: Date) => date.toISOString().slice(0, 23);
const TS = `'YYYY-MM-DD"T"HH24:MI:SS.FF3'`;
const NOW = 'SYS_EXTRACT_UTC(SYSTIMESTAMP)';

/**
 * Oracle Database at `ENGRAM_ORACLE_URL`: the store and an `oracledb` pool side by side. No
 * Oracle server runs on the machine the committed results come from, so this target is skipped
 * there with the reason adapters.json gives.
 */
export const target: BenchTarget = {
  name: 'oracle',
  async open() {
    const url = serviceUrl('oracle') as string;
    const storage = new OracleStore({
      ...parseOracleUrl(url),
      tablePrefix: prefix(),
      poolAttributes: { poolMax: 4 },
    });
    await storage.init();
    const driver = loadDriver();
    const pool = await openPool(url, 4);
    // Rows as objects, CLOBs (working memory, content, title) fetched as strings, as the store does.
    const options = (autoCommit: boolean) => ({
      outFormat: driver.OUT_FORMAT_OBJECT,
      autoCommit,
      fetchTypeHandler: (column: { dbType?: object }) =>
        column.dbType === driver.DB_TYPE_CLOB ? { type: driver.DB_TYPE_VARCHAR } : undefined,
    });
    const resources = table('resources');
    const messages = table('messages');
    const threads = table('threads');
    const readMemory = `SELECT working_memory FROM ${resources} WHERE id = :id`;
    type MemoryRow = { WORKING_MEMORY: string | null };
    const raw: RawBaseline = {
      async getWorkingMemory(resourceId) {
        const result = await withConnection(pool, (c) =>
          c.execute(readMemory, { id: resourceId }, options(true)),
        );
        return (result.rows?.[0] as MemoryRow | undefined)?.WORKING_MEMORY ?? null;
      },
      async replaceWorkingMemory(resourceId, document) {
        // The bench's documents are short: a plain VARCHAR2 bind (the store binds longer text as a CLOB).
        await withConnection(pool, (c) =>
          c.execute(
            `MERGE INTO ${resources} r USING (SELECT :id AS id FROM dual) s ON (r.id = s.id)
             WHEN MATCHED THEN UPDATE SET r.working_memory = :doc, r.updated_at = ${NOW}
             WHEN NOT MATCHED THEN INSERT (id, working_memory, working_memory_empty, metadata, created_at, updated_at)
               VALUES (s.id, :doc, 0, '{}', ${NOW}, ${NOW})`,
            { id: resourceId, doc: document },
            options(true),
          ),
        );
      },
      async mergeWorkingMemory(resourceId: string, patch: JsonObject) {
        await withConnection(pool, async (c) => {
          const lock = () => c.execute(`${readMemory} FOR UPDATE`, { id: resourceId }, options(false));
          let locked = await lock();
          if (!locked.rows?.length) {
            // First write: create the row (another process may win that race: ORA-00001), then lock it.
            await c
              .execute(
                `INSERT INTO ${resources} (id, working_memory, working_memory_empty, metadata, created_at, updated_at)
                 VALUES (:id, NULL, 0, '{}', ${NOW}, ${NOW})`,
                { id: resourceId },
                options(false),
              )
              .catch((error: unknown) => {
                if ((error as { code?: unknown }).code !== 'ORA-00001') throw error;
              });
            locked = await lock();
          }
          const next = deepMerge((locked.rows?.[0] as MemoryRow | undefined)?.WORKING_MEMORY ?? null, patch);
          await c.execute(
            `UPDATE ${resources} SET working_memory = :doc, updated_at = ${NOW} WHERE id = :id`,
            { id: resourceId, doc: next },
            options(false),
          );
          await c.commit();
        });
      },
      async saveMessages(batch: Message[]) {
        await withConnection(pool, (c) =>
          c.executeMany(
            `INSERT INTO ${messages} (id, thread_id, resource_id, message_role, message_type, content, created_at)
             VALUES (:id, :thread_id, :resource_id, :message_role, :message_type, :content, TO_TIMESTAMP(:created_at, ${TS}))`,
            batch.map((m) => ({
              id: m.id,
              thread_id: m.threadId,
              resource_id: m.resourceId,
              message_role: m.role,
              message_type: m.type,
              content: JSON.stringify(m.content),
              created_at: at(m.createdAt),
            })),
            { autoCommit: true },
          ),
        );
      },
      async listNewest(threadId, n) {
        const result = await withConnection(pool, (c) =>
          c.execute(
            `SELECT id, thread_id, resource_id, message_role, message_type, content, created_at FROM ${messages}
             WHERE thread_id = :thread_id ORDER BY created_at DESC, id DESC FETCH FIRST :n ROWS ONLY`,
            { thread_id: threadId, n },
            options(true),
          ),
        );
        return result.rows ?? [];
      },
      async listThreads(resourceId, n) {
        const result = await withConnection(pool, (c) =>
          c.execute(
            `SELECT id, resource_id, title, metadata, created_at, updated_at FROM ${threads}
             WHERE resource_id = :resource_id ORDER BY created_at DESC, id DESC FETCH FIRST :n ROWS ONLY`,
            { resource_id: resourceId, n },
            options(true),
          ),
        );
        return result.rows ?? [];
      },
    };
    return {
      storage,
      raw,
      async close() {
        await pool.close(0);
        await storage.close();
      },
    };
  },
  async openWithoutKeywords() {
    const storage = new OracleStore({
      ...parseOracleUrl(serviceUrl('oracle') as string),
      tablePrefix: prefix(),
      poolAttributes: { poolMax: 4 },
      keywords: false,
    });
    await storage.init();
    return storage;
  },
  async dispose() {
    const url = serviceUrl('oracle');
    if (given || !url) return;
    const pool = await openPool(url, 1);
    try {
      // Every table of the run's prefix, whatever migrations created (CASCADE: in any order).
      await withConnection(pool, (c) =>
        c.execute(
          `BEGIN
             FOR t IN (SELECT table_name FROM user_tables WHERE table_name LIKE :pattern ESCAPE '\\') LOOP
               EXECUTE IMMEDIATE 'DROP TABLE "' || t.table_name || '" CASCADE CONSTRAINTS PURGE';
             END LOOP;
           END;`,
          { pattern: `${prefix().toUpperCase().replaceAll('_', '\\_')}%` },
          {},
        ),
      );
    } finally {
      await pool.close(0);
    }
  },
};
