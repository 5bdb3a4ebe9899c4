import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeService } from '@engram/conformance';
import {
  type JsonValue,
  Memory,
  type MemoryStorage,
  type Message,
  normalize,
  type Thread,
} from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { PostgresStore } from '@engram/pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADAPTERS, type TestStore, tempDir } from './support.ts';

const BIN = fileURLToPath(new URL('../bin/engram.mjs', import.meta.url));
const pgCase = ADAPTERS.find((a) => a.name === 'pg')!;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `engram` as users do (the bin script, stdout and stderr piped), stdin from a file. */
async function engram(args: string[], stdinFile?: string): Promise<Run> {
  const { openSync, closeSync } = await import('node:fs');
  const fd = stdinFile === undefined ? 'ignore' : openSync(stdinFile, 'r');
  const child = spawn(process.execPath, [BIN, ...args], { stdio: [fd, 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => {
    stdout += String(c);
  });
  child.stderr!.on('data', (c) => {
    stderr += String(c);
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  if (typeof fd === 'number') closeSync(fd);
  return { code, stdout, stderr };
}

const SPACE = { id: 'test:sines', dimensions: 8 };
const at = (ms: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678) + ms);
/** Bytes 0…255, as a file part holds them (base64). */
const BINARY = Buffer.from(Array.from({ length: 256 }, (_, i) => i)).toString('base64');

/** What the source store holds, as written. */
interface Seed {
  threads: Thread[];
  messages: Message[];
  resources: string[];
}

/**
 * Two resources with working memory of both scopes and metadata, three threads with exact dates,
 * 450 messages (more than one import batch) with binary file parts, and observation logs.
 */
async function seed(storage: MemoryStorage): Promise<Seed> {
  const out: Seed = { threads: [], messages: [], resources: ['acme', 'globex'] };
  const plan = [
    { id: 'acme/t1', resourceId: 'acme', count: 300 },
    { id: 'acme/t2', resourceId: 'acme', count: 100 },
    { id: 'globex/t1', resourceId: 'globex', count: 50 },
  ];
  for (const [i, p] of plan.entries()) {
    const messages: Message[] = Array.from({ length: p.count }, (_, j) => ({
      id: `${p.id}/m${String(j).padStart(3, '0')}`,
      threadId: p.id,
      resourceId: p.resourceId,
      role: j % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content:
        j % 10 === 0
          ? ({
              format: 2,
              parts: [
                { type: 'text', text: `file ${j} ✓` },
                { type: 'file', data: BINARY, mediaType: 'application/octet-stream' },
              ],
            } as JsonValue)
          : `message ${j} of ${p.id}: "quoted", \n newline, ünïcödé`,
      type: 'v2',
      createdAt: at(1_000 * i + j),
    }));
    const thread: Thread = {
      id: p.id,
      resourceId: p.resourceId,
      title: `Thread ${i}`,
      metadata: { workingMemory: `# thread ${i}`, tags: ['a', i], nested: { ok: true } },
      createdAt: at(1_000 * i),
      updatedAt: at(1_000 * i),
    };
    await storage.saveThread(thread);
    await storage.saveMessages(messages);
    // Saved again after its messages: its updatedAt is the one given, not the save's.
    const final = { ...thread, updatedAt: at(1_000 * i + 999) };
    await storage.saveThread(final);
    out.threads.push(final);
    out.messages.push(...messages);
  }
  // A vector per message: the dump carries them, so the target needs no embedding.
  await storage.vectors!.claimSpace(SPACE);
  await storage.vectors!.upsertVectors(
    SPACE,
    out.messages.map((m, i) => ({
      messageId: m.id,
      hash: `h-${m.id}`,
      vector: normalize(
        Array.from({ length: SPACE.dimensions }, (_, j) => Math.sin(i * 7 + j)),
      ) as Float32Array,
    })),
  );
  await storage.updateResource({ resourceId: 'acme', workingMemory: '# acme', metadata: { plan: 'pro' } });
  await storage.updateResource({ resourceId: 'globex', workingMemory: '{"city":"Oslo"}' });
  const log = storage.observations!;
  const row = { resourceId: 'acme', generation: 1, version: 1, body: 'observed', updatedAt: at(5) };
  await log.swap(null, { ...row, key: 'thread:acme/t1', threadId: 'acme/t1' });
  await log.swap(null, { ...row, key: 'resource:acme', threadId: null });
  await log.swap(
    { generation: 1, version: 1 },
    { ...row, key: 'resource:acme', threadId: null, generation: 2, version: 2, body: 'g2', updatedAt: at(6) },
  );
  // Two turn records of acme/t2, each named by the first message its turn saved.
  for (const j of [10, 12]) {
    const body = JSON.stringify({ v: 1, history: [`acme/t2/m00${j - 2}`], tokens: { history: j } });
    await storage.turns!.put({
      id: `acme/t2/m0${j}`,
      threadId: 'acme/t2',
      resourceId: 'acme',
      createdAt: at(1_000 + j),
      body,
    });
  }
  return out;
}

/** Checks that `target` holds exactly what `source` holds (and what was seeded), record by record. */
async function expectSame(source: MemoryStorage, target: MemoryStorage, seeded: Seed): Promise<void> {
  for (const thread of seeded.threads) {
    expect(await target.getThreadById({ threadId: thread.id })).toEqual(thread);
    const page = await target.listMessages({ threadId: thread.id, perPage: false });
    const expected = seeded.messages.filter((m) => m.threadId === thread.id);
    expect(page.messages).toEqual(expected);
    expect(page.total).toBe(expected.length);
  }
  for (const resourceId of seeded.resources) {
    const stored = await source.getResourceById({ resourceId });
    expect(stored?.workingMemory).not.toBeNull();
    expect(await target.getResourceById({ resourceId })).toEqual(stored);
    expect((await target.listThreads({ resourceId, perPage: false })).total).toBe(
      seeded.threads.filter((t) => t.resourceId === resourceId).length,
    );
  }
  for (const key of ['thread:acme/t1', 'resource:acme']) {
    const rows = await source.observations!.generations(key);
    expect(rows.length).toBeGreaterThan(0);
    expect(await target.observations!.generations(key)).toEqual(rows);
  }
  const turns = await source.turns!.list('acme/t2', 10);
  expect(turns).toHaveLength(2);
  expect(await target.turns!.list('acme/t2', 10)).toEqual(turns);
  const ids = seeded.messages.map((m) => m.id);
  const byId = (rows: { messageId: string }[]) =>
    [...rows].sort((a, b) => (a.messageId < b.messageId ? -1 : 1));
  const vectors = byId(await source.vectors!.readVectors!(SPACE, ids));
  expect(vectors).toHaveLength(ids.length);
  expect(byId(await target.vectors!.readVectors!(SPACE, ids))).toEqual(vectors);
  const file = (await target.listMessagesById({ ids: ['acme/t1/m000'] }))[0]?.content as {
    parts: { data?: string }[];
  };
  expect(Buffer.from(file.parts[1]!.data!, 'base64')).toEqual(Buffer.from(BINARY, 'base64'));
}

/** 2 + 3 + 450 + 3 + 450: resources, threads, messages, observation generations, vectors. */
const TOTAL = 2 + 3 + 450 + 3 + 450 + 2;

describeService(pgCase.service!, 'engram export | import | copy: libSQL → PostgreSQL', (url) => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let sourceUrl: string;
  let source: LibSQLStore;
  let seeded: Seed;
  const targets: TestStore[] = [];
  const stores: MemoryStorage[] = [];

  /** A new, empty PostgreSQL schema: the CLI flags naming it and a store on it. */
  async function pgTarget(): Promise<{ flags: string[]; storage: MemoryStorage }> {
    const target = await pgCase.create(url, tmp.dir);
    targets.push(target);
    const schema = target.settings.pgSchema!;
    const storage = new PostgresStore({ connectionString: url, schemaName: schema, maxConnections: 2 });
    stores.push(storage);
    return { flags: ['--pg-schema', schema], storage };
  }

  beforeAll(async () => {
    tmp = await tempDir();
    sourceUrl = `file:${join(tmp.dir, 'source.db')}`;
    source = new LibSQLStore({ url: sourceUrl });
    seeded = await seed(source);
  });

  afterAll(async () => {
    await source?.close();
    for (const s of stores) await s.close().catch(() => undefined);
    for (const t of targets) await t.cleanup();
    await tmp?.remove();
  });

  it('export > file, import < file: every record arrives exactly; stdout is only JSON Lines, piped progress plain lines', async () => {
    const exported = await engram(['export', '--store', sourceUrl, '--progress-every', '100']);
    expect(exported.code).toBe(0);
    const lines = exported.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(TOTAL);
    for (const line of lines) expect(JSON.parse(line)).toMatchObject({ v: 1 });
    const progress = exported.stderr.trimEnd().split('\n');
    expect(exported.stderr).not.toContain('\r');
    expect(exported.stderr).not.toContain('\u001b');
    expect(progress.slice(0, 4)).toEqual(
      [100, 200, 300, 400].map((n) => expect.stringMatching(new RegExp(`^engram export: ${n} records \\(`))),
    );
    expect(progress.at(-1)).toMatch(
      /^engram export: 2 resources, 3 threads, 450 messages, 3 observations, 450 vectors, 2 turns in /,
    );

    const dump = join(tmp.dir, 'dump.jsonl');
    await writeFile(dump, exported.stdout);
    const { flags, storage } = await pgTarget();
    const imported = await engram(['import', '--store', url, ...flags], dump);
    expect(imported.stderr).toMatch(
      /written 2 resources, 3 threads, 450 messages, 3 observations, 450 vectors, 2 turns/,
    );
    expect(imported.code).toBe(0);
    expect(imported.stdout).toBe('');
    await expectSame(source, storage, seeded);
    // One resource alone.
    const one = await engram(['export', '--store', sourceUrl, '--resource', 'globex']);
    expect(
      one.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).kind),
    ).toEqual(['resource', 'thread', ...Array(50).fill('message'), ...Array(50).fill('vector')]);
  });

  it('copy after an import that stopped part-way converges: same records, no duplicates; a third run writes nothing', async () => {
    const exported = await engram(['export', '--store', sourceUrl]);
    const lines = exported.stdout.trimEnd().split('\n');
    // Stop in the middle of the first thread's messages (and of an import batch).
    const partial = join(tmp.dir, 'partial.jsonl');
    await writeFile(partial, `${lines.slice(0, 250).join('\n')}\n`);
    const { flags, storage } = await pgTarget();
    expect((await engram(['import', '--store', url, ...flags], partial)).code).toBe(0);
    expect((await storage.listMessages({ threadId: 'acme/t1', perPage: 0 })).total).toBe(248);

    const toFlags = flags.map((f) => (f === '--pg-schema' ? '--to-pg-schema' : f));
    const copied = await engram(['copy', '--from', sourceUrl, '--to', url, ...toFlags]);
    expect(copied.code).toBe(0);
    expect(copied.stderr).toMatch(
      /written 1 resource, 2 threads, 202 messages, 3 observations, 450 vectors, 2 turns/,
    );
    expect(copied.stderr).toMatch(
      /skipped \(already there\) 1 resource, 1 thread, 248 messages, 0 observations, 0 vectors, 0 turns/,
    );
    await expectSame(source, storage, seeded);

    const again = await engram(['copy', '--from', sourceUrl, '--to', url, ...toFlags]);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(
      /written 0 resources, 0 threads, 0 messages, 0 observations, 0 vectors, 0 turns/,
    );
    expect(again.stderr).toMatch(
      /skipped \(already there\) 2 resources, 3 threads, 450 messages, 3 observations, 450 vectors, 2 turns/,
    );
    await expectSame(source, storage, seeded);
  });

  it('a value the target cannot hold (NUL in JSON, on PostgreSQL): exit 1 naming the record; the ones before it are written', async () => {
    const nulUrl = `file:${join(tmp.dir, 'nul.db')}`;
    const nulSource = new LibSQLStore({ url: nulUrl });
    stores.push(nulSource);
    const memory = new Memory({ storage: nulSource });
    await memory.createThread({ resourceId: 'tools', threadId: 'tools/t' });
    const texts = ['first', 'tool output a\u0000b', 'third'];
    const saved = await memory.saveMessages({
      messages: texts.map((content, i) => ({
        threadId: 'tools/t',
        resourceId: 'tools',
        role: 'user' as const,
        content,
        type: 'text',
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      })),
    });
    const { flags, storage } = await pgTarget();
    const toFlags = flags.map((f) => (f === '--pg-schema' ? '--to-pg-schema' : f));
    const copied = await engram(['copy', '--from', nulUrl, '--to', url, ...toFlags]);
    expect(copied.code).toBe(1);
    // Records: the resource's thread, then its messages; the refused one is the second message.
    expect(copied.stderr).toMatch(
      new RegExp(
        `^engram copy: INVALID_ARGUMENT: record 3 \\(message "${saved[1]!.id}"\\) was refused by pg: .*NUL`,
        'm',
      ),
    );
    expect((await storage.listMessagesById({ ids: saved.map((m) => m.id) })).map((m) => m.content)).toEqual([
      'first',
    ]);
  });

  it('a truncated dump and an unknown record version: exit 1 naming the line; the lines before it are written', async () => {
    const exported = await engram(['export', '--store', sourceUrl]);
    const lines = exported.stdout.trimEnd().split('\n');
    const cut = join(tmp.dir, 'cut.jsonl');
    await writeFile(cut, `${lines.slice(0, 10).join('\n')}\n${lines[10]!.slice(0, 40)}`);
    const { flags, storage } = await pgTarget();
    const truncated = await engram(['import', '--store', url, ...flags], cut);
    expect(truncated.code).toBe(1);
    expect(truncated.stderr).toMatch(
      /^engram import: VALIDATION: line 11 is not JSON \(.*\); a dump cut short ends this way: export it again$/m,
    );
    // Lines 1–10: the resource, the thread and 8 messages.
    expect((await storage.listMessages({ threadId: 'acme/t1', perPage: 0 })).total).toBe(8);

    const future = join(tmp.dir, 'future.jsonl');
    const record = { ...JSON.parse(lines[3]!), v: 99 };
    await writeFile(future, `${lines.slice(0, 3).join('\n')}\n\n${JSON.stringify(record)}\n${lines[4]}\n`);
    const other = await pgTarget();
    const versioned = await engram(['import', '--store', url, ...other.flags], future);
    expect(versioned.code).toBe(1);
    // Line 5: the blank line 4 is skipped but counted.
    expect(versioned.stderr).toMatch(
      /^engram import: VALIDATION: line 5 \(message "acme\/t1\/m001"\): unknown record version number 99 \(this reader knows v: 1\)$/m,
    );
    expect(
      await other.storage.listMessagesById({ ids: ['acme/t1/m000', 'acme/t1/m001', 'acme/t1/m002'] }),
    ).toHaveLength(1);
  });

  it('an unknown URL scheme names the known ones; bad usage exits 2', async () => {
    const unknown = await engram(['export', '--store', 'redis://localhost']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(
      /no installed adapter opens redis: URLs; known schemes: file: .*postgres:/,
    );
    const usage = await engram(['import', '--store', sourceUrl, '--on-conflict', 'merge']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--on-conflict is skip, replace or fail/);
  });
});
