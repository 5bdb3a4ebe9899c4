import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { Memory, type Message, type Thread } from '@engram/core';
import { ContentionPool, type ContentionResult } from './contention.ts';
import { TEMPLATE } from './mastra.ts';
import { compare } from './measure.ts';
import { type AdapterResult, type BenchRun, scalingChart, toMarkdown } from './report.ts';
import type { BenchTarget, OpenTarget, Peer } from './target.ts';
import { ADAPTER_NAMES, loadTarget } from './targets.ts';

// `pnpm <script> -- --flag` hands the `--` on to the script: skip it.
const argv = process.argv.slice(2);
const { values } = parseArgs({
  args: argv[0] === '--' ? argv.slice(1) : argv,
  options: {
    adapters: { type: 'string', default: ADAPTER_NAMES.join(',') },
    quick: { type: 'boolean', default: false },
    recall: { type: 'boolean', default: false },
    retrieval: { type: 'boolean', default: false },
    'retrieval-latency': { type: 'boolean', default: false },
    /** `--retrieval` ranks the vector list with GloVe word vectors (path, or `default`). */
    'word-vectors': { type: 'string' },
    observations: { type: 'boolean', default: false },
    out: { type: 'string', default: new URL('../results/', import.meta.url).pathname },
  },
});
const quick = values.quick;
if (values.recall) {
  // The semantic recall section runs on its own (src/recall-main.ts).
  const { runRecall } = await import('./recall-main.ts');
  await runRecall(values.adapters.split(','), quick, values.out);
  process.exit(0);
}
if (values.retrieval || values['retrieval-latency']) {
  // Retrieval quality and keyword latency run on their own (src/retrieval-main.ts).
  const { runRetrieval, runRetrievalLatency } = await import('./retrieval-main.ts');
  const { DEFAULT_WORD_VECTORS } = await import('./word-vectors.ts');
  const adapters = values.adapters.split(',');
  const wordVectors = values['word-vectors'];
  if (values.retrieval)
    await runRetrieval(
      adapters,
      quick,
      values.out,
      wordVectors === 'default' ? DEFAULT_WORD_VECTORS : wordVectors,
    );
  if (values['retrieval-latency']) await runRetrievalLatency(adapters, quick, values.out);
  process.exit(0);
}
if (values.observations) {
  // The observational-memory section runs on its own (src/observations.ts).
  const { runObservations } = await import('./observations.ts');
  await runObservations(values.adapters.split(','), quick, values.out);
  process.exit(0);
}
const sizes = quick
  ? { iterations: 60, budgetMs: 4_000, small: 1_000, large: 20_000, threads: 1_000, processes: 8, merges: 25 }
  : {
      iterations: 300,
      budgetMs: 30_000,
      small: 1_000,
      large: 100_000,
      threads: 10_000,
      processes: 8,
      merges: 50,
    };

const run: BenchRun = {
  date: new Date().toISOString(),
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
  quick,
  results: [],
};

