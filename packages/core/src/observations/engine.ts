import type { MemoryStorage } from '../storage/contract.ts';
import { type ObservationRow, type ObservationStore, observationKey } from '../storage/observations.ts';
import { ownedThread, threadNotFound } from '../storage/ownership.ts';
import type { Message } from '../storage/records.ts';
import { RETRY, retry } from '../storage/retry.ts';
import { renderObservationBlock } from './block.ts';
import {
  activate,
  appendChunk,
  type Boundary,
  boundaryOf,
  bufferedIds,
  type Chunk,
  compareBoundaries,
  type Entry,
  isObserved,
  type LogState,
  logTokens,
  markLate,
  parse,
  progressOf,
  reflect,
  serialize,
  tailStart,
} from './log.ts';
import { generate } from './model.ts';
import type { ResolvedObservationalMemory } from './options.ts';
import {
  formatMessages,
  observerInstructions,
  parseObserver,
  parseReflector,
  REFLECTOR_INSTRUCTIONS,
} from './prompts.ts';
import { TokenCounter, tokensOf } from './tokens.ts';

/** The thread a turn is in. */
export interface ObservationTarget {
  threadId: string;
  resourceId: string;
}

/** What went wrong in the background; the turn went on with the raw tail. */
export interface ObservationIssue {
  kind: 'observer' | 'reflector' | 'working-memory' | 'storage';
  threadId: string;
  resourceId: string;
  error: unknown;
}

/** What one turn shows the model. */
export interface PreparedObservations {
  /** The system block with the observations, or `null` when nothing is observed yet. */
  block: string | null;
  /** The thread's messages not covered by an activated observation, oldest first. */
  tail: Message[];
  /** The generation of the log read (0 when there is none). */
  generation: number;
  /** Tokens of the activated observations and of the tail shown. */
  logTokens: number;
  tailTokens: number;
  /** Messages left out of the tail for this turn because the Observer failed and the tail was over budget. */
  trimmed: number;
}

/** A log as stored, with the raw tail of one thread (`ObservationalMemory.inspect`). */
export interface ObservationSnapshot {
  generation: number;
  state: LogState;
  tail: Message[];
  tailTokens: number;
  logTokens: number;
  block: string | null;
}

/** What `Memory` gives the engine. */
export interface ObservationHost {
  readonly storage: MemoryStorage;
  /** Applies the Observer's working-memory changes (validated; an invalid change throws). */
  applyWorkingMemory?(target: ObservationTarget, change: string): Promise<void>;
  onIssue(issue: ObservationIssue): void;
}

/**
 * Observational memory: an Observer model turns the oldest unobserved messages of a thread into
 * dated observations that replace them in the prompt, and a Reflector condenses the log when it
 * grows. Every change of a log is one compare-and-set swap of the store's `observations`,
 * re-applied to what is stored when another process swapped first, so that across processes no
 * message is observed twice, none is skipped, and no chunk is activated twice.
 */
