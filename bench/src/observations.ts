import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import {
  InMemoryStore,
  type LanguageModelLike,
  Memory,
  type MemoryStorage,
  type Message,
  observedHistory,
  recallHistory,
  tokensOf,
} from '@engram/core';
import { type Comparison, compare, type Stats, stats, time } from './measure.ts';
import { loadTarget } from './targets.ts';

/**
 * `--observations`: what observational memory costs and saves.
 *
 * - Per turn, on each adapter: `observedHistory` (the log's head and the raw tail) against a
 *   plain history of the newest 20 messages, on a thread whose log is already active; and a whole
 *   turn (save the input, prepare, save the answer) with and without observational memory.
 * - Storage cost per activation, on each adapter: one `head` + `swap` of a log body of the size
 *   the defaults produce (30,000 tokens of observations).
 * - Prompt tokens per turn over a scripted 2,000-message conversation, with the defaults, against
 *   the whole conversation and against the newest 20 messages (storage-independent: run once, on
 *   the in-memory store).
 *
 * The Observer and Reflector are mock models answering at once, one line per message (the
 * compression a real model achieves differs: the peer reports 5–40×).
 */

const WORDS =
  'the user talked about travel plans dates budgets friends and a flat in lisbon near the river'.split(' ');

/** A deterministic message text of about `n` words. */
function text(i: number, n: number): string {
  return Array.from({ length: n }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ');
}

/** Mock Observer/Reflector: one short dated line per message observed; the Reflector keeps a third of the lines. */
function mockModel(): LanguageModelLike {
  return {
    specificationVersion: 'v3',
    provider: 'bench',
    modelId: 'mock-observer',
    doGenerate: async ({ prompt }) => {
      const system = prompt.find((m) => m.role === 'system')?.content ?? '';
      const user = prompt.find((m) => m.role === 'user');
      const input = Array.isArray(user?.content) ? user.content.map((p) => p.text).join('') : '';
      let lines: string[];
      if (system.includes('Reflector')) {
        lines = input.split('\n').filter((_, i) => i % 3 === 0);
      } else {
        lines = [...input.matchAll(/<message role="(\w+)" at="([^"]+)">\n([^\n]*)/g)].map(
          (m) =>
            `- ${m[2]?.slice(11)} 🟢 ${m[1] === 'user' ? 'User stated' : 'Assistant said'} ${m[3]?.split(' ').slice(0, 8).join(' ')}`,
        );
      }
      return {
        content: [{ type: 'text', text: `<observations>\n${lines.join('\n')}\n</observations>` }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } },
        warnings: [],
      };
    },
  };
}

function observing(storage: MemoryStorage, messageTokens: number): Memory {
  return new Memory({
    storage,
    onObservationIssue: (issue) => {
      throw issue.error;
    },
    options: {
      observationalMemory: {
        model: mockModel(),
        observation: { messageTokens, bufferTokens: false },
        reflection: { observationTokens: messageTokens * 2 },
      },
    },
  });
}

async function fill(memory: Memory, ids: { threadId: string; resourceId: string }, from: number, n: number) {
  const messages = Array.from({ length: n }, (_, k) => ({
    ...ids,
    role: (from + k) % 2 ? ('assistant' as const) : ('user' as const),
    content: text(from + k, 20 + ((from + k) % 5) * 30),
  }));
  for (let i = 0; i < messages.length; i += 100)
    await memory.saveMessages({ messages: messages.slice(i, i + 100) });
}

interface AdapterRows {
  adapter: string;
  skipped?: string;
  comparisons: Comparison[];
  activation?: { stats: Stats; bodyBytes: number };
}

interface Compression {
  messages: number;
  turns: number;
  /** Mean prompt tokens per turn (history part): whole conversation, newest 20, observational memory. */
  mean: { whole: number; last20: number; observed: number };
  final: { whole: number; last20: number; observed: number };
  generations: number;
}

