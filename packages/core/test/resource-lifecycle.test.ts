import { describe, expect, it } from 'vitest';
import { MemoryDriver, Store } from '../src/driver.ts';
import {
  createLexicalEmbedder,
  embedderId,
  InMemoryStore,
  type JsonObject,
  Memory,
  type MemoryRecord,
  type MemoryStorage,
} from '../src/index.ts';
import { messagePages, threadPages } from '../src/storage/walk.ts';
import { caught } from './support.ts';

const at = (ms: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678) + ms);
const SPACE = { id: 'test:space', dimensions: 2 };

/**
 * A resource with two threads, messages, working memory of both scopes, vectors, observation logs
 * and a turn record.
 */
async function seed(storage: MemoryStorage, r: string): Promise<void> {
  for (const i of [0, 1]) {
    const metadata: JsonObject = i === 0 ? { workingMemory: `# ${r}`, n: i } : { n: i };
    await storage.saveThread({
      id: `${r}/t${i}`,
      resourceId: r,
      title: `T${i}`,
      metadata,
      createdAt: at(i),
      updatedAt: at(i),
    });
    await storage.saveMessages(
      [0, 1].map((j) => ({
        id: `${r}/t${i}/m${j}`,
        threadId: `${r}/t${i}`,
        resourceId: r,
        role: 'user' as const,
        content: {
          format: 2,
          parts: [{ type: 'file', data: 'AAEC/w==', mediaType: 'application/octet-stream' }],
        },
        type: 'v2',
        createdAt: at(10 + j),
      })),
    );
    await storage.saveThread({
      id: `${r}/t${i}`,
      resourceId: r,
      title: `T${i}`,
      metadata,
      createdAt: at(i),
      updatedAt: at(100 + i),
    });
  }
  await storage.updateResource({ resourceId: r, workingMemory: '# resource', metadata: { plan: 'pro' } });
  await storage.vectors?.claimSpace(SPACE);
  await storage.vectors?.upsertVectors(
    SPACE,
    [0, 1].flatMap((i) =>
      [0, 1].map((j) => ({ messageId: `${r}/t${i}/m${j}`, hash: 'h', vector: Float32Array.of(1, 0) })),
    ),
  );
  const log = storage.observations;
  if (log) {
    const row = { resourceId: r, generation: 1, version: 1, body: 'b1', updatedAt: at(5) };
    await log.swap(null, { ...row, key: `thread:${r}/t0`, threadId: `${r}/t0` });
    const key = `resource:${r}`;
    await log.swap(null, { ...row, key, threadId: null });
    await log.swap({ generation: 1, version: 1 }, { ...row, key, threadId: null, version: 2, body: 'b2' });
    await log.swap(
      { generation: 1, version: 2 },
      { ...row, key, threadId: null, generation: 2, version: 3, body: 'g2' },
    );
    await log.swap(
      { generation: 2, version: 3 },
      { ...row, key, threadId: null, generation: 2, version: 4, body: 'g2b', updatedAt: at(6) },
    );
  }
  await storage.turns?.put({
    id: `${r}/t1/m0`,
    threadId: `${r}/t1`,
    resourceId: r,
    createdAt: at(20),
    body: JSON.stringify({ v: 1, history: [`${r}/t1/m0`], tokens: { history: 3 } }),
  });
}

async function dump(memory: Memory, resourceId: string): Promise<MemoryRecord[]> {
  const records: MemoryRecord[] = [];
  for await (const record of memory.exportResource({ resourceId })) records.push(record);
  return records;
}

