import {
  boundaryOf,
  isObserved,
  type Memory,
  type Message,
  type ObservationRow,
  observationLogTokens,
  parseObservationLog,
  progressOf,
  readRawTail,
  renderObservationBlock,
  type Thread,
  TokenCounter,
} from '@engram/core';
import { observationKey } from '@engram/core/driver';

/** Which log a thread's observations are read from. */
export type ObservationsScope = 'thread' | 'resource';

/** One activated observation as shown. */
export interface ObservationEntryView {
  /** The thread its messages were in (`''` for a reflection of several threads). */
  threadId: string;
  text: string;
  tokens: number;
  /** How many messages it replaced. */
  messages: number;
}

/** One buffered chunk: observed in the background, not activated (its messages are still raw). */
export interface ObservationChunkView {
  id: string;
  threadId: string;
  text: string;
  tokens: number;
  /** The ids of the messages it covers. */
  messageIds: string[];
  messageTokens: number;
}

/** One generation of a log (each reflection starts the next), as stored. */
export interface ObservationGenerationView {
  generation: number;
  version: number;
  updatedAt: string;
  entries: ObservationEntryView[];
  chunks: ObservationChunkView[];
  logTokens: number;
  currentTask?: string;
  suggestedResponse?: string;
}

/** Whether a message is covered by an activated observation (`observed`) or in the raw tail. */
export interface MessageMark {
  id: string;
  mark: 'observed' | 'raw-tail';
  /** In a buffered chunk: observed in the background, still raw until activated. */
  buffered: boolean;
  /** The message's tokens as core counts them (role and framing included). */
  tokens: number;
}

/**
 * The observational memory of a thread as stored. `unsupported`: the store has no
 * `observations` domain. `none`: no log exists for the thread (in the keys looked at), so
 * every message is in the raw tail. `log`: the newest generation, every generation, the
 * thread's cursor and the tokens on each side.
 */
export type ObservationsView =
  | { status: 'unsupported'; message: string }
  | { status: 'none'; message: string; keys: string[]; marks: MessageMark[] }
  | ObservationLogView;

/** A thread's observation log, read without a model. */
export interface ObservationLogView {
  status: 'log';
  scope: ObservationsScope;
  key: string;
  /** The newest generation's number, version and time. */
  generation: number;
  version: number;
  updatedAt: string;
  /** Every generation, oldest first. */
  generations: ObservationGenerationView[];
  /** The thread's cursor: messages at or before it (in listing order) are observed, except `late`. */
  cursor: { at: string; id: string } | null;
  /** Ids at or before the cursor that no observation covers (they stay in the raw tail). */
  late: string[];
  /** The system block the agent gets (core's `renderObservationBlock`), `null` before any activation. */
  block: string | null;
  /** Tokens of the activated observations (the block's side). */
  logTokens: number;
  /** Tokens and count of the thread's raw tail (the messages the agent still gets as they are). */
  tailTokens: number;
  tailMessages: number;
  /** Messages of the thread that activated observations replace. */
  observedMessages: number;
  /** One mark per message asked about (the thread view's newest messages), oldest first. */
  marks: MessageMark[];
}

/** The view and the raw tail itself (the history the agent gets instead of the newest N). */
export interface ObservationsRead {
  view: ObservationsView;
  tail: Message[] | null;
}

const counter = new TokenCounter();

/**
 * Reads a thread's observation log from the store's `observations` domain alone (no model):
 * the thread's log key, or its resource's when `scope` says so or when, with no scope given,
 * only the resource has a log. `shown` are the messages to mark; `total` the thread's count.
 */
export async function readObservations(
  memory: Memory,
  thread: Thread,
  shown: readonly Message[],
  total: number,
  scope: ObservationsScope | undefined,
): Promise<ObservationsRead> {
  const store = memory.storage.observations;
  if (!store) {
    return {
      view: {
        status: 'unsupported',
        message: `the ${memory.storage.name} store has no observations domain: observational memory cannot run on it, so there is no observation log to show`,
      },
      tail: null,
    };
  }
  const keys = {
    thread: observationKey('thread', thread.id),
    resource: observationKey('resource', thread.resourceId),
  } as const;
  let chosen: ObservationsScope = scope ?? 'thread';
  let rows = await store.generations(keys[chosen]);
  if (rows.length === 0 && scope === undefined) {
    rows = await store.generations(keys.resource);
    chosen = 'resource';
  }
  const head = rows.at(-1);
  if (!head) {
    const looked = scope === undefined ? [keys.thread, keys.resource] : [keys[chosen]];
    return {
      view: {
        status: 'none',
        message: `no observation log (looked at ${looked.join(' and ')}): every message is in the raw tail`,
        keys: looked,
        marks: shown.map((m) => ({
          id: m.id,
          mark: 'raw-tail',
          buffered: false,
          tokens: counter.message(m),
        })),
      },
      tail: null,
    };
  }
  const state = parseObservationLog(head.body);
  const progress = progressOf(state, thread.id);
  const tail = await readRawTail(memory.storage, state, thread.id);
  const buffered = new Set(
    state.chunks.filter((c) => c.threadId === thread.id).flatMap((c) => c.messages.map((m) => m.id)),
  );
  const generations = rows.map(generationView);
  return {
    view: {
      status: 'log',
      scope: chosen,
      key: head.key,
      generation: head.generation,
      version: head.version,
      updatedAt: head.updatedAt.toISOString(),
      generations,
      cursor: progress.cursor
        ? { at: new Date(progress.cursor.at).toISOString(), id: progress.cursor.id }
        : null,
      late: [...progress.late],
      block: renderObservationBlock(state, chosen),
      logTokens: observationLogTokens(state),
      tailTokens: counter.messages(tail),
      tailMessages: tail.length,
      observedMessages: Math.max(0, total - tail.length),
      marks: shown.map((m) => ({
        id: m.id,
        mark: isObserved(progress, boundaryOf(m)) ? 'observed' : 'raw-tail',
        buffered: buffered.has(m.id),
        tokens: counter.message(m),
      })),
    },
    tail,
  };
}

function generationView(row: ObservationRow): ObservationGenerationView {
  const state = parseObservationLog(row.body);
  return {
    generation: row.generation,
    version: row.version,
    updatedAt: row.updatedAt.toISOString(),
    entries: state.entries.map((e) => ({
      threadId: e.threadId,
      text: e.text,
      tokens: e.tokens,
      messages: e.messages,
    })),
    chunks: state.chunks.map((c) => ({
      id: c.id,
      threadId: c.threadId,
      text: c.text,
      tokens: c.tokens,
      messageIds: c.messages.map((m) => m.id),
      messageTokens: c.messageTokens,
    })),
    logTokens: observationLogTokens(state),
    ...(state.currentTask ? { currentTask: state.currentTask } : {}),
    ...(state.suggestedResponse ? { suggestedResponse: state.suggestedResponse } : {}),
  };
}
