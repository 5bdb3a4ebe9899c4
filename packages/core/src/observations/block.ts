import { escapeData } from '../agent/instructions.ts';
import type { LogState } from './log.ts';

const BLOCK_INTRO =
  'Observations of this conversation so far. They replace its older messages: the messages after this block continue it.';

/**
 * The system block a turn shows for a log state, or `null` when nothing is activated yet. In a
 * resource-scope log, each entry of one thread is labelled with that thread. Pure: the engine
 * and the inspector (which has no model) render the block with it.
 */
export function renderObservationBlock(state: LogState, scope: 'thread' | 'resource'): string | null {
  if (state.entries.length === 0) return null;
  const labelled = scope === 'resource';
  const text = state.entries
    .map((e) => (labelled && e.threadId !== '' ? `[thread ${e.threadId}]\n${e.text}` : e.text))
    .join('\n\n');
  const parts = [BLOCK_INTRO, `<observations>\n${escapeData(text)}\n</observations>`];
  if (state.currentTask) parts.push(`<current-task>${escapeData(state.currentTask)}</current-task>`);
  if (state.suggestedResponse) {
    parts.push(`<suggested-response>${escapeData(state.suggestedResponse)}</suggested-response>`);
  }
  return parts.join('\n');
}
