import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Service, service } from '@engram/conformance';
import { getWorkingMemoryTools, type Memory, type Message, type TurnRecord } from '@engram/core';
import { Redis } from '@upstash/redis';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import type { StoreSettings } from '../src/open.ts';

/** The JSON Schema of the seeded working memory (JSON mode, so other processes can merge). */
export const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    city: { type: 'string' },
    tasks: { type: 'array', items: { type: 'string' } },
  },
};

/** Hostile strings: each sets `window.__xss` if it ever runs as HTML. */
export const XSS_SCRIPT = '<script>window.__xss = "script"</script>';
export const XSS_IMG = '"><img src=x onerror="window.__xss = \'img\'">';

/** A store the tests point the inspector at: a URL plus settings, and how to remove it. */
export interface TestStore {
  spec: string;
  settings: StoreSettings;
  cleanup(): Promise<void>;
}

/** One adapter the browser and CLI tests run against, gated like every adapter test. */
export interface AdapterCase {
  name: string;
  /** `null` for libSQL (embedded: always available). */
  service: Service | null;
  create(url: string, dir: string): Promise<TestStore>;
}

function rand(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** The JSON Schema file every test store uses. */
export async function schemaFile(dir: string): Promise<string> {
  const path = join(dir, 'schema.json');
  await writeFile(path, JSON.stringify(SCHEMA));
  return path;
}

export const ADAPTERS: AdapterCase[] = [
  {
    name: 'libsql',
    service: null,
    async create(_url, dir) {
      return {
        spec: `file:${join(dir, `${rand('memory')}.db`)}`,
        settings: { schemaFile: await schemaFile(dir) },
        cleanup: async () => undefined,
      };
    },
  },
  {
    name: 'pg',
    service: service('pg', 'ENGRAM_PG_URL', 'start a server with scripts/pg.sh'),
    async create(url, dir) {
      const pgSchema = rand('inspect');
      return {
        spec: url,
        settings: { schemaFile: await schemaFile(dir), pgSchema },
        cleanup: async () => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
          } finally {
            await client.end();
          }
        },
      };
    },
  },
  {
    name: 'upstash',
    service: service('upstash', 'ENGRAM_UPSTASH_URL', 'start the bridge with scripts/upstash.sh'),
    async create(url, dir) {
      const prefix = rand('engram-test:inspect');
      return {
        spec: url,
        settings: { schemaFile: await schemaFile(dir), prefix },
        cleanup: () => dropUpstashPrefix(url, prefix),
      };
    },
  },
  {
    name: 'mongodb',
    service: service('mongodb', 'ENGRAM_MONGODB_URL', 'start a server with scripts/mongodb.sh'),
    async create(url, dir) {
      const dbName = rand('engram_inspect');
      return {
        spec: url,
        settings: { schemaFile: await schemaFile(dir), dbName },
        cleanup: async () => {
          const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
          try {
            await client.db(dbName).dropDatabase();
          } finally {
            await client.close();
          }
        },
      };
    },
  },
];

async function dropUpstashPrefix(url: string, prefix: string): Promise<void> {
  const token = process.env.ENGRAM_UPSTASH_TOKEN ?? '';
  const client = new Redis({ url, token, automaticDeserialization: false, enableTelemetry: false });
  let cursor = '0';
  do {
    const [next, keys] = (await client.scan(cursor, { match: `${prefix}:*`, count: 1000 })) as [
      string,
      string[],
    ];
    if (keys.length > 0) await client.del(...keys);
    cursor = String(next);
  } while (cursor !== '0');
}

/** A temporary folder, removed by the returned function. */
export async function tempDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'engram-inspect-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** What `seed` wrote. */
export interface Seeded {
  resourceId: string;
  otherResourceId: string;
  trip: string;
  hostileTitle: string;
  groceries: string;
  otherThread: string;
  messageIds: string[];
}

/**
 * One user with three threads (one holding hostile messages and an invalid thread-scoped
 * document), a resource-scoped JSON working memory holding hostile strings, and a second user
 * whose id is itself hostile.
 */