for (const name of values.adapters.split(',')) {
  const target = await loadTarget(name);
  const reason = target.unavailable();
  if (reason) {
    console.log(`${name}: skipped — ${reason}`);
    run.results.push({ adapter: name, skipped: reason, comparisons: [] });
    continue;
  }
  const started = performance.now();
  try {
    const cap = (await target.fixtureCap?.()) ?? null;
    const fx = cap
      ? {
          ...sizes,
          large: Math.min(sizes.large, cap.messages),
          threads: Math.min(sizes.threads, cap.threads),
        }
      : sizes;
    const note =
      cap && (fx.large < sizes.large || fx.threads < sizes.threads)
        ? `ran ${fx.large} messages and ${fx.threads} threads instead of ${sizes.large} and ${sizes.threads}: ${cap.reason}`
        : undefined;
    run.results.push(await benchAdapter(name, target, await target.open({ peer: true }), fx, note));
  } finally {
    await target.dispose?.();
  }
  console.log(`${name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

mkdirSync(values.out, { recursive: true });
const stamp = run.date.slice(0, 10);
const markdown = toMarkdown(run);
writeFileSync(`${values.out}/${stamp}${quick ? '-quick' : ''}.json`, `${JSON.stringify(run, null, 2)}\n`);
writeFileSync(`${values.out}/${stamp}${quick ? '-quick' : ''}.md`, markdown);
writeFileSync(`${values.out}/${stamp}${quick ? '-quick' : ''}-scaling.svg`, scalingChart(run));
console.log(`\n${markdown}`);

/** Progress on stderr: what ran, and how long it took. */
async function phase<T>(adapter: string, label: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await fn();
  console.error(`  ${adapter}: ${label} ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

async function benchAdapter(
  adapter: string,
  target: BenchTarget,
  opened: OpenTarget,
  fx: typeof sizes,
  note: string | undefined,
): Promise<AdapterResult> {
  const { storage, raw, peer } = opened;
  const memory = new Memory({
    storage,
    options: { workingMemory: { enabled: true, schema: { type: 'object' } } },
  });
  const templateMemory = new Memory({
    storage,
    options: { workingMemory: { enabled: true, template: TEMPLATE } },
  });
  const tag = `bench-${Date.now().toString(36)}`;
  const resourceId = `${tag}-r`;
  const comparisons = [];
  try {
    const initial = { name: 'Ada', city: 'London', n: 0 };
    await memory.mergeWorkingMemory({ resourceId, workingMemory: initial });
    await peer?.replaceWorkingMemory(resourceId, JSON.stringify(initial));
    const warmup = Math.min(20, Math.ceil(fx.iterations / 5));
    comparisons.push(
      await compare(
        'getWorkingMemory',
        fx.iterations,
        () => memory.getWorkingMemory({ resourceId }),
        () => raw.getWorkingMemory(resourceId),
        fx.budgetMs,
        warmup,
        peer && (() => peer.getWorkingMemory(resourceId)),
      ),
    );
    const document = (i: number) => `${TEMPLATE}- Note: round ${i}\n`;
    comparisons.push(
      await compare(
        'updateWorkingMemory (replace, template mode)',
        fx.iterations,
        (i) =>
          templateMemory.updateWorkingMemory({
            resourceId: `${resourceId}-replace`,
            workingMemory: document(i),
          }),
        (i) => raw.replaceWorkingMemory(`${resourceId}-replace-raw`, document(i)),
        fx.budgetMs,
        warmup,
        peer && ((i) => peer.replaceWorkingMemory(`${resourceId}-replace`, document(i))),
      ),
    );
    comparisons.push(
      await compare(
        'mergeWorkingMemory',
        fx.iterations,
        (i) => memory.mergeWorkingMemory({ resourceId, workingMemory: { a: i } }),
        (i) => raw.mergeWorkingMemory(resourceId, { b: i }),
        fx.budgetMs,
        warmup,
        peer && ((i) => peer.mergeWorkingMemory(resourceId, { c: i })),
      ),
    );

    const thread = await memory.createThread({ resourceId, title: 'batches' });
    const rawThread = await memory.createThread({ resourceId, title: 'raw batches' });
    const peerThread = `${tag}-peer-batches`;
    await peer?.createThread(peerThread, resourceId);
    let seq = 0;
    const batch = (threadId: string): Message[] =>
      Array.from({ length: 20 }, (_, k) => ({
        id: `${tag}-m${seq++}`,
        threadId,
        resourceId,
        role: k % 2 ? 'assistant' : 'user',
        content: { format: 2, parts: [{ type: 'text', text: `message ${seq} with some ordinary text` }] },
        type: 'v2',
        createdAt: new Date(1_700_000_000_000 + seq),
      }));
    comparisons.push(
      await compare(
        'saveMessages (20)',
        fx.iterations,
        () => storage.saveMessages(batch(thread.id)),
        () => raw.saveMessages(batch(rawThread.id)),
        fx.budgetMs,
        warmup,
        peer && (() => peer.saveMessages(batch(peerThread))),
      ),
    );
    const withoutKeywords = await target.openWithoutKeywords?.();
    if (withoutKeywords) {
      // The same save through a store with the keyword index off: what the index costs a save.
      const offThread = await memory.createThread({ resourceId, title: 'batches, keyword index off' });
      try {
        comparisons.push(
          await compare(
            'saveMessages (20), keyword index off',
            fx.iterations,
            () => withoutKeywords.saveMessages(batch(offThread.id)),
            () => raw.saveMessages(batch(rawThread.id)),
            fx.budgetMs,
            warmup,
            peer && (() => peer.saveMessages(batch(peerThread))),
          ),
        );
      } finally {
        await withoutKeywords.close();
      }
      // That store left the index to rebuild at the next open: done now, so that the contention
      // workers open a whole index (and the rebuild's time is reported, not timed as a row).
      await phase(adapter, 'keyword index rebuilt after keywords: false', async () =>
        (await target.open()).close(),
      );
    }

    const scalingThreads = [];
    for (const size of [fx.small, fx.large]) {
      const t = await memory.createThread({ resourceId, title: `${size} messages` });
      await phase(adapter, `seed ${size} messages`, () =>
        seedMessages(opened, t.id, resourceId, size, `${tag}-s${size}`),
      );
      scalingThreads.push(t.id);
    }
    // The peer lists a thread of the small size only: seeding the large one through it would
    // take most of the run.
    const peerSmall = `${tag}-peer-s${fx.small}`;
    if (peer) {
      await peer.createThread(peerSmall, resourceId);
      await phase(adapter, `seed ${fx.small} messages (peer)`, () =>
        seedPeer(peer, peerSmall, resourceId, fx.small),
      );
    }
    const newest = [];
    for (const [i, threadId] of scalingThreads.entries()) {
      const c = await compare(
        `listMessages newest 20 of ${i === 0 ? fx.small : fx.large}`,
        fx.iterations,
        () => storage.listMessages({ threadId, direction: 'DESC', perPage: 20 }),
        () => raw.listNewest(threadId, 20),
        fx.budgetMs,
        warmup,
        i === 0 && peer ? () => peer.listNewest(peerSmall, 20) : undefined,
      );
      comparisons.push(c);
      newest.push(c);
    }

    const threadsOf = `${tag}-many`;
    await phase(adapter, `seed ${fx.threads} threads`, () => seedThreads(opened, threadsOf, fx.threads));
    comparisons.push(
      await compare(
        `listThreads first page of ${fx.threads}`,
        Math.ceil(fx.iterations / 2),
        () => storage.listThreads({ resourceId: threadsOf, perPage: 100 }),
        () => raw.listThreads(threadsOf, 100),
        fx.budgetMs,
      ),
    );
    const [small, large] = newest as [(typeof newest)[0], (typeof newest)[0]];

    const pool = await phase(adapter, `start ${fx.processes} worker processes`, () =>
      ContentionPool.start(adapter, fx.processes),
    );
    let engram: ContentionResult;
    let rawContention: ContentionResult;
    try {
      ({ engram, raw: rawContention } = await phase(adapter, 'contended merges, engram/raw/raw/engram', () =>
        pool.alternated(`${tag}-contended`, fx.merges, opened),
      ));
    } finally {
      await pool.close();
    }
    return {
      adapter,
      ...(note ? { note } : {}),
      ...(peer ? { peer: { name: peer.name, atomicity: peer.atomicity } } : {}),
      comparisons,
      scaling: {
        small: fx.small,
        large: fx.large,
        engram: [small.engram.median, large.engram.median],
        raw: [small.raw.median, large.raw.median],
        ratio: large.engram.median / small.engram.median,
      },
      contention: { engram, raw: rawContention },
    };
  } finally {
    await opened.close();
  }
}

async function seedMessages(
  { storage, seed }: OpenTarget,
  threadId: string,
  resourceId: string,
  count: number,
  prefix: string,
): Promise<void> {
  const base = 1_600_000_000_000;
  for (let from = 0; from < count; from += 1_000) {
    const batch: Message[] = [];
    for (let i = from; i < Math.min(count, from + 1_000); i++) {
      batch.push({
        id: `${prefix}-${i}`,
        threadId,
        resourceId,
        role: i % 2 ? 'assistant' : 'user',
        content: `seeded message ${i}`,
        type: 'text',
        createdAt: new Date(base + i * 1_000),
      });
    }
    if (seed) await seed.messages(batch);
    else await storage.saveMessages(batch);
  }
}

async function seedPeer(peer: Peer, threadId: string, resourceId: string, count: number): Promise<void> {
  const base = 1_600_000_000_000;
  for (let from = 0; from < count; from += 100) {
    const batch: Message[] = [];
    for (let i = from; i < Math.min(count, from + 100); i++) {
      batch.push({
        id: `${threadId}-${i}`,
        threadId,
        resourceId,
        role: i % 2 ? 'assistant' : 'user',
        content: `seeded message ${i}`,
        type: 'v2',
        createdAt: new Date(base + i * 1_000),
      });
    }
    await peer.saveMessages(batch);
  }
}

async function seedThreads({ storage, seed }: OpenTarget, resourceId: string, count: number): Promise<void> {
  const base = 1_600_000_000_000;
  for (let from = 0; from < count; from += 500) {
    const batch: Thread[] = Array.from({ length: Math.min(500, count - from) }, (_, k) => {
      const i = from + k;
      const at = new Date(base + i * 1_000);
      return {
        id: `${resourceId}-t${i}`,
        resourceId,
        title: `thread ${i}`,
        metadata: {},
        createdAt: at,
        updatedAt: at,
      };
    });
    if (seed) {
      await seed.threads(batch);
      continue;
    }
    for (let k = 0; k < batch.length; k += 50) {
      await Promise.all(batch.slice(k, k + 50).map((thread) => storage.saveThread(thread)));
    }
  }
}