describe('memory.deleteResource', () => {
  it('removes every record of the resource, counts them, and leaves a prefix-sharing resource alone', async () => {
    const storage = new InMemoryStore();
    const memory = new Memory({ storage });
    await seed(storage, 'r');
    await seed(storage, 'r1');
    const before = await dump(memory, 'r1');
    expect(await memory.deleteResource({ resourceId: 'r' })).toEqual({
      threads: 2,
      messages: 4,
      vectors: 4,
      observations: 3,
      turns: 1,
      workingMemory: 2,
      resources: 1,
    });
    expect(await dump(memory, 'r')).toEqual([]);
    expect(await storage.vectors?.getVectors(SPACE, ['r/t0/m0', 'r/t1/m1'])).toEqual([]);
    expect(await dump(memory, 'r1')).toEqual(before);
    expect(await storage.vectors?.getVectors(SPACE, ['r1/t0/m0'])).toHaveLength(1);
    expect(await memory.deleteResource({ resourceId: 'r' })).toEqual({
      threads: 0,
      messages: 0,
      vectors: 0,
      observations: 0,
      turns: 0,
      workingMemory: 0,
      resources: 0,
    });
  });

  it('completes on a second run after failing part-way', async () => {
    class Flaky extends MemoryDriver {
      failures = 1;
      constructor() {
        super();
        const remove = this.threads.delete;
        (this.threads as { delete: typeof remove }).delete = async (tx, id) => {
          if (id.endsWith('t1') && this.failures-- > 0) throw new Error('connection lost');
          return remove(tx, id);
        };
      }
    }
    const storage = new Store(new Flaky());
    const memory = new Memory({ storage });
    await seed(storage, 'r');
    expect(await caught(() => memory.deleteResource({ resourceId: 'r' }))).toMatchObject({ code: 'STORAGE' });
    expect((await storage.listThreads({ resourceId: 'r' })).total).toBe(1);
    expect(await storage.getResourceById({ resourceId: 'r' })).not.toBeNull();
    const counts = await memory.deleteResource({ resourceId: 'r' });
    expect(counts).toMatchObject({ threads: 1, messages: 2, resources: 1 });
    expect(await dump(memory, 'r')).toEqual([]);
  });

  it('refuses a bad id with INVALID_ARGUMENT and changes nothing', async () => {
    const storage = new InMemoryStore();
    const memory = new Memory({ storage });
    await seed(storage, 'r');
    const before = await dump(memory, 'r');
    for (const resourceId of ['', 42, null, { $gt: '' }, 'x'.repeat(256)]) {
      expect(await caught(() => memory.deleteResource({ resourceId } as never))).toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
    expect(await dump(memory, 'r')).toEqual(before);
  });
});

describe('memory.exportResource / importRecords', () => {
  it('round-trips a resource exactly, JSON Lines included', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    expect(records.map((r) => r.kind)).toEqual([
      'resource',
      'thread',
      'message',
      'message',
      'vector',
      'vector',
      'observation',
      'thread',
      'message',
      'message',
      'vector',
      'vector',
      'turn',
      'observation',
      'observation',
    ]);
    const lines = records.map((r) => JSON.stringify(r));
    const target = new Memory({ storage: new InMemoryStore() });
    const counts = await target.importRecords(lines.map((l) => JSON.parse(l) as unknown));
    expect(counts.written).toEqual({
      resource: 1,
      thread: 2,
      message: 4,
      observation: 3,
      vector: 4,
      turn: 1,
    });
    expect(await dump(target, 'r')).toEqual(records);
    expect(await target.storage.getResourceById({ resourceId: 'r' })).toEqual(
      await source.storage.getResourceById({ resourceId: 'r' }),
    );
    // Again: 'fail' refuses the first record; 'skip' and 'replace' converge on the same store.
    expect(await caught(() => target.importRecords(records))).toMatchObject({ code: 'CONFLICT' });
    expect((await target.importRecords(records, { onConflict: 'skip' })).written).toEqual({
      resource: 0,
      thread: 0,
      message: 0,
      observation: 0,
      vector: 0,
      turn: 0,
    });
    await target.importRecords(records, { onConflict: 'replace' });
    expect(await dump(target, 'r')).toEqual(records);
  });

  it('a bad record stops the import naming it; records before it are written, it and later ones are not', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records: unknown[] = await dump(source, 'r');
    const bad = { ...(records[3] as object), createdAt: '2026-01-02' };
    const target = new Memory({ storage: new InMemoryStore() });
    const error = await caught(() =>
      target.importRecords([...records.slice(0, 3), bad, ...records.slice(4)]),
    );
    expect(error).toMatchObject({ code: 'VALIDATION' });
    expect(String((error as Error).message)).toMatch(/record 4 \(message "r\/t0\/m1"\)/);
    expect(await target.storage.listMessagesById({ ids: ['r/t0/m0', 'r/t0/m1', 'r/t1/m0'] })).toHaveLength(1);
    const late = { ...(records[0] as object), updatedAt: '+010000-01-01T00:00:00.000Z' };
    const refused = await caught(() => new Memory({ storage: new InMemoryStore() }).importRecords([late]));
    expect(refused).toMatchObject({ code: 'VALIDATION' });
    expect(String((refused as Error).message)).toMatch(
      /^record 1 \(resource "r"\): updatedAt is \+010000-01-01T00:00:00\.000Z; a stored date must be from 0001-01-01/,
    );
    for (const wrong of [
      { ...(records[0] as object), v: 2 },
      { v: 1, kind: 'vector' },
      'text',
      { ...(records[1] as object), extra: 1 },
    ]) {
      const fresh = new Memory({ storage: new InMemoryStore() });
      expect(await caught(() => fresh.importRecords([wrong]))).toMatchObject({ code: 'VALIDATION' });
      expect((await fresh.storage.listThreads({})).total).toBe(0);
    }
    const scoped = new Memory({ storage: new InMemoryStore() });
    expect(await caught(() => scoped.importRecords(records, { resourceId: 'other' }))).toMatchObject({
      code: 'VALIDATION',
    });
    expect(await scoped.storage.getResourceById({ resourceId: 'r' })).toBeNull();
  });

  it('a source that fails part-way: the records before it are written', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    async function* cut() {
      yield* records.slice(0, 4);
      throw new Error('line 5 is not JSON');
    }
    const target = new Memory({ storage: new InMemoryStore() });
    expect(await caught(() => target.importRecords(cut()))).toMatchObject({ message: 'line 5 is not JSON' });
    expect(await target.storage.listMessagesById({ ids: ['r/t0/m0', 'r/t0/m1'] })).toHaveLength(2);
    // Resumed with 'skip': the thread cut short gets its messages and its exact dates back.
    const counts = await target.importRecords(records, { onConflict: 'skip' });
    expect(counts.written).toEqual({
      resource: 0,
      thread: 1,
      message: 2,
      observation: 3,
      vector: 4,
      turn: 1,
    });
    expect(await dump(target, 'r')).toEqual(records);
  });
});

