import { MemoryError } from '../errors.ts';
import { sha256 } from '../hash.ts';
import type { PreparedObservations } from '../observations/engine.ts';
import { contentText, tokensOf } from '../observations/tokens.ts';
import type { RecallMode, RecallResult } from '../recall/engine.ts';
import type { Message, WorkingMemoryScope } from '../storage/records.ts';
import type { TurnRow } from '../storage/turns.ts';

/**
 * What one model call of a conversation was given, as `options.turnRecords` keeps it: ids and
 * numbers, never copies of content. The record of a turn is written when the turn is saved
 * (`memoryStep`'s `save`), under the id of the first message saved (its input).
 */
export interface TurnRecord {
  /** The id of the turn's first saved message. */
  id: string;
  threadId: string;
  resourceId: string;
  /** When the call was prepared. */
  createdAt: Date;
  /** The messages the turn saved (input, any state signal, the response), in order. */
  messageIds: string[];
  /** The history window: the thread's messages shown before the input, oldest first. */
  history: string[];
  /** Semantic recall of the turn; `null` when recall was off or the input had no text. */
  recall: {
    mode: RecallMode;
    hits: Array<{
      messageId: string;
      threadId: string;
      score: number;
      scores: { vector?: number; keyword?: number };
      /** The hit and its neighbours shown, oldest first. */
      window: string[];
    }>;
  } | null;
  /**
   * The working memory shown: its scope, and the SHA-256 (hex) and length of the text read, so
   * two turns that saw the same memory show the same hash. `null` when working memory is off.
   */
  workingMemory: { scope: WorkingMemoryScope; sha256: string | null; chars: number } | null;
  /** Observational memory: the log generation read and the tokens of each side; `null` when off. */
  observations: { generation: number; logTokens: number; tailTokens: number; trimmed: number } | null;
  /** Tokens (o200k_base, as observational memory counts them) of the system text, history and input. */
  tokens: { system: number; history: number; input: number };
}

/** What a turn was prepared with, before its messages are saved. */
export interface PreparedTurn {
  threadId: string;
  resourceId: string;
  createdAt: Date;
  system: string | undefined;
  history: readonly Pick<Message, 'id' | 'content'>[];
  input: readonly Pick<Message, 'content'>[];
  recall?: { mode: RecallMode; result: RecallResult };
  workingMemory?: { scope: WorkingMemoryScope; text: string | null };
  observations?: Pick<PreparedObservations, 'generation' | 'logTokens' | 'tailTokens' | 'trimmed'>;
}

/** The record of a prepared turn whose messages were saved with these ids (the first is its id). */
export async function turnRecord(turn: PreparedTurn, savedIds: readonly string[]): Promise<TurnRecord> {
  const id = savedIds[0];
  if (id === undefined) throw new MemoryError('INVALID_ARGUMENT', 'a turn record needs the saved messages');
  const messageTokens = (messages: readonly Pick<Message, 'content'>[]) =>
    messages.reduce((sum, m) => sum + tokensOf(contentText(m.content)) + 4, 0);
  return {
    id,
    threadId: turn.threadId,
    resourceId: turn.resourceId,
    createdAt: turn.createdAt,
    messageIds: [...savedIds],
    history: turn.history.map((m) => m.id),
    recall: turn.recall
      ? {
          mode: turn.recall.mode,
          hits: turn.recall.result.hits.map((hit) => ({
            messageId: hit.message.id,
            threadId: hit.threadId,
            score: hit.score,
            scores: { ...hit.scores },
            window: hit.window.map((m) => m.id),
          })),
        }
      : null,
    workingMemory: turn.workingMemory
      ? {
          scope: turn.workingMemory.scope,
          sha256: turn.workingMemory.text === null ? null : sha256(turn.workingMemory.text),
          chars: turn.workingMemory.text?.length ?? 0,
        }
      : null,
    observations: turn.observations
      ? {
          generation: turn.observations.generation,
          logTokens: turn.observations.logTokens,
          tailTokens: turn.observations.tailTokens,
          trimmed: turn.observations.trimmed,
        }
      : null,
    tokens: {
      system: tokensOf(turn.system ?? ''),
      history: messageTokens(turn.history),
      input: messageTokens(turn.input),
    },
  };
}

/** The stored row of a record (its body is the record as JSON, version 1). */
export function turnRow(record: TurnRecord): TurnRow {
  const { id, threadId, resourceId, createdAt, ...rest } = record;
  return { id, threadId, resourceId, createdAt, body: JSON.stringify({ v: 1, ...rest }) };
}

/** The record of a stored row; `STORAGE` when the body is not a version-1 record. */
export function recordOfRow(row: TurnRow): TurnRecord {
  let body: unknown;
  try {
    body = JSON.parse(row.body);
  } catch (error) {
    throw unreadable(row, error);
  }
  if (!body || typeof body !== 'object' || (body as { v?: unknown }).v !== 1) throw unreadable(row);
  const { v: _v, ...rest } = body as Omit<TurnRecord, 'id' | 'threadId' | 'resourceId' | 'createdAt'> & {
    v: 1;
  };
  return {
    id: row.id,
    threadId: row.threadId,
    resourceId: row.resourceId,
    createdAt: row.createdAt,
    ...rest,
  };
}

function unreadable(row: TurnRow, cause?: unknown): MemoryError {
  return new MemoryError(
    'STORAGE',
    `turn record ${JSON.stringify(row.id)} is not a version-1 record this engram can read`,
    { cause },
  );
}
