import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { capabilitiesOf, type JsonObject, Memory, type MemoryStorage, type Message } from '@engram/core';
import { at } from '../fixtures.ts';
import { conformanceModel, observedContent } from '../observer.ts';
import { conformanceEmbedder, random } from '../vectors.ts';
import { ackKey, purgeWriter, signalFile, untilFile } from './purge-writers.ts';
import { waitForFile } from './signal.ts';

/** One racing workload. Every racer writes keys of its own; all of them must survive. */
export type RaceTask =
  /**
   * `updateWorkingMemoryAtomically` merges into one resource's memory; with `refuseEvery` n, in
   * every n ops one update function throws at each call and one at a call after the first (a key
   * ending in `REFUSED` reports a throw that came back as-is).
   */
  | { kind: 'resource-merge'; resourceId: string; ops: number; refuseEvery?: number }
  /** `updateWorkingMemoryAtomically` merges into one thread's memory. */
  | { kind: 'thread-merge'; threadId: string; ops: number }
  /** `updateThread` metadata merges into one thread. */
  | { kind: 'thread-metadata'; threadId: string; ops: number }
  /** `updateResource` metadata merges into one resource. */
  | { kind: 'resource-metadata'; resourceId: string; ops: number }
  /** One atomic merge per racer into each of several resources that do not exist yet. */
  | { kind: 'first-merge'; resourceIds: string[] }
  /** One `updateResource` metadata merge per racer into each of several missing resources. */
  | { kind: 'first-metadata'; resourceIds: string[] }
  /** `init()` of a store nothing has initialised, then a thread and a resource metadata key each. */
  | { kind: 'init'; resourceId: string }
  /**
   * `Memory.createThread` of each of several new thread ids, racer `p<n>` for its own resource
   * `<resourcePrefix>-p<n>`: exactly one racer per id may succeed, the others get `CONFLICT`.
   */
  | { kind: 'create-thread'; threadIds: string[]; resourcePrefix: string }
  /**
   * `saveMessages` of each of several new message ids, racer `p<n>` into its own thread
   * `<threadPrefix>-p<n>` of its own resource `<resourcePrefix>-p<n>` (created beforehand):
   * exactly one racer per id may succeed, the others get `CONFLICT`.
   */
  | { kind: 'save-message'; messageIds: string[]; threadPrefix: string; resourcePrefix: string }
  /**
   * `ops` saves each of one new message into one thread, dated when it is saved (ids
   * `<threadId>-p<n>-<j>`), while the parent reads the thread's `updatedAt` (`updated-at.ts`).
   */
  | { kind: 'save-now'; threadId: string; resourceId: string; ops: number }
  /**
   * `ops` compare-and-set swaps of one observation log (`observations.swap`), each adding the
   * racer's entry `p<n>-<j>` to the body; every third one starts a new generation.
   */
  | { kind: 'observation-swap'; threadId: string; resourceId: string; ops: number }
  /**
   * `turns` turns of observational memory (tiny thresholds, the suite's mock Observer): each saves
   * a user message, prepares the turn, saves an answer. Racer `p<n>` uses thread
   * `threadIds[n % threadIds.length]` of `resourceId`; `scope` is the log's.
   */
  | {
      kind: 'observation-turns';
      threadIds: string[];
      resourceId: string;
      turns: number;
      scope: 'thread' | 'resource';
    }
  /** `Memory.saveMessages` with semantic recall of the same messages (same ids and text). */
  | { kind: 'embed-save'; threadId: string; resourceId: string; ids: string[] }
  /**
   * `ops` saves (into one of `threadIds`: new ids, and moves of existing ones), updates and
   * deletes of a few of `messageIds` each, in an order seeded by the racer.
   */
  | { kind: 'mixed-messages'; threadIds: string[]; resourceId: string; messageIds: string[]; ops: number }
  /**
   * Writes the file `ready`, waits for the file `trigger`, replaces the working memory of one
   * thread (`updateThread` metadata) or resource (`updateResource`) with `value`, then writes
   * `done`: a plain write placed inside another process's atomic update (`interleaved.ts`).
   */
  /**
   * Merges until the file `stop` exists, racer 0 in `chains` parallel loops, the others in one: `updateThread` and
   * `updateResource` metadata keys and, on atomic stores, working-memory keys of the thread and
   * the resource. The first loop of racer 0 patches the content of message `messageId` instead
   * (`updateMessages`, the content alone), back to back. Racer 0 writes all along
   * and, once its first merge is acknowledged, writes its pid to the file `ready`, so that the
   * suite can stop it while it holds a lock (`stopped.ts`); the others merge only while the file
   * `window` exists.
   */
  | {
      kind: 'merge-until-stopped';
      threadId: string;
      resourceId: string;
      messageId: string;
      chains: number;
      ready: string;
      window: string;
      stop: string;
    }
  /**
   * Writers racing a `deleteResource` (`purge-writers.ts`): racer `p<n>` runs `rounds` rounds as
   * writer `p<n>`, or until the file `stop` exists; the first racer to write writes the file `ready`.
   * Reported keys: one `ackKey` per acknowledged write; refusals count as conflicts.
   */
  | { kind: 'purge-writers'; resourceId: string; rounds: number; stop: string; ready: string }
  /** `Memory.importRecords` of one dump (records as JSON text gives them back) with `onConflict: 'skip'`. */
  | { kind: 'import-dump'; records: unknown[] }
  | {
      kind: 'replace-on-signal';
      scope: 'thread' | 'resource';
      id: string;
      value: string;
      ready: string;
      trigger: string;
      done: string;
    };