async function benchAdapter(name: string, quick: boolean): Promise<AdapterRows> {
  const target = await loadTarget(name);
  const reason = target.unavailable();
  if (reason) return { adapter: name, skipped: reason, comparisons: [] };
  const opened = await target.open();
  try {
    const storage = opened.storage;
    await storage.init();
    if (!storage.observations) return { adapter: name, skipped: 'no observations domain', comparisons: [] };
    const iterations = quick ? 40 : 150;
    const budget = quick ? 4_000 : 20_000;
    const run = `${process.pid}-${Date.now()}`;
    const ids = { threadId: `om-bench-t-${run}`, resourceId: `om-bench-r-${run}` };
    const om = observing(storage, 2_000);
    const plain = new Memory({ storage });
    await om.createThread(ids);
    await fill(om, ids, 0, 200);
    await om.observations?.prepare(ids);
    const comparisons: Comparison[] = [];
    comparisons.push(
      await compare(
        'turn context: observations + raw tail ÷ newest 20 (log active)',
        iterations,
        () => observedHistory(om, ids),
        () => recallHistory(plain, { ...ids, last: 20 }),
        budget,
      ),
    );
    const other = { threadId: `${ids.threadId}-plain`, resourceId: ids.resourceId };
    await plain.createThread(other);
    await fill(plain, other, 0, 200);
    let n = 1_000;
    const turn = async (memory: Memory, target: typeof ids, prepare: () => Promise<unknown>) => {
      n += 1;
      await memory.saveMessages({ messages: [{ ...target, role: 'user', content: text(n, 40) }] });
      await prepare();
      await memory.saveMessages({ messages: [{ ...target, role: 'assistant', content: text(n + 1, 60) }] });
    };
    comparisons.push(
      await compare(
        'whole turn (save, prepare, save) with ÷ without observational memory',
        iterations,
        () => turn(om, ids, () => observedHistory(om, ids)),
        () => turn(plain, other, () => recallHistory(plain, { ...other, last: 20 })),
        budget,
      ),
    );
    // Storage cost of one activation: read the head, swap a body of a full default-size log.
    const log = storage.observations;
    const key = `thread:${ids.threadId}-swap`;
    await storage.saveThread({
      id: `${ids.threadId}-swap`,
      resourceId: ids.resourceId,
      title: '',
      metadata: {},
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const body = JSON.stringify({ entries: [{ text: text(1, 22_000) }], chunks: [], threads: [] });
    const durations: number[] = [];
    for (let i = 0; i < iterations; i++) {
      durations.push(
        await time(async () => {
          const head = await log.head(key);
          await log.swap(head && { generation: head.generation, version: head.version }, {
            key,
            resourceId: ids.resourceId,
            threadId: `${ids.threadId}-swap`,
            generation: head?.generation ?? 1,
            version: (head?.version ?? 0) + 1,
            body,
            updatedAt: new Date(),
          });
        }),
      );
    }
    await plain.deleteThread(other.threadId);
    await om.deleteThread(ids.threadId);
    await storage.deleteThread({ threadId: `${ids.threadId}-swap` });
    return {
      adapter: name,
      comparisons,
      activation: { stats: stats(durations), bodyBytes: Buffer.byteLength(body) },
    };
  } finally {
    await opened.close();
    await target.dispose?.();
  }
}

/** Prompt tokens per turn over a scripted conversation (defaults: 30k / 40k), in memory. */
async function compression(messages: number): Promise<Compression> {
  const storage = new InMemoryStore();
  const memory = new Memory({
    storage,
    options: { observationalMemory: { model: mockModel(), observation: { bufferTokens: false } } },
  });
  const ids = { threadId: 't', resourceId: 'r' };
  await memory.createThread(ids);
  const all: Message[] = [];
  const sum = { whole: 0, last20: 0, observed: 0 };
  let last = { whole: 0, last20: 0, observed: 0 };
  const count = (ms: readonly Message[]) => ms.reduce((s, m) => s + tokensOf(String(m.content)) + 4, 0);
  let turns = 0;
  for (let i = 0; i < messages; i += 2) {
    const [user] = await memory.saveMessages({
      messages: [{ ...ids, role: 'user', content: text(i, 30 + (i % 7) * 40) }],
    });
    all.push(user as Message);
    const turn = await observedHistory(memory, ids);
    last = {
      whole: count(all),
      last20: count(all.slice(-20)),
      observed: (turn?.block ? tokensOf(turn.block) : 0) + (turn ? count(turn.history) : 0),
    };
    sum.whole += last.whole;
    sum.last20 += last.last20;
    sum.observed += last.observed;
    turns += 1;
    const [answer] = await memory.saveMessages({
      messages: [{ ...ids, role: 'assistant', content: text(i + 1, 60 + (i % 5) * 50) }],
    });
    all.push(answer as Message);
    await memory.observations?.idle();
  }
  const generations = (await memory.observations?.generations(ids))?.length ?? 0;
  const mean = { whole: sum.whole / turns, last20: sum.last20 / turns, observed: sum.observed / turns };
  return { messages, turns, mean, final: last, generations };
}

const ms = (x: number) => (x < 1 ? x.toFixed(3) : x < 10 ? x.toFixed(2) : x.toFixed(1));

/** Runs the section and writes `<date>[-quick]-observations.json` and `.md` to `out`. */
export async function runObservations(adapters: string[], quick: boolean, out: string): Promise<void> {
  const results: AdapterRows[] = [];
  for (const name of adapters) {
    try {
      results.push(await benchAdapter(name, quick));
    } catch (error) {
      console.error(error);
      results.push({ adapter: name, skipped: `failed: ${(error as Error).message}`, comparisons: [] });
    }
    console.log(`${name}: observations done`);
  }
  const tokens = await compression(2_000);
  const date = new Date().toISOString();
  const lines = [
    `# Observational memory — ${date.slice(0, 10)}${quick ? ' (quick)' : ''}`,
    '',
    `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}. Mock Observer/Reflector answering at once.`,
    '',
    '| adapter | operation | engram median ms | baseline median ms | ratio |',
    '| --- | --- | --- | --- | --- |',
    ...results.flatMap((r) =>
      r.skipped
        ? [`| ${r.adapter} | skipped: ${r.skipped} | | | |`]
        : r.comparisons.map(
            (c) =>
              `| ${r.adapter} | ${c.operation} | ${ms(c.engram.median)} | ${ms(c.raw.median)} | ${c.ratio.toFixed(2)}× |`,
          ),
    ),
    '',
    '| adapter | storage cost per activation (head + swap) | median ms | p99 ms | body bytes |',
    '| --- | --- | --- | --- | --- |',
    ...results.flatMap((r) =>
      r.activation
        ? [
            `| ${r.adapter} | one log of 30,000 tokens | ${ms(r.activation.stats.median)} | ${ms(r.activation.stats.p99)} | ${r.activation.bodyBytes} |`,
          ]
        : [],
    ),
    '',
    `Prompt tokens per turn (history part) over a scripted ${tokens.messages}-message conversation, ${tokens.turns} turns, defaults (30,000 / 40,000), ${tokens.generations} generation(s) at the end:`,
    '',
    '| history shown | mean tokens per turn | at the last turn |',
    '| --- | --- | --- |',
    `| the whole conversation | ${tokens.mean.whole.toFixed(0)} | ${tokens.final.whole} |`,
    `| observational memory (block + raw tail) | ${tokens.mean.observed.toFixed(0)} | ${tokens.final.observed} |`,
    `| newest 20 messages (loses the rest) | ${tokens.mean.last20.toFixed(0)} | ${tokens.final.last20} |`,
    '',
    `Compression (whole ÷ observational, at the last turn): ${(tokens.final.whole / Math.max(1, tokens.final.observed)).toFixed(1)}×; mean over the turns: ${(tokens.mean.whole / Math.max(1, tokens.mean.observed)).toFixed(1)}×.`,
    '',
  ];
  const markdown = lines.join('\n');
  mkdirSync(out, { recursive: true });
  const stamp = `${date.slice(0, 10)}${quick ? '-quick' : ''}-observations`;
  writeFileSync(`${out}/${stamp}.json`, `${JSON.stringify({ date, quick, results, tokens }, null, 2)}\n`);
  writeFileSync(`${out}/${stamp}.md`, markdown);
  console.log(`\n${markdown}`);
}