describe('exporting a store that is written meanwhile', () => {
  const thread = (id: string, n: number) => ({
    id,
    resourceId: 'r',
    title: '',
    metadata: {},
    createdAt: at(n),
    updatedAt: at(n),
  });
  const messages = (threadId: string, count: number, createdAt: (i: number) => Date) =>
    Array.from({ length: count }, (_, i) => ({
      id: `${threadId}/m${String(i).padStart(4, '0')}`,
      threadId,
      resourceId: 'r',
      role: 'user' as const,
      content: `message ${i}`,
      type: 'text',
      createdAt: createdAt(i),
    }));
  /** The ids of the records of `kind` exported, running `during(n)` after each n-th such record. */
  async function exportIds(memory: Memory, kind: 'thread' | 'message', during: (n: number) => Promise<void>) {
    const ids: string[] = [];
    for await (const record of memory.exportResource({ resourceId: 'r' })) {
      if (record.kind !== kind) continue;
      ids.push(record.id);
      await during(ids.length);
    }
    return ids;
  }

  it('every message stored all along is exported, once, while others of its thread are deleted', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await memory.storage.saveThread(thread('t', 0));
    const stored = messages('t', 1_200, (i) => at(1_000 + i));
    await memory.storage.saveMessages(stored);
    const deleted = ['t/m0003', 't/m0499', 't/m0700'];
    const ids = await exportIds(memory, 'message', async (n) => {
      if (n === 500) await memory.storage.deleteMessages(deleted.slice(0, 2));
      if (n === 1_000) await memory.storage.deleteMessages(deleted.slice(2));
    });
    // Before: the page after each delete began past messages never read (t/m0500, t/m0501, …).
    const kept = stored.map((m) => m.id).filter((id) => !deleted.includes(id) || ids.includes(id));
    expect(ids).toEqual(kept);
  });

  it('more messages than a page at one instant are exported once each, in id order', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await memory.storage.saveThread(thread('t', 0));
    const stored = messages('t', 1_100, () => at(1_000));
    await memory.storage.saveMessages(stored);
    expect(await exportIds(memory, 'message', async () => {})).toEqual(stored.map((m) => m.id));
  });

  it('messages at one instant are each read about once, also when those before the last read are deleted', async () => {
    const store = new InMemoryStore();
    const list = store.listMessages.bind(store);
    let read = 0;
    store.listMessages = async (args) => {
      const page = await list(args);
      read += page.messages.length;
      return page;
    };
    const memory = new Memory({ storage: store });
    await memory.storage.saveThread(thread('t', 0));
    const stored = [...messages('t', 5_000, () => at(1_000)), ...messages('u', 10, (i) => at(2_000 + i))];
    await memory.storage.saveMessages(stored.map((m) => ({ ...m, threadId: 't' })));
    expect(await exportIds(memory, 'message', async () => {})).toEqual(stored.map((m) => m.id));
    // Before: each page read again every message of the instant read so far (27,500 rows here).
    expect(read).toBeLessThan(5_600);

    // Two before the last read (the offset would now begin past one never read), then the last
    // read and one before it, then three before it, then the last read moved to a later instant.
    const deleted = [
      ['t/m0003', 't/m0004'],
      ['t/m1500', 't/m1999'],
      ['t/m2500', 't/m2501', 't/m2502'],
    ];
    const ids = await exportIds(memory, 'message', async (n) => {
      if (n % 1_000 === 0 && n <= 3_000) await memory.storage.deleteMessages(deleted[n / 1_000 - 1] ?? []);
      if (n === 3_999) await memory.storage.updateMessages([{ id: 't/m3998', createdAt: at(1_500) }]);
    });
    const kept = stored.map((m) => m.id).filter((id) => !deleted.flat().includes(id) || ids.includes(id));
    expect(ids.filter((id) => id !== 't/m3998')).toEqual(kept.filter((id) => id !== 't/m3998'));
  });

  it('a walk of one message a page reads each once, in order, also where they share an instant', async () => {
    const storage = new InMemoryStore();
    await storage.saveThread(thread('t', 0));
    const stored = [
      ...messages('t', 3, (i) => at(i)),
      ...messages('u', 6, () => at(10)),
      ...messages('v', 2, (i) => at(20 + i)),
    ];
    await storage.saveMessages(stored.map((m) => ({ ...m, threadId: 't' })));
    const list = storage.listMessages.bind(storage);
    let reads = 0;
    storage.listMessages = (args) => {
      if (++reads > 10 * stored.length) throw new Error('the walk does not end');
      return list(args);
    };
    const pages: string[][] = [];
    for await (const page of messagePages(storage, 't', 1)) pages.push(page.map((m) => m.id));
    // Before: a page resumed at the last message read held nothing after it; the walk never ended.
    expect(pages.flat()).toEqual(stored.map((m) => m.id));
  });

  it('a walk of threads reads each page on from the createdAt of the last thread read, not at an offset from the start', async () => {
    const storage = new InMemoryStore();
    // Three threads at each instant, of two resources.
    const threads = Array.from({ length: 2_000 }, (_, i) => ({
      ...thread(`t${String(i).padStart(4, '0')}`, Math.floor(i / 3)),
      resourceId: i % 2 ? 'r' : 's',
    }));
    for (const t of threads) await storage.saveThread(t);
    const list = storage.listThreads.bind(storage);
    const offsets: number[] = [];
    storage.listThreads = (args = {}) => {
      offsets.push((args.page ?? 0) * Number(args.perPage));
      if (offsets.length > 1) expect(args.dateRange?.start).toBeInstanceOf(Date);
      return list(args);
    };
    const ids: string[] = [];
    for await (const page of threadPages(storage, undefined, 100)) ids.push(...page.map((t) => t.id));
    expect(ids).toEqual(threads.map((t) => t.id));
    // Before: each page was read at an offset from the start of the listing (19,000 rows skipped
    // here, growing with the square of the threads).
    expect(offsets.reduce((a, b) => a + b, 0)).toBeLessThan(100);
  });

  it('every thread stored all along is exported, once, oldest first, while other threads are deleted throughout', async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    const threads = Array.from({ length: 1_100 }, (_, i) => thread(`t${String(i).padStart(4, '0')}`, i));
    for (const t of threads) await memory.storage.saveThread(t);
    // Three read (the last read among them) every 50 threads read, so also during any second pass.
    const deleted: string[] = [];
    const ids = await exportIds(memory, 'thread', async (n) => {
      if (n % 50 !== 0) return;
      for (const i of [n - 1, n - 10, n - 30]) {
        const threadId = `t${String(i).padStart(4, '0')}`;
        deleted.push(threadId);
        await memory.storage.deleteThread({ threadId });
      }
    });
    const kept = threads.map((t) => t.id).filter((id) => !deleted.includes(id) || ids.includes(id));
    expect(ids).toEqual(kept);
  });
});

