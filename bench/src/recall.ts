import {
  createLexicalEmbedder,
  type EmbeddingSpace,
  embedderId,
  Memory,
  type MemoryStorage,
  type Message,
  type MessageVector,
  normalize,
  textHash,
  type VectorStore,
} from '@engram/core';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { type Comparison, compare } from './measure.ts';
import type { RecallTarget } from './target.ts';

/** Dimension of every vector of the recall bench (the lexical embedder's default). */
export const DIMENSIONS = 256;
/** Threads the resource's messages are spread over, round robin. */
const THREADS = 10;
/** Messages (with vectors) of another resource, which every scoped search must leave out. */
const OTHER = 1_000;
const TOP_K = 3;
const RANGE = 2;

/** One recall comparison at one fixture size, for one way of searching. */
export interface RecallRow extends Comparison {
  /** Messages (all with vectors) in the searched resource. */
  messages: number;
  /** `'exact'`, or the index variant's name. */
  variant: string;
}

/** Everything the recall section measured on one adapter. */
export interface RecallAdapterResult {
  adapter: string;
  skipped?: string;
  note?: string;
  /** How the raw side ranks, in words. */
  raw?: string;
  peer?: string;
  rows: RecallRow[];
  /** Seconds to write each size's fixture (messages and vectors), and to build each index. */
  setup: { step: string; seconds: number }[];
}

const embedder = createLexicalEmbedder({ dimensions: DIMENSIONS });
/** The embedding space core records for the lexical embedder. */
export const SPACE: EmbeddingSpace = { id: embedderId(embedder), dimensions: DIMENSIONS };

/** A deterministic generator (pure-rand's xoroshiro128+), so every run searches the same texts. */
function random(seed: number): () => number {
  const generator = xoroshiro128plus(seed);
  return () => uniformFloat64(generator);
}

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'tus',
  'va',
  'zel',
  'dor',
  'pin',
  'sha',
  'qu',
  'bre',
  'nox',
  'fi',
];
const rand = random(18);
/** 600 made-up words, so texts differ in their words and in their character n-grams. */
const VOCABULARY = Array.from({ length: 600 }, () =>
  Array.from(
    { length: 2 + Math.floor(rand() * 2) },
    () => SYLLABLES[Math.floor(rand() * SYLLABLES.length)],
  ).join(''),
);

/** The text of message `i` of a fixture: a dozen words drawn from the vocabulary. */
function textOf(i: number): string {
  const r = random(i + 1);
  return Array.from({ length: 12 }, () => VOCABULARY[Math.floor(r() * VOCABULARY.length)]).join(' ');
}

/** The query of every search: a text of the same kind, not equal to any message. */
export const QUERY = textOf(-7);

/** L2-normalised lexical vectors of `texts`, as core stores them, with core's text hashes. */
async function vectorsOf(texts: { id: string; text: string }[]): Promise<MessageVector[]> {
  const { embeddings } = await embedder.doEmbed({ values: texts.map((t) => t.text) });
  return Promise.all(
    texts.map(async (t, i) => ({
      messageId: t.id,
      hash: textHash(t.text),
      vector: normalize(embeddings[i] as number[]) as Float32Array,
    })),
  );
}

/** The query's vector, as core computes it for `memory.recall({ query })`. */
export async function queryVector(): Promise<Float32Array> {
  const { embeddings } = await embedder.doEmbed({ values: [QUERY] });
  return normalize(embeddings[0] as number[]) as Float32Array;
}

/** Sizes, rounds and time budgets of one run of the section. */
export interface RecallSizes {
  sizes: number[];
  iterations: number;
  budgetMs: number;
}

/**
 * The limit an exact search can reach: a plain scan of the resource's vectors held in one
 * `Float32Array` in this process (normalised vectors, so the dot product is the cosine), keeping
 * the best `topK`. No store, no copy, no scope filter to apply.
 */