export class ObservationalMemory {
  private readonly tokens = new TokenCounter();
  /** Background work in flight, by log key and kind. */
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly host: ObservationHost,
    private readonly log: ObservationStore,
    readonly options: ResolvedObservationalMemory,
  ) {}

  /** The log key of a turn. */
  keyOf(target: ObservationTarget): string {
    return this.options.scope === 'thread'
      ? observationKey('thread', target.threadId)
      : observationKey('resource', target.resourceId);
  }

  /**
   * Prepares one turn: activates buffered observations once the raw tail reaches the threshold,
   * observes synchronously past `blockAfter` (bounded by `timeoutMs`), starts background
   * buffering and reflection, and returns the block and the raw tail.
   */
  async prepare(target: ObservationTarget): Promise<PreparedObservations> {
    await ownedThread(this.host.storage, 'observations.prepare', target.threadId, target.resourceId);
    const key = this.keyOf(target);
    let view = await this.read(key, target.threadId);
    const threshold = this.threshold(view.state);
    if (view.tailTokens >= threshold) {
      // A lost fight for the log (CONFLICT after the retries) leaves the chunks for the next turn.
      view =
        (await this.activateBuffered(target, view).catch((error: unknown) => {
          this.host.onIssue({ kind: 'storage', ...target, error });
          return null;
        })) ?? view;
    }
    let trimmed = 0;
    const blocking = this.options.bufferTokens === false ? threshold : threshold * this.options.blockAfter;
    if (view.tailTokens >= blocking) {
      try {
        view = await this.observeNow(target, view);
      } catch (error) {
        this.host.onIssue({ kind: 'observer', ...target, error });
        const kept = this.trim(view.tail, blocking);
        trimmed = view.tail.length - kept.length;
        view = { ...view, tail: kept, tailTokens: this.tokens.messages(kept) };
      }
    }
    this.background(target, view);
    return {
      block: this.render(view.state),
      tail: view.tail,
      generation: view.row?.generation ?? 0,
      logTokens: logTokens(view.state),
      tailTokens: view.tailTokens,
      trimmed,
    };
  }

  /**
   * After messages were saved: any saved message the cursor of its thread already passed without
   * observing it is marked late, so that it stays in the raw tail until it is observed.
   */
  async afterSave(saved: readonly Message[]): Promise<void> {
    const byKey = new Map<string, { target: ObservationTarget; messages: Boundary[] }>();
    for (const m of saved) {
      const target = { threadId: m.threadId, resourceId: m.resourceId };
      const key = `${this.keyOf(target)}\u0000${m.threadId}`;
      const entry = byKey.get(key) ?? { target, messages: [] };
      entry.messages.push(boundaryOf(m));
      byKey.set(key, entry);
    }
    for (const { target, messages } of byKey.values()) {
      try {
        await this.swapWith(this.keyOf(target), target, (state) =>
          markLate(state, target.threadId, messages),
        );
      } catch (error) {
        this.host.onIssue({ kind: 'storage', ...target, error });
      }
    }
  }

  /** Resolves when the background work this process started has settled (for tests and shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /**
   * The log of a turn as stored now, without changing anything: the newest generation, its
   * state, the raw tail and the block a turn would show (for the inspector and the suite).
   */
  async inspect(target: ObservationTarget): Promise<ObservationSnapshot> {
    await ownedThread(this.host.storage, 'observations.inspect', target.threadId, target.resourceId);
    const view = await this.read(this.keyOf(target), target.threadId);
    return {
      generation: view.row?.generation ?? 0,
      state: view.state,
      tail: view.tail,
      tailTokens: view.tailTokens,
      logTokens: logTokens(view.state),
      block: this.render(view.state),
    };
  }

  /** Every generation of the log of a turn, oldest first, parsed (for the inspector). */
  async generations(target: ObservationTarget): Promise<Array<{ row: ObservationRow; state: LogState }>> {
    const rows = await this.log.generations(this.keyOf(target));
    return rows.map((row) => ({ row, state: parse(row.body) }));
  }

  /** The system block of a state (`renderObservationBlock` in this memory's scope). */
  render(state: LogState): string | null {
    return renderObservationBlock(state, this.options.scope);
  }

  /** The threshold of unobserved tokens (grown by what the log leaves of a shared budget). */
  private threshold(state: LogState): number {
    const { messageTokens, observationTokens, shareTokenBudget } = this.options;
    return shareTokenBudget
      ? messageTokens + Math.max(0, observationTokens - logTokens(state))
      : messageTokens;
  }

  /** The log's head and the thread's raw tail, read now. */
  private async read(key: string, threadId: string): Promise<View> {
    const row = await this.log.head(key);
    const state = parse(row?.body);
    const tail = await readRawTail(this.host.storage, state, threadId);
    return { row, state, tail, tailTokens: this.tokens.messages(tail) };
  }

  /** Activates the thread's buffered chunks, oldest first, until ~`1 - bufferActivation` of the threshold stays raw. */
  private async activateBuffered(target: ObservationTarget, view: View): Promise<View | null> {
    const keep = this.threshold(view.state) * (1 - this.options.bufferActivation);
    const chunks = view.state.chunks
      .filter((c) => c.threadId === target.threadId)
      .sort((a, b) => compareBoundaries(a.messages[0] as Boundary, b.messages[0] as Boundary));
    const ids: string[] = [];
    let left = view.tailTokens;
    for (const c of chunks) {
      if (left <= keep) break;
      ids.push(c.id);
      left -= c.messageTokens;
    }
    if (ids.length === 0) return null;
    return this.activateChunks(target, view, ids);
  }

  /** Observes every unbuffered message of the tail now, then activates every chunk of the thread. */
  private async observeNow(target: ObservationTarget, view: View): Promise<View> {
    const buffered = bufferedIds(view.state);
    const rest = view.tail.filter((m) => !buffered.has(m.id));
    let state = view.state;
    if (rest.length > 0) {
      const chunk = await this.observe(target, rest);
      const appended = await this.swapWith(this.keyOf(target), target, (s) => appendChunk(s, chunk));
      if (appended) await this.applyWorkingMemory(target, chunk);
      state = (await this.read(this.keyOf(target), target.threadId)).state;
    }
    const ids = state.chunks.filter((c) => c.threadId === target.threadId).map((c) => c.id);
    return (
      (await this.activateChunks(target, { ...view, state }, ids)) ??
      this.read(this.keyOf(target), target.threadId)
    );
  }

  /**
   * Activates chunks by swap, then reads the messages the cursor passed: one saved while the
   * swap ran, and so in no chunk, is marked late (its own save marks it too when it reads the
   * log after the swap). Returns the view after.
   */
  private async activateChunks(target: ObservationTarget, view: View, ids: string[]): Promise<View | null> {
    if (ids.length === 0) return null;
    const key = this.keyOf(target);
    const before = progressOf(view.state, target.threadId).cursor;
    const known = view.tail.map(boundaryOf);
    const after = await this.swapWith(key, target, (s) => activate(s, target.threadId, ids, known));
    const next = await this.read(key, target.threadId);
    if (!after) return next;
    const cursor = progressOf(next.state, target.threadId).cursor;
    if (cursor) {
      const passed = await this.host.storage.listMessages({
        threadId: target.threadId,
        perPage: false,
        dateRange: { ...(before ? { start: new Date(before.at) } : {}), end: new Date(cursor.at) },
      });
      const missed = passed.messages.map(boundaryOf).filter((m) => !after.ids.has(m.id));
      if (missed.length > 0) {
        const marked = await this.swapWith(key, target, (s) => markLate(s, target.threadId, missed));
        if (marked) return this.read(key, target.threadId);
      }
    }
    return next;
  }

  /** One Observer call on `messages`: a chunk (not stored yet). A single message over any threshold is observed too. */
  private async observe(target: ObservationTarget, messages: readonly Message[]): Promise<Chunk> {
    const { observer, timeoutMs, manageWorkingMemory, scope } = this.options;
    const text = await generate(
      observer,
      observerInstructions(manageWorkingMemory),
      formatMessages(messages, scope === 'resource'),
      timeoutMs,
    );
    const out = parseObserver(text);
    const observations = out?.observations ?? '(nothing to record)';
    return {
      id: `${target.threadId}\u0000${messages[0]?.id}\u0000${crypto.randomUUID()}`,
      threadId: target.threadId,
      text: observations,
      tokens: tokensOf(observations),
      messages: messages.map(boundaryOf),
      messageTokens: this.tokens.messages(messages),
      ...(out?.currentTask ? { currentTask: out.currentTask } : {}),
      ...(out?.suggestedResponse ? { suggestedResponse: out.suggestedResponse } : {}),
      ...(out?.workingMemory ? { workingMemory: out.workingMemory } : {}),
    };
  }

  /** Applies the Observer's working-memory change of a chunk that was stored; an invalid one is reported, not written. */
  private async applyWorkingMemory(target: ObservationTarget, chunk: Chunk & { workingMemory?: string }) {
    const change = chunk.workingMemory;
    if (!change || !this.options.manageWorkingMemory || !this.host.applyWorkingMemory) return;
    try {
      await this.host.applyWorkingMemory(target, change);
    } catch (error) {
      this.host.onIssue({ kind: 'working-memory', ...target, error });
    }
  }

  /** Starts background buffering and reflection when due (one of each per log at a time). */
  private background(target: ObservationTarget, view: View): void {
    const key = this.keyOf(target);
    const { bufferTokens, observationTokens } = this.options;
    if (bufferTokens !== false) {
      const buffered = bufferedIds(view.state);
      const rest = view.tail.filter((m) => !buffered.has(m.id));
      if (this.tokens.messages(rest) >= bufferTokens) {
        const chosen: Message[] = [];
        let sum = 0;
        for (const m of rest) {
          if (chosen.length > 0 && sum >= bufferTokens) break;
          chosen.push(m);
          sum += this.tokens.message(m);
        }
        this.start(`${key}\u0000buffer\u0000${target.threadId}`, 'observer', target, async () => {
          const chunk = await this.observe(target, chosen);
          const stored = await this.swapWith(key, target, (s) => appendChunk(s, chunk));
          if (stored) await this.applyWorkingMemory(target, chunk);
        });
      }
    }
    if (logTokens(view.state) >= observationTokens) {
      const entries = view.state.entries;
      this.start(`${key}\u0000reflect`, 'reflector', target, async () => {
        const text = await generate(
          this.options.reflector,
          REFLECTOR_INSTRUCTIONS,
          entries.map((e) => e.text).join('\n\n'),
          this.options.timeoutMs,
        );
        const condensed = parseReflector(text);
        if (condensed === null) return;
        const entry: Entry = {
          threadId: '',
          text: condensed,
          tokens: tokensOf(condensed),
          messages: entries.reduce((n, e) => n + e.messages, 0),
        };
        await this.swapWith(key, target, (s) => reflect(s, entries, entry), true);
      });
    }
  }

  private start(
    name: string,
    kind: ObservationIssue['kind'],
    target: ObservationTarget,
    work: () => Promise<void>,
  ) {
    if (this.running.has(name)) return;
    const task = work()
      .catch((error) => this.host.onIssue({ kind, ...target, error }))
      .finally(() => this.running.delete(name));
    this.running.set(name, task);
  }

  /**
   * Applies `transition` to the stored head and swaps it in, again on the new head when another
   * swap won, until it wins or the transition no longer applies (`null`). `newGeneration` starts
   * the next generation. Returns the ids of the messages the swap activated, or `null`.
   */
  private async swapWith(
    key: string,
    target: ObservationTarget,
    transition: (state: LogState) => LogState | null,
    newGeneration = false,
  ): Promise<{ ids: Set<string> } | null> {
    return retry(
      async () => {
        const head = await this.log.head(key);
        const state = parse(head?.body);
        const next = transition(state);
        if (next === null) return null;
        if (this.options.scope === 'resource') await this.requireThread(target);
        const row: ObservationRow = {
          key,
          resourceId: target.resourceId,
          threadId: this.options.scope === 'thread' ? target.threadId : null,
          generation: head ? head.generation + (newGeneration ? 1 : 0) : 1,
          version: head ? head.version + 1 : 1,
          body: serialize(next),
          updatedAt: new Date(),
        };
        const expected = head && { generation: head.generation, version: head.version };
        const won = await this.log.swap(expected, row, { thread: target.threadId });
        if (!won) return RETRY;
        const kept = new Set(next.chunks.map((c) => c.id));
        const activated = state.chunks.filter((c) => !kept.has(c.id));
        return { ids: new Set(activated.flatMap((c) => c.messages.map((m) => m.id))) };
      },
      { adapter: this.host.storage.name, what: 'observation log swap' },
    );
  }

  /**
   * `NOT_FOUND` unless the turn's thread is still the resource's. A resource log outlives any one
   * thread, so its swaps are not refused by the store once the log exists; read just before each
   * swap, this keeps what a turn observed of a thread deleted while the model ran (or of a
   * resource erased and already in use again) out of the log. The store checks a first row after
   * its swap, in a write that holds the thread.
   */
  private async requireThread(target: ObservationTarget): Promise<void> {
    const thread = await this.host.storage.getThreadById({ threadId: target.threadId });
    if (thread?.resourceId !== target.resourceId)
      throw threadNotFound(this.host.storage.name, target.threadId);
  }

  /** The newest messages of `tail` within `budget` tokens (at least the newest one). */
  private trim(tail: readonly Message[], budget: number): Message[] {
    const kept: Message[] = [];
    let sum = 0;
    for (let i = tail.length - 1; i >= 0; i--) {
      const m = tail[i] as Message;
      sum += this.tokens.message(m);
      if (kept.length > 0 && sum > budget) break;
      kept.unshift(m);
    }
    return kept;
  }
}

/**
 * A thread's messages no activated observation of `state` covers, oldest first: those listed from
 * `tailStart` on that are not observed, and the late ones, read by id.
 */
export async function readRawTail(
  storage: MemoryStorage,
  state: LogState,
  threadId: string,
): Promise<Message[]> {
  const progress = progressOf(state, threadId);
  const start = tailStart(progress);
  const listed = await storage.listMessages({
    threadId,
    perPage: false,
    ...(start ? { dateRange: { start } } : {}),
  });
  const late = progress.late.length ? await storage.listMessagesById({ ids: progress.late }) : [];
  const byId = new Map<string, Message>();
  for (const m of [...late, ...listed.messages]) {
    if (m.threadId === threadId && !isObserved(progress, boundaryOf(m))) byId.set(m.id, m);
  }
  return [...byId.values()].sort((a, b) => compareBoundaries(boundaryOf(a), boundaryOf(b)));
}

interface View {
  row: ObservationRow | null;
  state: LogState;
  tail: Message[];
  tailTokens: number;
}