describe('observation logs in a dump', () => {
  /**
   * Makes `storage`'s observation swaps fail (as a lost connection does) once `swaps` have been
   * written, until `mend()`.
   */
  function cutAfter(storage: MemoryStorage, swaps: number): { swapped: () => number; mend: () => void } {
    const log = storage.observations as NonNullable<MemoryStorage['observations']>;
    const swap = log.swap;
    let done = 0;
    log.swap = async (expected, next) => {
      if (done === swaps) throw new Error('connection lost');
      done += 1;
      return swap.call(log, expected, next);
    };
    return { swapped: () => done, mend: () => (log.swap = swap) };
  }

  it('an import stopped part-way through a log completes it when run again, at every swap', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    // The thread log takes 1 swap, the resource log of two generations 4 (created, replaced, the
    // next one created, replaced).
    for (let swaps = 0; swaps < 5; swaps++) {
      const target = new Memory({ storage: new InMemoryStore() });
      const cut = cutAfter(target.storage, swaps);
      expect(await caught(() => target.importRecords(records))).toMatchObject({ message: 'connection lost' });
      expect(cut.swapped()).toBe(swaps);
      cut.mend();
      for (const onConflict of ['skip', 'replace', 'fail'] as const) {
        if (onConflict === 'fail') {
          // The dump's threads are stored: 'fail' stops at the first of them.
          expect(await caught(() => target.importRecords(records))).toMatchObject({ code: 'CONFLICT' });
          continue;
        }
        const counts = await target.importRecords(records, { onConflict });
        expect(counts.written.observation + counts.skipped.observation, `${swaps} ${onConflict}`).toBe(3);
      }
      expect(await dump(target, 'r'), `stopped after ${swaps} swaps`).toEqual(records);
    }
  });

  it('two imports of one dump at once both succeed and write each log once, exactly', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    const target = new Memory({ storage: new InMemoryStore() });
    const counts = await Promise.all([0, 1].map(() => target.importRecords(records, { onConflict: 'skip' })));
    expect(counts.map((c) => c.written.observation + c.skipped.observation)).toEqual([3, 3]);
    expect(await dump(target, 'r')).toEqual(records);
  });

  it('a stored log of its own, or one the store will not swap, is a CONFLICT naming the record', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    const position = records.findIndex((r) => r.kind === 'observation') + 1;
    // A log of the thread stored without it (as a store written before logs needed their thread
    // may hold one): written through the driver, which core's check does not stand in front of.
    const driver = new MemoryDriver();
    const other = new Memory({ storage: new Store(driver) });
    await driver.observations?.swap(null, {
      key: 'thread:r/t0',
      resourceId: 'r',
      threadId: 'r/t0',
      generation: 1,
      version: 1,
      body: 'another body',
      updatedAt: at(5),
    });
    expect(await caught(() => other.importRecords(records))).toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining(`record ${position} (observation "thread:r/t0")`),
    });
    const refusing = new Memory({ storage: new InMemoryStore() });
    const log = refusing.storage.observations as NonNullable<MemoryStorage['observations']>;
    log.swap = async () => false;
    expect(await caught(() => refusing.importRecords(records))).toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('refused a swap of a log that did not change'),
    });
  });
});