/** What one racer did: the keys it was told were written, and the calls that failed. */
export interface RacerReport {
  written: string[];
  /** `CONFLICT` after bounded retries is allowed by the contract; the key is then not expected. */
  conflicts: number;
  /** Any other failure, described. */
  failures: string[];
}

/** Parses stored working memory as a JSON object; anything else counts as `{}`. */
export function parseObject(value: unknown): JsonObject {
  if (typeof value !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as JsonObject)
      : {};
  } catch {
    return {};
  }
}

/** The suffix of the keys of merges whose update function threw (`resource-merge`'s `refuseEvery`). */
export const REFUSED = '-refused';

/** What a racer's op resolves with when the key it wrote is not the op's own (`record`). */
class WrittenAs {
  constructor(readonly key: string) {}
}

class Refusal extends Error {}

/** Never notified: `Atomics.wait` on it only sleeps. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * An atomic merge of `key` whose update function throws: on every call (`always`), or on any call
 * after the first (`onRetry`: only when the store calls it again after a lost race, where it may
 * hold a lock or lease). Resolves with the key, suffixed `REFUSED` when the store handed the throw
 * back as-is (that key is then checked absent); fails when the store did anything else.
 */
async function refusableUpdate(
  store: MemoryStorage,
  resourceId: string,
  key: string,
  refuse: 'always' | 'onRetry',
): Promise<WrittenAs> {
  let calls = 0;
  const update = (current: string | null): string => {
    calls++;
    if (refuse === 'always' || calls > 1) throw new Refusal(`update of ${key} refused`);
    // The update functions are synchronous: this process stands still for 3 ms while the other
    // racers write, so a store that compares and sets mostly loses this first attempt.
    Atomics.wait(PAUSE, 0, 0, 3);
    return addKey(key)(current);
  };
  const refused = new WrittenAs(`${key}${refuse === 'onRetry' ? '-retry' : ''}${REFUSED}`);
  try {
    await atomic(store)({ scope: 'resource', resourceId, update });
  } catch (error) {
    if (error instanceof Refusal) return refused;
    throw error;
  }
  if (refuse === 'always')
    throw new Error(`the atomic update of ${key} resolved although its update function threw`);
  return new WrittenAs(key);
}

/** A pure update function that adds `key` to a JSON object document. */
export function addKey(key: string): (current: string | null) => string {
  return (current) => JSON.stringify({ ...parseObject(current), [key]: true });
}

