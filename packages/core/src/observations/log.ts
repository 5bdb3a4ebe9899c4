import { compareIds } from '../storage/helpers.ts';
import type { Message } from '../storage/records.ts';

/**
 * The state of one observation log (the body of its newest generation) and its pure
 * transitions. Each transition returns the next state, or `null` when it no longer applies to
 * the state it is given (another process got there first): the engine then re-reads and retries,
 * so every swap is checked against what is stored, never against a stale copy.
 *
 * Which messages of a thread are observed: those at or before the thread's `cursor` (in the
 * order of listings, `(createdAt, id)`), except the `late` ones — messages that were saved
 * with an older date after the cursor had passed it, or that an activation passed without
 * observing — and except, between `prior` (where the cursor was before it last moved) and the
 * cursor, the ones not observed since (not in `recent`): a message whose save committed after an
 * activation looked and that no process marked late (its saver, or the activator, was killed).
 * Every other message of the thread is in the raw tail.
 */

/** A message's place in the order of listings. */
export interface Boundary {
  /** `createdAt` in milliseconds. */
  at: number;
  id: string;
}

export function boundaryOf(m: Pick<Message, 'id' | 'createdAt'>): Boundary {
  return { at: m.createdAt.getTime(), id: m.id };
}

export function compareBoundaries(a: Boundary, b: Boundary): number {
  return a.at - b.at || compareIds(a.id, b.id);
}

/** Activated observations: they replace their messages in the prompt. */
export interface Entry {
  /** The thread the observed messages were in (`''` for a reflection of several). */
  threadId: string;
  text: string;
  tokens: number;
  /** How many messages it covers. */
  messages: number;
}

/** Observations made in the background, not activated yet: their messages are still raw. */
export interface Chunk {
  id: string;
  threadId: string;
  text: string;
  tokens: number;
  /** The messages it covers. */
  messages: Boundary[];
  /** Their tokens. */
  messageTokens: number;
  currentTask?: string;
  suggestedResponse?: string;
  /** The Observer's working-memory change, applied once by the process that stored the chunk. */
  workingMemory?: string;
}

/** How far observation went in one thread. */
export interface ThreadProgress {
  cursor: Boundary | null;
  /** Ids at or before the cursor that are not observed. */
  late: string[];
  /** The ids observed most recently (at most `RECENT`), to tell an edit from a late message. */
  recent: string[];
  /**
   * The cursor before the last activation that moved it (`null`: that was the first). Every
   * message observed since is in `recent`, so one after `prior` that is not was missed. Absent
   * when more than `RECENT` messages were observed since.
   */
  prior?: Boundary | null;
}

export interface LogState {
  entries: Entry[];
  chunks: Chunk[];
  threads: Map<string, ThreadProgress>;
  currentTask?: string;
  suggestedResponse?: string;
}

/** Observed ids remembered per thread. */
export const RECENT = 1000;

export const EMPTY_PROGRESS: ThreadProgress = Object.freeze({ cursor: null, late: [], recent: [] });

export function emptyState(): LogState {
  return { entries: [], chunks: [], threads: new Map() };
}

/** The stored body of a state. Threads as pairs: an id may be any string, `__proto__` too. */
export function serialize(state: LogState): string {
  return JSON.stringify({ ...state, threads: [...state.threads] });
}

export function parse(body: string | undefined): LogState {
  if (body === undefined) return emptyState();
  const raw = JSON.parse(body) as Omit<LogState, 'threads'> & { threads: [string, ThreadProgress][] };
  return { ...raw, threads: new Map(raw.threads) };
}

export function progressOf(state: LogState, threadId: string): ThreadProgress {
  return state.threads.get(threadId) ?? EMPTY_PROGRESS;
}

/** Whether the message is covered by an activated observation. */
export function isObserved(progress: ThreadProgress, m: Boundary): boolean {
  const { cursor, prior } = progress;
  if (cursor === null || compareBoundaries(m, cursor) > 0 || progress.late.includes(m.id)) return false;
  const missed = prior !== undefined && (prior === null || compareBoundaries(m, prior) > 0);
  return !missed || progress.recent.includes(m.id);
}

/**
 * The date from which a thread's unobserved messages are listed (with the late ones, read by
 * id): `prior` when there is one, so that messages missed since the cursor last moved are seen.
 */
export function tailStart(progress: ThreadProgress): Date | undefined {
  const from = progress.prior === undefined ? progress.cursor : progress.prior;
  return from ? new Date(from.at) : undefined;
}

/** Tokens of the activated observations. */
export function logTokens(state: LogState): number {
  return state.entries.reduce((sum, e) => sum + e.tokens, 0);
}