describe('turn records in a dump', () => {
  it('go with their thread: written exactly, skipped (and counted) by a store without turns, refused when not a turn record', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    const turn = records.find((r) => r.kind === 'turn');
    expect(turn).toMatchObject({
      id: 'r/t1/m0',
      threadId: 'r/t1',
      resourceId: 'r',
      createdAt: at(20).toISOString(),
    });
    const target = new Memory({ storage: new InMemoryStore() });
    await target.importRecords(records);
    expect(await target.storage.turns?.list('r/t1', 10)).toEqual(
      await source.storage.turns?.list('r/t1', 10),
    );

    const without = new Memory({ storage: new InMemoryStore({ turns: false }) });
    const counts = await without.importRecords(records);
    expect(counts.skipped.turn).toBe(1);
    expect(counts.written.message).toBe(4);

    // Without its thread (or under another resource), a row could never be listed or erased.
    for (const orphan of [{ ...turn }, { ...turn, threadId: 'r/t0', resourceId: 'other' }]) {
      const fresh = new Memory({ storage: new InMemoryStore() });
      if (orphan.threadId === 'r/t0') await fresh.importRecords(records.slice(0, 2));
      const error = await caught(() => fresh.importRecords([orphan]));
      expect(error).toMatchObject({ code: 'VALIDATION' });
      expect(String((error as Error).message)).toMatch(
        /turn "r\/t1\/m0"\): thread "r\/t[01]" of resource "(r|other)" is not in/,
      );
      expect(await fresh.storage.turns?.get('r/t1/m0')).toBeNull();
    }
    const withThread = records.filter((r) => r.kind === 'thread' && r.id === 'r/t1');
    for (const body of ['not json', '{"v":2}', '[]']) {
      const fresh = new Memory({ storage: new InMemoryStore() });
      const error = await caught(() => fresh.importRecords([...withThread, { ...turn, body }]));
      expect(error).toMatchObject({ code: 'VALIDATION' });
      expect(String((error as Error).message)).toMatch(
        /record 2 \(turn "r\/t1\/m0"\): body must be a version-1 turn record/,
      );
      expect(await fresh.storage.turns?.get('r/t1/m0')).toBeNull();
    }
  });
});