/** The keys racer `racer` writes for `task`, in order, each with the call that writes it. */
export function racerOps(
  task: RaceTask,
  racer: number,
): { key: string; run: (store: MemoryStorage) => Promise<unknown> }[] {
  const keys = (n: number) => Array.from({ length: n }, (_, j) => `p${racer}-${j}`);
  switch (task.kind) {
    case 'resource-merge':
      return keys(task.ops).map((key, j) => {
        // With `refuseEvery` n, in every n ops one refuses at every call and one at a second call;
        // which one depends on the racer, so others write while it stands still in its first.
        const n = task.refuseEvery ?? 0;
        const at = n ? (j + 1) % n : -1;
        const refuse = at === 0 ? 'always' : n > 1 && at === 1 + (racer % (n - 1)) ? 'onRetry' : undefined;
        return {
          key,
          run: (s) =>
            refuse
              ? refusableUpdate(s, task.resourceId, key, refuse)
              : atomic(s)({ scope: 'resource', resourceId: task.resourceId, update: addKey(key) }),
        };
      });
    case 'thread-merge':
      return keys(task.ops).map((key) => ({
        key,
        run: (s) => atomic(s)({ scope: 'thread', threadId: task.threadId, update: addKey(key) }),
      }));
    case 'thread-metadata':
      return keys(task.ops).map((key) => ({
        key,
        run: (s) => s.updateThread({ id: task.threadId, metadata: { [key]: true } }),
      }));
    case 'resource-metadata':
      return keys(task.ops).map((key) => ({
        key,
        run: (s) => s.updateResource({ resourceId: task.resourceId, metadata: { [key]: true } }),
      }));
    case 'first-merge':
      return task.resourceIds.map((resourceId) => ({
        key: `${resourceId}/p${racer}`,
        run: (s) => atomic(s)({ scope: 'resource', resourceId, update: addKey(`p${racer}`) }),
      }));
    case 'observation-swap':
      return Array.from({ length: task.ops }, (_, j) => ({
        key: `p${racer}-${j}`,
        run: (s) => swapEntry(s, task, `p${racer}-${j}`, j % 3 === 2),
      }));
    case 'observation-turns':
      return [{ key: `p${racer}`, run: (s) => observationTurns(s, task, racer) }];
    case 'embed-save':
      return [
        {
          key: `p${racer}`,
          run: (s) => {
            const memory = new Memory({
              storage: s,
              embedder: conformanceEmbedder(),
              onEmbeddingError: (error) => {
                throw error;
              },
              options: { semanticRecall: true },
            });
            return memory.saveMessages({
              messages: task.ids.map((id, i) => ({
                id,
                threadId: task.threadId,
                resourceId: task.resourceId,
                role: 'user' as const,
                content: `v:${i}`,
                createdAt: at(i),
              })),
            });
          },
        },
      ];
    case 'mixed-messages':
      return mixedMessageOps(task, racer);
    case 'first-metadata':
      return task.resourceIds.map((resourceId) => ({
        key: `${resourceId}/p${racer}`,
        run: (s) => s.updateResource({ resourceId, metadata: { [`p${racer}`]: true } }),
      }));
    case 'init':
      return [
        { key: initKey(racer), run: (s) => s.init() },
        {
          key: initThreadId(task.resourceId, racer),
          run: (s) => s.saveThread(initThread(task.resourceId, racer)),
        },
        {
          key: `p${racer}`,
          run: (s) => s.updateResource({ resourceId: task.resourceId, metadata: { [`p${racer}`]: true } }),
        },
      ];
    case 'create-thread':
      return task.threadIds.map((threadId) => ({
        key: `${threadId}/p${racer}`,
        run: (s) => new Memory({ storage: s }).createThread(creatorThread(task, threadId, racer)),
      }));
    case 'save-message':
      return task.messageIds.map((id) => ({
        key: `${id}/p${racer}`,
        run: (s) => s.saveMessages([racerMessage(task, id, racer)]),
      }));
    case 'replace-on-signal':
      return [{ key: 'replace', run: (s) => replaceOnSignal(s, task) }];
    case 'import-dump':
      return [
        {
          key: `p${racer}`,
          run: (s) => new Memory({ storage: s }).importRecords(task.records, { onConflict: 'skip' }),
        },
      ];
    case 'merge-until-stopped':
    case 'purge-writers':
      return [];
    case 'save-now':
      return keys(task.ops).map((key) => ({
        key,
        run: (s) =>
          s.saveMessages([
            {
              id: `${task.threadId}-${key}`,
              threadId: task.threadId,
              resourceId: task.resourceId,
              role: 'user',
              content: key,
              type: 'text',
              createdAt: new Date(),
            },
          ]),
      }));
  }
}

