/**
 * How long `memory.deleteResource` takes for one resource of N messages (default 100,000, in
 * threads of 1,000, each message with a vector), next to another resource that must stay, on
 * each adapter whose test service is configured (the same variables as the tests). One run each.
 *
 *   node --import tsx --conditions=source scripts/purge-time.ts [messages] [adapter…]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Memory, type MemoryStorage, type Message } from '@engram/core';
import type { AdapterDescriptor } from '@engram/core/driver';

const [size = 100_000, ...only] = process.argv.slice(2).map((a, i) => (i === 0 ? Number(a) : a)) as [
  number,
  ...string[],
];
const PER_THREAD = 1_000;
const SPACE = { id: 'bench:purge', dimensions: 8 };

async function descriptorOf(name: string): Promise<AdapterDescriptor> {
  const { descriptor } = (await import(`@engram/${name}/descriptor`)) as { descriptor: AdapterDescriptor };
  return descriptor;
}

async function seed(storage: MemoryStorage, resourceId: string, count: number): Promise<void> {
  await storage.vectors?.claimSpace(SPACE);
  for (let from = 0; from < count; from += PER_THREAD) {
    const threadId = `${resourceId}-t${from / PER_THREAD}`;
    await storage.saveThread({
      id: threadId,
      resourceId,
      title: '',
      metadata: {},
      createdAt: new Date(from),
      updatedAt: new Date(from),
    });
    const messages: Message[] = Array.from({ length: Math.min(PER_THREAD, count - from) }, (_, i) => ({
      id: `${threadId}-m${i}`,
      threadId,
      resourceId,
      role: 'user',
      content: `message ${from + i} about the purge`,
      type: 'text',
      createdAt: new Date(from + i),
    }));
    await storage.saveMessages(messages);
    await storage.vectors?.upsertVectors(
      SPACE,
      messages.map((m, i) => {
        const v = Float32Array.from({ length: SPACE.dimensions }, (_, j) => Math.cos(i + j));
        const norm = Math.hypot(...v);
        return { messageId: m.id, hash: m.id, vector: v.map((x) => x / norm) };
      }),
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), 'engram-purge-'));
try {
  for (const name of only.length ? only : ['libsql', 'pg', 'upstash', 'mongodb']) {
    const descriptor = await descriptorOf(name);
    const service = descriptor.service;
    const place = service
      ? await service.provision(`purge_${process.pid}`).catch((error: Error) => {
          console.log(`${name}: skipped — ${error.message}`);
          return null;
        })
      : { url: `file:${dir}/purge.db`, options: {}, drop: async () => {} };
    if (!place) continue;
    const storage = await descriptor.open(place.url, place.options);
    try {
      const seeded = performance.now();
      await seed(storage, 'victim', size);
      await seed(storage, 'neighbour', PER_THREAD);
      const seconds = (performance.now() - seeded) / 1000;
      const started = performance.now();
      const counts = await new Memory({ storage }).deleteResource({ resourceId: 'victim' });
      const purge = (performance.now() - started) / 1000;
      const left = await storage.listThreads({ resourceId: 'neighbour', perPage: false });
      console.log(
        `${name}: deleteResource of ${size} messages took ${purge.toFixed(1)} s (${Math.round(size / purge)} messages/s; seeding took ${seconds.toFixed(0)} s); counts ${JSON.stringify(counts)}; neighbour threads left ${left.total}`,
      );
    } finally {
      await storage.close();
      await place.drop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