describe('vectors in a dump', () => {
  it('are written as they are into a store of their space; in another space they are skipped and, with an embedder, the messages embedded', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = await dump(source, 'r');
    const ids = ['r/t0/m0', 'r/t0/m1', 'r/t1/m0', 'r/t1/m1'];
    // A store without a space records the dump's, and holds the very numbers.
    const same = new Memory({ storage: new InMemoryStore() });
    await same.importRecords(records);
    expect(await same.storage.vectors?.readVectors?.(SPACE, ids)).toEqual(
      await source.storage.vectors?.readVectors?.(SPACE, ids),
    );
    // Another space, no embedder: skipped and listed.
    const other = new Memory({ storage: new InMemoryStore() });
    await other.storage.vectors?.claimSpace({ id: 'test:other', dimensions: 3 });
    const counts = await other.importRecords(records);
    expect(counts.skipped.vector).toBe(4);
    expect(counts.unembedded).toEqual(['r']);
    // Another space, an embedder: the resource's messages are embedded after the import.
    const embedder = createLexicalEmbedder({ dimensions: 16 });
    const embedding = new Memory({
      storage: new InMemoryStore(),
      embedder,
      options: { semanticRecall: { mode: 'vector' } },
    });
    const lexical = { id: embedderId(embedder), dimensions: 16 };
    await embedding.storage.vectors?.claimSpace(lexical);
    const texts = records.map((r) => (r.kind === 'message' ? { ...r, content: `text of ${r.id}` } : r));
    expect((await embedding.importRecords(texts)).unembedded).toEqual([]);
    expect(await embedding.storage.vectors?.getVectors(lexical, ids)).toHaveLength(4);
  });

  it("come in their messages' order, whatever order the store reads them back in", async () => {
    const memory = new Memory({ storage: new InMemoryStore() });
    await seed(memory.storage, 'r');
    const vectors = memory.storage.vectors as NonNullable<MemoryStorage['vectors']>;
    const read = vectors.readVectors as NonNullable<typeof vectors.readVectors>;
    vectors.readVectors = async (space, ids) => (await read.call(vectors, space, ids)).reverse();
    const records = await dump(memory, 'r');
    const vectorIds = records.flatMap((r) => (r.kind === 'vector' ? [r.messageId] : []));
    expect(vectorIds).toEqual(records.flatMap((r) => (r.kind === 'message' ? [r.id] : [])));
  });

  it('a vector record of the wrong length or with numbers that are not finite is VALIDATION naming it', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'r');
    const records = (await dump(source, 'r')) as unknown as Record<string, unknown>[];
    const where = records.findIndex((r) => r.kind === 'vector');
    for (const vector of [
      Buffer.alloc(12).toString('base64'),
      Buffer.from(Float32Array.of(Number.NaN, 0).buffer).toString('base64'),
      'not base64!',
    ]) {
      const bad = records.map((r, i) => (i === where ? { ...r, vector } : r));
      const target = new Memory({ storage: new InMemoryStore() });
      expect(await caught(() => target.importRecords(bad))).toMatchObject({
        code: 'VALIDATION',
        message: expect.stringContaining(`record ${where + 1} (vector)`),
      });
    }
  });
});

describe('memory.exportStore', () => {
  it('streams every resource, those with threads first, then those without, each as exportResource does', async () => {
    const source = new Memory({ storage: new InMemoryStore() });
    await seed(source.storage, 'a');
    await seed(source.storage, 'b');
    await source.storage.updateResource({ resourceId: 'threadless', workingMemory: '# alone' });
    const records: MemoryRecord[] = [];
    for await (const record of source.exportStore()) records.push(record);
    expect(records).toEqual([
      ...(await dump(source, 'a')),
      ...(await dump(source, 'b')),
      ...(await dump(source, 'threadless')),
    ]);
    expect(records.at(-1)).toMatchObject({ kind: 'resource', id: 'threadless', workingMemory: '# alone' });
  });
});