export function bruteForce(rows: readonly MessageVector[]): (query: Float32Array, topK: number) => string[] {
  const d = DIMENSIONS;
  const data = new Float32Array(rows.length * d);
  for (const [i, row] of rows.entries()) data.set(row.vector, i * d);
  return (query, topK) => {
    const best: { i: number; score: number }[] = [];
    for (let i = 0; i < rows.length; i++) {
      let dot = 0;
      for (let j = 0, k = i * d; j < d; j++, k++) dot += (data[k] as number) * (query[j] as number);
      if (best.length === topK && dot <= (best[topK - 1] as { score: number }).score) continue;
      let at = best.length;
      while (at > 0 && dot > (best[at - 1] as { score: number }).score) at--;
      best.splice(at, 0, { i, score: dot });
      if (best.length > topK) best.pop();
    }
    return best.map(({ i }) => (rows[i] as MessageVector).messageId);
  };
}

/** Progress on stderr. */
async function phase<T>(adapter: string, label: string, fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await fn();
  const seconds = (performance.now() - started) / 1000;
  console.error(`  ${adapter}: ${label} ${seconds.toFixed(1)} s`);
  return [result, seconds];
}

/**
 * Grows one resource to each of `sizes` messages (each with a vector, spread over ten threads,
 * next to another resource's thousand), and at each size times, engram against the raw driver's
 * exact scan of the same vectors (and the peer, where one runs):
 * - `searchVectors`: the store's primitive, top 3 in the resource;
 * - `memory.recall`: recall as the user calls it (history, search, hit check, windows of ±2),
 *   with the query's vector already in core's query cache, so no embedding is timed (the bench
 *   counts the embedder's calls to make sure).
 */
