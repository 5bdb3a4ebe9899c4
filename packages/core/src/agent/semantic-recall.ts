import type { Memory } from '../memory.ts';
import { formatRecall } from '../recall/format.ts';
import { messageText } from '../recall/text.ts';
import type { JsonValue } from '../storage/records.ts';
import { readMemoryIds } from './context.ts';
import { insertSystemMessage, type ProcessInputArgs } from './processor.ts';
import type { AgentMessage } from './types.ts';

/** The `source` tag of the system message holding recalled messages. */
export const RECALL_SOURCE = 'memory-recall';

/** The text of the latest user message, the query semantic recall embeds. */
export function latestUserText(messages: readonly { role: string; content: JsonValue }[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role === 'user') return messageText({ role: 'user', content: m.content });
  }
  return '';
}

/**
 * An input processor adding semantically recalled messages (see `memory.recall` with a query)
 * as one system message tagged `source: 'memory-recall'`, after the leading system messages.
 * Hits from other threads are labelled with their thread. Needs `threadId` and `resourceId` in
 * the request context and `options.semanticRecall` on the memory; otherwise, and when nothing is
 * recalled, the messages come back unchanged. Running it twice leaves one recall message.
 */
export class SemanticRecall {
  readonly id = 'semantic-recall';
  readonly name = 'SemanticRecall';

  constructor(private readonly memory: Memory) {}

  async processInput(args: ProcessInputArgs): Promise<AgentMessage[]> {
    const messages = args.messages.filter((m) => !(m.role === 'system' && m.source === RECALL_SOURCE));
    const ids = readMemoryIds(args.requestContext);
    const query = latestUserText(messages);
    if (!this.memory.options.semanticRecall || !ids.threadId || !ids.resourceId || query === '') {
      return messages;
    }
    const { hits } = await this.memory.recall({ threadId: ids.threadId, resourceId: ids.resourceId, query });
    const text = formatRecall(hits, ids.threadId);
    if (text === '') return messages;
    return insertSystemMessage(messages, { role: 'system', content: text, source: RECALL_SOURCE });
  }
}