/** The saves, updates and deletes of a `mixed-messages` racer, each on one to three ids. */
function mixedMessageOps(
  task: Extract<RaceTask, { kind: 'mixed-messages' }>,
  racer: number,
): { key: string; run: (store: MemoryStorage) => Promise<unknown> }[] {
  const next = random(1_000 + racer);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  return Array.from({ length: task.ops }, (_, j) => {
    const key = `p${racer}-${j}`;
    const ids = [...new Set([pick(task.messageIds), pick(task.messageIds), pick(task.messageIds)])];
    const threadId = pick(task.threadIds);
    const op = next();
    const run =
      op < 0.45
        ? (s: MemoryStorage) =>
            s.saveMessages(
              ids.map((id) => ({
                id,
                threadId,
                resourceId: task.resourceId,
                role: 'user' as const,
                content: key,
                type: 'text' as const,
                createdAt: at(j),
              })),
            )
        : op < 0.75
          ? (s: MemoryStorage) => s.updateMessages(ids.map((id) => ({ id, content: key })))
          : (s: MemoryStorage) => s.deleteMessages(ids);
    return { key, run };
  });
}

/** How often a `merge-until-stopped` racer other than 0 looks for its window. */
const WINDOW_POLL_MS = 5;

/** The four merges of a `merge-until-stopped` racer; a key's prefix names where it goes. */
export const STOPPED_MERGES = [
  'thread-metadata',
  'resource-metadata',
  'thread-memory',
  'resource-memory',
] as const;

/** The prefix of the keys racer 0 of `merge-until-stopped` writes as the content of its message. */
export const MESSAGE_CONTENT = 'message-content';

/** Where key `key` of a `merge-until-stopped` racer was merged. */
export function mergeOf(key: string): (typeof STOPPED_MERGES)[number] | typeof MESSAGE_CONTENT {
  return key.slice(0, key.indexOf(':')) as (typeof STOPPED_MERGES)[number] | typeof MESSAGE_CONTENT;
}

async function mergeUntilStopped(
  store: MemoryStorage,
  task: Extract<RaceTask, { kind: 'merge-until-stopped' }>,
  racer: number,
  report: RacerReport,
): Promise<void> {
  const atomicMerges = capabilitiesOf(store).atomicWorkingMemory && !!store.updateWorkingMemoryAtomically;
  const merges = atomicMerges ? STOPPED_MERGES : STOPPED_MERGES.slice(0, 2);
  const merge = (kind: (typeof STOPPED_MERGES)[number] | typeof MESSAGE_CONTENT, key: string) => {
    switch (kind) {
      case MESSAGE_CONTENT:
        return store.updateMessages([{ id: task.messageId, content: key }]);
      case 'thread-metadata':
        return store.updateThread({ id: task.threadId, metadata: { [key]: true } });
      case 'resource-metadata':
        return store.updateResource({ resourceId: task.resourceId, metadata: { [key]: true } });
      case 'thread-memory':
        return atomic(store)({ scope: 'thread', threadId: task.threadId, update: addKey(key) });
      case 'resource-memory':
        return atomic(store)({ scope: 'resource', resourceId: task.resourceId, update: addKey(key) });
    }
  };
  let ready = false;
  const chain = async (c: number) => {
    // Patches alone, in a loop of their own: a stop almost always finds one under way.
    const kinds = racer === 0 && c === 0 ? ([MESSAGE_CONTENT] as const) : merges;
    for (let j = 0; !existsSync(task.stop); j++) {
      if (racer > 0 && !existsSync(task.window)) {
        await sleep(WINDOW_POLL_MS);
        continue;
      }
      const kind = kinds[(c + j) % kinds.length]!;
      const key = `${kind}:p${racer}-${c}-${j}`;
      if ((await record(report, key, () => merge(kind, key))) && racer === 0 && !ready) {
        ready = true;
        // Written whole, then renamed: the suite never reads a partial pid.
        writeFileSync(`${task.ready}.tmp`, String(process.pid));
        renameSync(`${task.ready}.tmp`, task.ready);
      }
    }
  };
  // The others write in one loop each: they must get in while racer 0 stands still, not crowd it.
  await Promise.all(Array.from({ length: racer === 0 ? task.chains : 1 }, (_, c) => chain(c)));
}

