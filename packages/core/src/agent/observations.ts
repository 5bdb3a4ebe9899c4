import type { Memory } from '../memory.ts';
import type { PreparedObservations } from '../observations/engine.ts';
import type { Message } from '../storage/records.ts';
import { readMemoryIds } from './context.ts';
import { dropOrphanToolResults, messagesToSave } from './history.ts';
import { insertSystemMessage, type ProcessInputArgs } from './processor.ts';
import type { AgentMessage } from './types.ts';

/** The `source` tag of the system message holding the observations. */
export const OBSERVATIONS_SOURCE = 'memory-observations';

/** One turn under observational memory: the block for the system prompt and the history to show. */
export interface ObservedHistory extends PreparedObservations {
  /** The raw tail as history: without system messages and working-memory tool calls. */
  history: Message[];
}

/**
 * Prepares a turn under `options.observationalMemory`: the observation block and, in place of
 * the newest `lastMessages`, every message no activated observation covers (the raw tail).
 */
export async function observedHistory(
  memory: Memory,
  ids: { threadId: string; resourceId: string },
): Promise<ObservedHistory | undefined> {
  if (!memory.observations) return undefined;
  const prepared = await memory.observations.prepare(ids);
  return { ...prepared, history: dropOrphanToolResults(messagesToSave(prepared.tail)) };
}

/**
 * An input processor for observational memory: adds the observation block as a system message
 * tagged `source: 'memory-observations'` and the raw tail of the thread before the turn's own
 * messages (a message of the turn already stored is not repeated). Needs `threadId` and
 * `resourceId` in the request context and `options.observationalMemory` on the memory;
 * otherwise the messages come back unchanged. Use it instead of a history of the last N messages.
 */
export class Observations {
  readonly id = 'observations';
  readonly name = 'Observations';

  constructor(private readonly memory: Memory) {}

  async processInput(args: ProcessInputArgs): Promise<AgentMessage[]> {
    const messages = args.messages.filter((m) => !(m.role === 'system' && m.source === OBSERVATIONS_SOURCE));
    const ids = readMemoryIds(args.requestContext);
    if (!ids.threadId || !ids.resourceId) return messages;
    const turn = await observedHistory(this.memory, { threadId: ids.threadId, resourceId: ids.resourceId });
    if (!turn) return messages;
    const own = new Set(messages.flatMap((m) => (m.id ? [m.id] : [])));
    const tail: AgentMessage[] = turn.history.filter((m) => !own.has(m.id));
    const system = messages.filter((m) => m.role === 'system');
    const rest = messages.filter((m) => m.role !== 'system');
    const withTail = [...system, ...tail, ...rest];
    return turn.block === null
      ? withTail
      : insertSystemMessage(withTail, { role: 'system', content: turn.block, source: OBSERVATIONS_SOURCE });
  }
}