/** Ids in buffered chunks. */
export function bufferedIds(state: LogState): Set<string> {
  return new Set(state.chunks.flatMap((c) => c.messages.map((m) => m.id)));
}

/**
 * Adds a buffered chunk, when none of its messages is observed or already in another chunk
 * (else `null`: someone else observed them first).
 */
export function appendChunk(state: LogState, chunk: Chunk): LogState | null {
  const progress = progressOf(state, chunk.threadId);
  const buffered = bufferedIds(state);
  if (chunk.messages.some((m) => buffered.has(m.id) || isObserved(progress, m))) return null;
  return { ...state, chunks: [...state.chunks, chunk] };
}

/**
 * Activates the chunks `ids` of one thread: their text joins the log, the cursor moves past
 * their messages, and every message of `known` (the thread's raw tail as read) that the cursor
 * passes without being in them becomes late. `null` when a chunk is gone (activated elsewhere).
 */
export function activate(
  state: LogState,
  threadId: string,
  ids: readonly string[],
  known: readonly Boundary[],
): LogState | null {
  const chosen = ids.map((id) => state.chunks.find((c) => c.id === id && c.threadId === threadId));
  if (chosen.some((c) => c === undefined)) return null;
  const chunks = chosen as Chunk[];
  const covered = new Set(chunks.flatMap((c) => c.messages.map((m) => m.id)));
  const progress = progressOf(state, threadId);
  let cursor = progress.cursor;
  for (const m of chunks.flatMap((c) => c.messages)) {
    if (cursor === null || compareBoundaries(m, cursor) > 0) cursor = m;
  }
  const late = new Set(progress.late.filter((id) => !covered.has(id)));
  for (const m of known) {
    if (!covered.has(m.id) && cursor && compareBoundaries(m, cursor) <= 0 && !isObserved(progress, m))
      late.add(m.id);
  }
  const last = chunks.at(-1) as Chunk;
  const recent = [...progress.recent.filter((id) => !covered.has(id)), ...covered];
  const threads = new Map(state.threads);
  threads.set(threadId, {
    cursor,
    late: [...late],
    recent: recent.slice(-RECENT),
    ...priorAfter(progress, cursor, covered.size, recent.length),
  });
  return {
    ...state,
    entries: [
      ...state.entries,
      ...chunks.map((c) => ({ threadId, text: c.text, tokens: c.tokens, messages: c.messages.length })),
    ],
    chunks: state.chunks.filter((c) => !ids.includes(c.id)),
    threads,
    currentTask: last.currentTask ?? state.currentTask,
    suggestedResponse: last.suggestedResponse ?? state.suggestedResponse,
  };
}

/**
 * `prior` after an activation: the cursor before it when it moved the cursor, else (it observed
 * only late messages) the prior before it, as long as `recent` still holds every id observed
 * since; absent when it does not.
 */
function priorAfter(
  progress: ThreadProgress,
  cursor: Boundary | null,
  covered: number,
  remembered: number,
): Pick<ThreadProgress, 'prior'> {
  const moved =
    progress.cursor === null || (cursor !== null && compareBoundaries(cursor, progress.cursor) > 0);
  if (moved) return covered <= RECENT ? { prior: progress.cursor } : {};
  return remembered <= RECENT && progress.prior !== undefined ? { prior: progress.prior } : {};
}

/**
 * Marks messages the cursor already passed but no observation covers (saved late, or missed by
 * an activation that raced their save). `null` when there is nothing to mark.
 */
export function markLate(state: LogState, threadId: string, messages: readonly Boundary[]): LogState | null {
  const progress = progressOf(state, threadId);
  const { cursor } = progress;
  if (cursor === null) return null;
  const fresh = messages.filter(
    (m) =>
      compareBoundaries(m, cursor) <= 0 && !progress.late.includes(m.id) && !progress.recent.includes(m.id),
  );
  if (fresh.length === 0) return null;
  const threads = new Map(state.threads);
  threads.set(threadId, { ...progress, late: [...progress.late, ...new Set(fresh.map((m) => m.id))] });
  return { ...state, threads };
}

/**
 * Replaces the first `count` entries by the Reflector's condensed log, when they are still the
 * first `count` (same texts); the entries activated meanwhile stay after it.
 */
export function reflect(state: LogState, reflected: readonly Entry[], condensed: Entry): LogState | null {
  const same = reflected.every((e, i) => state.entries[i]?.text === e.text);
  if (!same || reflected.length === 0) return null;
  return { ...state, entries: [condensed, ...state.entries.slice(reflected.length)] };
}