/** How long a `replace-on-signal` racer waits for its trigger. */
const TRIGGER_TIMEOUT_MS = 60_000;

async function replaceOnSignal(
  store: MemoryStorage,
  task: Extract<RaceTask, { kind: 'replace-on-signal' }>,
): Promise<void> {
  writeFileSync(task.ready, '');
  await waitForFile(task.trigger, TRIGGER_TIMEOUT_MS);
  try {
    if (task.scope === 'thread') {
      await store.updateThread({ id: task.id, metadata: { workingMemory: task.value } });
    } else {
      await store.updateResource({ resourceId: task.id, workingMemory: task.value });
    }
    writeFileSync(task.done, 'written');
  } catch (error) {
    writeFileSync(task.done, `failed (${(error as { code?: unknown } | null)?.code ?? 'no code'})`);
    throw error;
  }
}

/** The key racer `racer` reports when its `init()` succeeded. */
export function initKey(racer: number): string {
  return `init p${racer}`;
}

/** The id of the thread racer `racer` saves after `init()`. */
export function initThreadId(resourceId: string, racer: number): string {
  return `${resourceId}-t${racer}`;
}

function initThread(resourceId: string, racer: number) {
  const at = new Date(Date.UTC(2024, 0, 2, 3, 4, 5, racer));
  return {
    id: initThreadId(resourceId, racer),
    resourceId,
    title: `racer ${racer}`,
    metadata: {},
    createdAt: at,
    updatedAt: at,
  };
}

/** What racer `racer` asks `Memory.createThread` to create in a `create-thread` race. */
export function creatorThread(
  task: { resourcePrefix: string },
  threadId: string,
  racer: number,
): { threadId: string; resourceId: string; title: string; metadata: JsonObject } {
  return {
    threadId,
    resourceId: `${task.resourcePrefix}-p${racer}`,
    title: `created by p${racer}`,
    metadata: { workingMemory: `initial memory of p${racer}`, by: racer },
  };
}

/** The thread and resource of racer `racer` in a `save-message` race. */
export function racerOwner(
  task: { threadPrefix: string; resourcePrefix: string },
  racer: number,
): { id: string; resourceId: string } {
  return { id: `${task.threadPrefix}-p${racer}`, resourceId: `${task.resourcePrefix}-p${racer}` };
}

/** What racer `racer` saves under `id` in a `save-message` race. */
export function racerMessage(
  task: { threadPrefix: string; resourcePrefix: string },
  id: string,
  racer: number,
): Message {
  const owner = racerOwner(task, racer);
  return {
    id,
    threadId: owner.id,
    resourceId: owner.resourceId,
    role: 'user',
    content: { by: racer },
    type: 'text',
    createdAt: new Date(Date.UTC(2024, 0, 1, 0, 0, racer)),
  };
}

function atomic(store: MemoryStorage) {
  const method = store.updateWorkingMemoryAtomically;
  if (!method) throw new Error('the store has no updateWorkingMemoryAtomically');
  return method.bind(store);
}

