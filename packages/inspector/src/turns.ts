import { type Memory, MemoryError, type TurnRecord } from '@engram/core';

/** Most turn records one read returns. */
export const TURN_PAGE_LIMIT = 200;

/**
 * A thread's turn records, newest first (`options.turnRecords`): what each model call was given.
 * `supported: false` when the store keeps none (no `turns` domain).
 */
export type TurnsView =
  | { supported: true; turns: TurnRecord[]; more: boolean }
  | { supported: false; message: string };

/**
 * Up to `limit` turn records of `threadId`, newest first, older than the turn `before` when
 * given. `NOT_FOUND` for an absent thread or an unknown `before`.
 */
export async function readTurns(
  memory: Memory,
  threadId: string,
  limit: number,
  before?: string,
): Promise<TurnsView> {
  const thread = await memory.storage.getThreadById({ threadId });
  if (!thread) throw new MemoryError('NOT_FOUND', `thread ${JSON.stringify(threadId)} does not exist`);
  if (!memory.storage.turns) {
    return {
      supported: false,
      message: `${memory.storage.name} keeps no turn records (its adapter has no "turns" domain)`,
    };
  }
  let cursor: TurnRecord | undefined;
  if (before !== undefined) {
    const found = await memory.getTurn({ turnId: before });
    if (!found || found.threadId !== threadId) {
      throw new MemoryError(
        'NOT_FOUND',
        `thread ${JSON.stringify(threadId)} has no turn ${JSON.stringify(before)}`,
      );
    }
    cursor = found;
  }
  const page = await memory.listTurns({ threadId, limit: limit + 1, before: cursor });
  return { supported: true, turns: page.slice(0, limit), more: page.length > limit };
}

/** The text `engram-inspect turn` prints for a thread's newest turns. */
export function formatTurns(view: TurnsView, threadId: string): string {
  if (!view.supported) return view.message;
  if (view.turns.length === 0) {
    return `thread ${threadId} has no turn records (they are kept for turns saved with options.turnRecords: true)`;
  }
  return view.turns.map(formatTurn).join('\n\n');
}

function formatTurn(turn: TurnRecord): string {
  const lines = [
    `turn ${turn.id} · ${turn.createdAt.toISOString()} · thread ${turn.threadId} · resource ${turn.resourceId}`,
    `  saved: ${turn.messageIds.join(', ')}`,
    `  history window (${turn.history.length}): ${turn.history.length === 0 ? 'none' : turn.history.join(', ')}`,
  ];
  if (turn.recall === null) lines.push('  recall: off, or no query');
  else {
    const n = turn.recall.hits.length;
    lines.push(`  recall (${turn.recall.mode}, ${n} ${n === 1 ? 'hit' : 'hits'}):`);
    for (const hit of turn.recall.hits) {
      const scores = Object.entries(hit.scores)
        .map(([list, score]) => `${list} ${score.toFixed(3)}`)
        .join(', ');
      lines.push(
        `    ${hit.score.toFixed(3)} ${hit.messageId} (thread ${hit.threadId}) · ${scores} · window ${hit.window.join(', ')}`,
      );
    }
  }
  const wm = turn.workingMemory;
  lines.push(
    wm === null
      ? '  working memory: off'
      : `  working memory: ${wm.scope} scope · ${wm.sha256 === null ? 'empty' : `sha256 ${wm.sha256.slice(0, 16)}… · ${wm.chars} chars`}`,
  );
  const om = turn.observations;
  lines.push(
    om === null
      ? '  observations: off'
      : `  observations: generation ${om.generation} · log ${om.logTokens} tokens · raw tail ${om.tailTokens} tokens${om.trimmed > 0 ? ` · ${om.trimmed} trimmed` : ''}`,
  );
  lines.push(
    `  tokens: system ${turn.tokens.system} · history ${turn.tokens.history} · input ${turn.tokens.input}`,
  );
  return lines.join('\n');
}