export async function seed(memory: Memory): Promise<Seeded> {
  const resourceId = rand('user');
  const otherResourceId = `<img src=x onerror="window.__xss='resource'">${randomBytes(3).toString('hex')}`;
  const trip = await memory.createThread({
    resourceId,
    title: 'Trip planning',
    metadata: { topic: 'travel' },
  });
  const hostile = await memory.createThread({
    resourceId,
    title: `Title ${XSS_SCRIPT}`,
    metadata: { topic: 'x' },
  });
  const groceries = await memory.createThread({
    resourceId,
    title: 'Groceries',
    metadata: { topic: 'food' },
  });
  const other = await memory.createThread({ resourceId: otherResourceId, title: 'Other user' });
  const saved = await memory.saveMessages({
    messages: [
      { threadId: trip.id, resourceId, role: 'user', content: `I live in Berlin. ${XSS_SCRIPT}` },
      { threadId: trip.id, resourceId, role: 'assistant', content: `Noted! ${XSS_IMG}` },
      {
        threadId: trip.id,
        resourceId,
        role: 'user',
        content: { format: 2, parts: [{ type: 'text', text: `Book flights ${XSS_IMG}` }] },
      },
    ],
  });
  await memory.updateWorkingMemory({
    resourceId,
    workingMemory: JSON.stringify({
      name: `Ada ${XSS_SCRIPT}`,
      city: `Berlin ${XSS_IMG}`,
      tasks: ['book flights'],
    }),
  });
  // A thread-scoped document that fails the schema (written directly, as an older version might have).
  await memory.storage.updateThread({
    id: trip.id,
    metadata: { workingMemory: JSON.stringify({ name: 42, city: 'Paris' }) },
  });
  return {
    resourceId,
    otherResourceId,
    trip: trip.id,
    hostileTitle: hostile.id,
    groceries: groceries.id,
    otherThread: other.id,
    messageIds: saved.map((m) => m.id),
  };
}

const MERGE_WORKER = fileURLToPath(new URL('./fixtures/merge-worker.ts', import.meta.url));
const TSX = fileURLToPath(import.meta.resolve('tsx'));

/**
 * Merges `patch` into the resource's working memory from another OS process (its own store and
 * connection). Resolves as soon as the child reports the merge done, with that moment (ms).
 */
export function mergeInAnotherProcess(
  store: TestStore,
  resourceId: string,
  patch: Record<string, unknown>,
): Promise<{ mergedAt: number; pid: number }> {
  const child = spawn(
    process.execPath,
    ['--conditions=source', '--import', TSX, MERGE_WORKER, JSON.stringify({ store, resourceId, patch })],
    { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve, reject) => {
    let merged = false;
    child.stdout.on('data', (chunk) => {
      if (!merged && String(chunk).includes('merged')) {
        merged = true;
        resolve({ mergedAt: Date.now(), pid: child.pid ?? 0 });
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (!merged) reject(new Error(`merge worker exited with ${code}: ${stderr}`));
    });
  });
}

/** The last part `engram-inspect prompt` prints: the memory tools offered beside the prompt. */
export async function toolsSection(
  memory: Memory,
  ids: { threadId: string; resourceId: string },
): Promise<string> {
  const tools = Object.values(await getWorkingMemoryTools(memory, ids));
  const lines = tools.flatMap((t) => [
    `${t.name}: ${t.description}`,
    `  input: ${JSON.stringify(t.inputSchema)}`,
  ]);
  return ['tools offered beside the prompt:', ...lines].join('\n');
}

/** What `recordTurns` wrote: the thread and its two turn records, newest first. */
export interface RecordedTurns {
  threadId: string;
  resourceId: string;
  /** The records as `listTurns` returns them, newest first. */
  turns: TurnRecord[];
  /** The message the second turn recalled, from another thread. */
  recalled: Message;
}

/**
 * Two turns of a new thread recorded as `memoryStep` records them (`recordTurn`): the first with
 * no history, the second with the first turn's two messages as its window and one recall hit
 * from another thread of the resource.
 */
export async function recordTurns(memory: Memory, resourceId: string): Promise<RecordedTurns> {
  const threadId = rand('turns');
  const elsewhere = rand('elsewhere');
  await memory.createThread({ threadId, resourceId, title: 'Turns' });
  await memory.createThread({ threadId: elsewhere, resourceId, title: 'Elsewhere' });
  const [recalled] = await memory.saveMessages({
    messages: [{ threadId: elsewhere, resourceId, role: 'user', content: 'My dog is Biscuit' }],
  });
  const prepared = (history: Message[], input: string) => ({
    threadId,
    resourceId,
    createdAt: new Date(),
    system: 'You are helpful.',
    history,
    input: [{ content: input }],
  });
  const first = await memory.saveMessages({
    messages: [
      { threadId, resourceId, role: 'user', content: 'Hello' },
      { threadId, resourceId, role: 'assistant', content: 'Hi!' },
    ],
  });
  await memory.recordTurn(prepared([], 'Hello'), first);
  const second = await memory.saveMessages({
    messages: [
      { threadId, resourceId, role: 'user', content: 'What is my dog called?' },
      { threadId, resourceId, role: 'assistant', content: 'Biscuit.' },
    ],
  });
  const hit = {
    message: recalled!,
    threadId: elsewhere,
    score: 1.25,
    scores: { keyword: 1.25 },
    window: [recalled!],
  };
  await memory.recordTurn(
    {
      ...prepared(first, 'What is my dog called?'),
      recall: { mode: 'keyword', result: { hits: [hit], usage: { tokens: 0, calls: 0 } } },
    },
    second,
  );
  return { threadId, resourceId, turns: await memory.listTurns({ threadId }), recalled: recalled! };
}