export async function benchRecall(
  adapter: string,
  target: RecallTarget,
  fx: RecallSizes,
): Promise<RecallAdapterResult> {
  const { storage, raw, variants = [], seed } = target;
  const vectors = storage.vectors as VectorStore;
  const tag = `recall-${Date.now().toString(36)}`;
  const resourceId = `${tag}-r`;
  const rows: RecallRow[] = [];
  const setup: RecallAdapterResult['setup'] = [];
  let embedCalls = 0;
  const counted = {
    ...embedder,
    doEmbed(options: Parameters<typeof embedder.doEmbed>[0]) {
      embedCalls++;
      return embedder.doEmbed(options);
    },
  };
  const memoryOf = (store: MemoryStorage) =>
    new Memory({
      storage: store,
      embedder: counted,
      options: { semanticRecall: { topK: TOP_K, messageRange: RANGE, scope: 'resource', mode: 'vector' } },
    });
  const memory = memoryOf(storage);
  const peer = await target.openPeer?.({
    embedder: counted,
    dimensions: DIMENSIONS,
    topK: TOP_K,
    range: RANGE,
  });
  try {
    await vectors.claimSpace(SPACE);
    const threads: string[] = [];
    for (let t = 0; t < THREADS; t++) {
      threads.push((await memory.createThread({ resourceId, title: `recall ${t}` })).id);
      await peer?.createThread(threads[t] as string, resourceId);
    }
    const other = await memory.createThread({ resourceId: `${tag}-other`, title: 'another resource' });
    await peer?.createThread(other.id, `${tag}-other`);
    // Seconds spent writing the peer's copy of the fixture, reported apart from engram's.
    let peerSeconds = 0;
    /** The searched resource's vectors, for the in-process brute-force limit. */
    const resourceVectors: MessageVector[] = [];
    const write = async (
      from: number,
      to: number,
      thread: (i: number) => string,
      owner: string,
      withPeer: boolean,
    ) => {
      const base = 1_600_000_000_000;
      const batch = target.batch ?? 1_000;
      for (let at = from; at < to; at += batch) {
        const messages: Message[] = [];
        for (let i = at; i < Math.min(to, at + batch); i++) {
          messages.push({
            id: `${owner}-m${i}`,
            threadId: thread(i),
            resourceId: owner,
            role: i % 2 ? 'assistant' : 'user',
            content: textOf(owner === resourceId ? i : 1_000_000 + i),
            type: 'text',
            createdAt: new Date(base + i * 1_000),
          });
        }
        if (seed) await seed(messages);
        else await storage.saveMessages(messages);
        const rows = await vectorsOf(messages.map((m) => ({ id: m.id, text: m.content as string })));
        if (target.seedVectors) await target.seedVectors(rows);
        else await vectors.upsertVectors(SPACE, rows);
        if (owner === resourceId) resourceVectors.push(...rows);
        if (peer && withPeer) {
          const started = performance.now();
          await peer.write(messages, rows);
          peerSeconds += (performance.now() - started) / 1000;
        }
      }
    };
    const [, otherSeconds] = await phase(adapter, `seed ${OTHER} messages of another resource`, () =>
      write(0, OTHER, () => other.id, `${tag}-other`, true),
    );
    setup.push({ step: `${OTHER} messages of another resource`, seconds: otherSeconds - peerSeconds });
    if (peer) setup.push({ step: `peer: ${OTHER} messages of another resource`, seconds: peerSeconds });
    const vector = await queryVector();
    const currentThread = threads[0] as string;
    const recallOnce = (m: Memory) => () =>
      m.recall({ threadId: currentThread, resourceId, query: QUERY, topK: TOP_K });
    const search = (v: VectorStore) => () =>
      v.searchVectors({ space: SPACE, vector, topK: TOP_K, resourceId });
    const scan = () => raw.scan(resourceId, vector, TOP_K);
    const warmup = 3;

    const sizes = fx.sizes.filter((n) => !target.cap || n <= target.cap.messages);
    const capped =
      sizes.length < fx.sizes.length && target.cap
        ? `ran ${sizes.join(', ')} messages, not ${fx.sizes.filter((n) => !sizes.includes(n)).join(', ')}: ${target.cap.reason}`
        : undefined;
    let have = 0;
    const peerAgreement: string[] = [];
    /** What the variants report besides their rows (caps, agreement with the exact top 3). */
    const notes = new Set<string>();
    for (const size of sizes) {
      peerSeconds = 0;
      const peerHere = peer !== undefined && size <= (peer.cap?.messages ?? Number.POSITIVE_INFINITY);
      const [, seconds] = await phase(adapter, `grow the resource to ${size} messages`, () =>
        write(have, size, (i) => threads[i % THREADS] as string, resourceId, peerHere),
      );
      setup.push({ step: `grow to ${size} messages`, seconds: seconds - peerSeconds });
      if (peerHere) setup.push({ step: `peer: grow to ${size} messages`, seconds: peerSeconds });
      have = size;
      await target.settle?.();
      // Same top 3 on both sides, or the comparison would be of different work.
      const [engramHits, rawHits] = [await search(vectors)(), await scan()];
      const ids = (hits: { messageId?: string; id?: string }[]) =>
        hits.map((h) => h.messageId ?? h.id).join(',');
      if (ids(engramHits) !== ids(rawHits as never)) {
        throw new Error(
          `${adapter}: engram's top ${TOP_K} (${ids(engramHits)}) differ from the raw scan's (${ids(rawHits as never)})`,
        );
      }
      if (peer && peerHere) {
        // The peer's top 3 are reported, not required: its libSQL query is approximate.
        const peerHits = ids(await peer.search(resourceId, vector, TOP_K));
        peerAgreement.push(
          `${size}: ${peerHits === ids(engramHits) ? 'the same top 3' : `top 3 ${peerHits}, engram's ${ids(engramHits)}`}`,
        );
      }
      const peerSearch = peer && peerHere ? () => peer.search(resourceId, vector, TOP_K) : undefined;
      const peerRecall = peer && peerHere ? () => peer.recall(currentThread, resourceId, QUERY) : undefined;
      rows.push({
        messages: size,
        variant: 'exact',
        ...(await compare(
          `searchVectors top ${TOP_K} of ${size}`,
          fx.iterations,
          search(vectors),
          scan,
          fx.budgetMs,
          warmup,
          peerSearch,
        )),
      });
      const limit = bruteForce(resourceVectors);
      rows.push({
        messages: size,
        variant: 'exact',
        ...(await compare(
          `limit: searchVectors ÷ in-process brute force, top ${TOP_K} of ${size}`,
          fx.iterations,
          search(vectors),
          async () => limit(vector, TOP_K),
          fx.budgetMs,
          warmup,
        )),
      });
      const callsBefore = embedCalls;
      if (size <= (target.memoryRecallUpTo ?? Number.POSITIVE_INFINITY))
        rows.push({
          messages: size,
          variant: 'exact',
          ...(await compare(
            `memory.recall top ${TOP_K} ±${RANGE} of ${size}`,
            fx.iterations,
            recallOnce(memory),
            scan,
            fx.budgetMs,
            warmup,
            peerRecall,
          )),
        });
      // The first (warm-up) call of each side may embed the query once; timed rounds must not.
      if (embedCalls - callsBefore > (peer ? 2 : 1)) {
        throw new Error(
          `${adapter}: the embedder ran ${embedCalls - callsBefore} times during recall rounds`,
        );
      }
      for (const variant of variants) {
        if (variant.cap && size > variant.cap.messages) {
          notes.add(`${variant.name}: run up to ${variant.cap.messages} messages: ${variant.cap.reason}`);
          continue;
        }
        const [, built] = await phase(adapter, `${variant.name}: build at ${size}`, () => variant.before());
        setup.push({ step: `${variant.name} built at ${size} messages`, seconds: built });
        try {
          const indexed = memoryOf(variant.storage);
          const own = variant.raw;
          const variantScan = own ? () => own.scan(resourceId, vector, TOP_K) : scan;
          if (own && !variant.approximate) {
            // An exact variant with a raw scan of its own: the same top 3 on both sides.
            const [hits, rawHits] = [
              await search(variant.storage.vectors as VectorStore)(),
              await variantScan(),
            ];
            if (ids(hits) !== ids(rawHits)) {
              throw new Error(
                `${adapter}, ${variant.name}: engram's top ${TOP_K} (${ids(hits)}) differ from its raw scan's (${ids(rawHits)})`,
              );
            }
          } else {
            // An approximate variant: its top 3 are reported against the exact ones.
            const hits = ids(await search(variant.storage.vectors as VectorStore)());
            notes.add(
              `${variant.name} at ${size}: ${hits === ids(engramHits) ? 'the exact top 3' : `top 3 ${hits}, exact ${ids(engramHits)}`}`,
            );
          }
          rows.push({
            messages: size,
            variant: variant.name,
            ...(await compare(
              `searchVectors top ${TOP_K} of ${size}, ${variant.name}`,
              fx.iterations,
              search(variant.storage.vectors as VectorStore),
              variantScan,
              fx.budgetMs,
              warmup,
            )),
          });
          rows.push({
            messages: size,
            variant: variant.name,
            ...(await compare(
              `memory.recall top ${TOP_K} ±${RANGE} of ${size}, ${variant.name}`,
              fx.iterations,
              recallOnce(indexed),
              variantScan,
              fx.budgetMs,
              warmup,
            )),
          });
        } finally {
          await variant.after();
        }
      }
    }
    return {
      adapter,
      ...(target.note || capped || notes.size
        ? { note: [target.note, capped, ...notes].filter(Boolean).join('; ') }
        : {}),
      raw: [
        raw.describe,
        ...variants.filter((v) => v.raw).map((v) => `${v.name} rows: ${v.raw?.describe}`),
      ].join('; '),
      ...(peer
        ? {
            peer: `${peer.name}; ${peer.describe}; its top 3 against engram's at ${peerAgreement.join(', ')}${peer.cap && sizes.some((n) => n > (peer.cap?.messages ?? 0)) ? `; run up to ${peer.cap.messages} messages: ${peer.cap.reason}` : ''}`,
          }
        : {}),
      rows,
      setup,
    };
  } finally {
    await peer?.close();
  }
}
