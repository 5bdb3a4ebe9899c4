import { describe, expect, it } from 'vitest';
import { insertAppliedVersion } from '../src/migrations.ts';
import type { OracleBinds } from '../src/oracledb.ts';
import * as sql from '../src/sql.ts';
import { at, dialect, driverBinds, message, thread } from './fixtures.ts';

const d = dialect('json');
const long = '€'.repeat(5000); // 15,000 UTF-8 bytes
const nested = { deep: Array.from({ length: 400 }, (_, i) => ({ i, text: 'x'.repeat(20) })) };

/** Statements with every kind of value the adapter binds: short, empty, null, long, multi-byte. */
const statements: Array<[string, sql.Statement]> = [
  ['upsertThread (short)', sql.upsertThread(d, thread())],
  ['upsertThread (empty title, long metadata)', sql.upsertThread(d, thread({ title: '', metadata: nested }))],
  ['upsertThread (long title)', sql.upsertThread(d, thread({ title: long }))],
  ['upsertMessage (string content)', sql.upsertMessage(d, message())],
  [
    'upsertMessage (long parts content, empty type)',
    sql.upsertMessage(d, message({ content: nested, type: '' })),
  ],
  [
    'listMessages',
    sql.listMessages(d, { threadId: 't1', resourceId: 'r1', dateRange: { start: at } }, 'ASC', {
      offset: 0,
      limit: 40,
    }),
  ],
  [
    'listThreads',
    sql.listThreads(
      d,
      { resourceId: 'r1', orderBy: 'updatedAt', direction: 'DESC' },
      { offset: 100, limit: 100 },
    ),
  ],
  ['selectWindows', sql.selectWindows(d, [{ target: message(), before: 3, after: 2 }], 'r1')!],
  ['insertMissingResource', sql.insertMissingResource(d, 'r1', at)],
  [
    'updateResourceRow (long memory)',
    sql.updateResourceRow(d, { id: 'r1', workingMemory: long, metadata: {}, updatedAt: at }),
  ],
  [
    'updateResourceRow (empty memory)',
    sql.updateResourceRow(d, { id: 'r1', workingMemory: '', metadata: {}, updatedAt: at }),
  ],
  ['touchThreads', sql.touchThreads(d, ['a', 'b'], at)],
  ['insertAppliedVersion', insertAppliedVersion(d.names, 1, 'first', at)],
  ['insertThread (long title)', sql.insertThread(d, thread({ title: long }))],
];

describe('bind shapes as the driver processes them', () => {
  it.each(statements)(
    '%s: IN binds of VARCHAR2 (at most 4,000 bytes, never a LONG), NUMBER or CLOB',
    async (_, s) => {
      const binds = await driverBinds(s.binds);
      expect(binds.map((b) => b.name).sort()).toEqual(Object.keys(s.binds).sort());
      for (const bind of binds) {
        expect(bind.in).toBe(true);
        expect(['DB_TYPE_VARCHAR', 'DB_TYPE_NUMBER', 'DB_TYPE_CLOB']).toContain(bind.type);
        if (bind.type === 'DB_TYPE_VARCHAR') expect(bind.maxSize).toBeLessThanOrEqual(4000);
      }
    },
  );

  it('sends long text as a CLOB, short text as VARCHAR2, counts as NUMBER', async () => {
    const byName = async (binds: OracleBinds) =>
      Object.fromEntries((await driverBinds(binds)).map((b) => [b.name, b]));
    const thread = await byName(statements[2]![1].binds);
    expect(thread.title).toMatchObject({ type: 'DB_TYPE_CLOB' });
    expect(thread.metadata).toMatchObject({ type: 'DB_TYPE_VARCHAR' });
    const page = await byName(statements[6]![1].binds);
    expect(page.row_offset).toMatchObject({ type: 'DB_TYPE_NUMBER' });
    expect(page.row_limit).toMatchObject({ type: 'DB_TYPE_NUMBER' });
    const content = await byName(statements[4]![1].binds);
    expect(content.content).toMatchObject({ type: 'DB_TYPE_CLOB' });
    expect(content.message_type).toMatchObject({ type: 'DB_TYPE_VARCHAR', maxSize: 1 }); // NULL
  });
});