/** A memory with observational memory at tiny thresholds and the suite's mock models. */
export function observingMemory(
  store: MemoryStorage,
  scope: 'thread' | 'resource',
  buffer: number | false = 0.25,
  model = conformanceModel(),
): Memory {
  return new Memory({
    storage: store,
    onObservationIssue: (issue) => {
      throw issue.error;
    },
    options: {
      observationalMemory: {
        model,
        scope,
        observation: { messageTokens: 120, bufferTokens: buffer, blockAfter: 1.5 },
        reflection: { observationTokens: 400 },
        timeoutMs: 20_000,
      },
    },
  });
}

async function observationTurns(
  store: MemoryStorage,
  task: Extract<RaceTask, { kind: 'observation-turns' }>,
  racer: number,
): Promise<void> {
  const memory = observingMemory(store, task.scope);
  const threadId = task.threadIds[racer % task.threadIds.length] as string;
  const target = { threadId, resourceId: task.resourceId };
  const issues: unknown[] = [];
  for (let turn = 0; turn < task.turns; turn++) {
    const id = `${threadId}-p${racer}-${turn}`;
    const message = (suffix: string, role: 'user' | 'assistant') => ({
      id: `${id}${suffix}`,
      ...target,
      role,
      content: observedContent(`${id}${suffix}`, 'words '.repeat(5 + ((turn * 7 + racer) % 20))),
    });
    await memory.saveMessages({ messages: [message('-u', 'user')] });
    await memory.observations?.prepare(target).catch((error: unknown) => issues.push(error));
    await memory.saveMessages({ messages: [message('-a', 'assistant')] });
  }
  await memory.observations?.idle();
  if (issues.length) throw issues[0];
}

/** Adds `entry` to the body of one thread's observation log, retrying until its swap wins. */
export async function swapEntry(
  store: MemoryStorage,
  task: { threadId: string; resourceId: string },
  entry: string,
  newGeneration: boolean,
): Promise<void> {
  const log = store.observations;
  if (!log) throw new Error(`${store.name} declares no observations`);
  const key = `thread:${task.threadId}`;
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const head = await log.head(key);
    const entries = head ? (JSON.parse(head.body) as string[]) : [];
    const next = {
      key,
      resourceId: task.resourceId,
      threadId: task.threadId,
      generation: head ? head.generation + (newGeneration ? 1 : 0) : 1,
      version: head ? head.version + 1 : 1,
      body: JSON.stringify([...entries, entry]),
      updatedAt: new Date(),
    };
    if (await log.swap(head && { generation: head.generation, version: head.version }, next)) return;
    await sleep(Math.random() * 2);
  }
  throw new Error(`${entry}: no swap won in 10,000 attempts`);
}

/** Runs one racer's operations one after another and reports what happened. */
export async function runRacer(store: MemoryStorage, task: RaceTask, racer: number): Promise<RacerReport> {
  const report: RacerReport = { written: [], conflicts: 0, failures: [] };
  if (task.kind === 'merge-until-stopped') await mergeUntilStopped(store, task, racer, report);
  if (task.kind === 'purge-writers') {
    const log = await purgeWriter(store, {
      resourceId: task.resourceId,
      writer: `p${racer}`,
      rounds: task.rounds,
      stop: untilFile(task.stop),
      onFirstWrite: signalFile(task.ready),
    });
    report.written.push(...log.acks.map(ackKey));
    report.conflicts += log.refused;
    report.failures.push(...log.failures);
  }
  for (const op of racerOps(task, racer)) await record(report, op.key, () => op.run(store));
  return report;
}

/** Runs one operation and records it in `report`; true when it was acknowledged. */
async function record(report: RacerReport, key: string, run: () => Promise<unknown>): Promise<boolean> {
  try {
    const done = await run();
    report.written.push(done instanceof WrittenAs ? done.key : key);
    return true;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'CONFLICT') report.conflicts++;
    else
      report.failures.push(
        `${key}: ${error instanceof Error ? `${error.name} ${String(code ?? '')}: ${error.message}` : String(error)}`,
      );
    return false;
  }
}
