import type { JsonValue, Message, MessageRole } from '../storage/records.ts';
import { isPlainObject } from '../storage/validate.ts';

/**
 * Tool names whose calls and results are dropped when a turn is saved. `setWorkingMemory` (the
 * state-signal tool) is kept on purpose: its calls stay in the history as an audit trail.
 */
export const STRIPPED_TOOL_NAMES: readonly string[] = ['updateWorkingMemory'];

function toolNameOf(part: Record<string, unknown>): string | undefined {
  if (typeof part.toolName === 'string') return part.toolName;
  const invocation = part.toolInvocation;
  if (isPlainObject(invocation) && typeof invocation.toolName === 'string') return invocation.toolName;
  if (typeof part.type === 'string' && part.type.startsWith('tool-')) return part.type.slice('tool-'.length);
  return undefined;
}

function isStrippedPart(part: unknown): boolean {
  if (!isPlainObject(part)) return false;
  const name = toolNameOf(part);
  return name !== undefined && STRIPPED_TOOL_NAMES.includes(name);
}

/**
 * Removes working-memory tool calls and results from a message content: a parts array, or the
 * `{ format: 2, parts }` shape. Returns `null` when nothing is left; other content is returned
 * unchanged.
 */
export function stripWorkingMemoryToolParts(content: JsonValue): JsonValue | null {
  if (Array.isArray(content)) {
    const kept = content.filter((part) => !isStrippedPart(part));
    if (kept.length === content.length) return content;
    return kept.length === 0 ? null : kept;
  }
  if (isPlainObject(content) && Array.isArray(content.parts)) {
    const parts = stripWorkingMemoryToolParts(content.parts);
    if (parts === content.parts) return content;
    return parts === null ? null : { ...content, parts };
  }
  return content;
}

/**
 * The messages of a turn as they should be saved: system messages (including the working-memory
 * message) are dropped, and so are the working-memory tool calls and results; a message left
 * with nothing is dropped whole. State-signal messages are kept. Inputs are not mutated.
 */
export function messagesToSave<T extends { role: MessageRole; content: JsonValue }>(
  messages: readonly T[],
): T[] {
  const out: T[] = [];
  for (const message of messages) {
    if (message.role === 'system') continue;
    const content = stripWorkingMemoryToolParts(message.content);
    if (content === null) continue;
    out.push(content === message.content ? message : { ...message, content });
  }
  return out;
}

/** The parts of a message content: a parts array, or the `{ format: 2, parts }` shape. */
function partsOf(content: JsonValue): JsonValue[] | null {
  if (Array.isArray(content)) return content;
  if (isPlainObject(content) && Array.isArray(content.parts)) return content.parts;
  return null;
}

function withParts(content: JsonValue, parts: JsonValue[]): JsonValue {
  return Array.isArray(content) ? parts : { ...(content as Record<string, JsonValue>), parts };
}

function stringField(part: JsonValue, type: string, field: string): string | undefined {
  if (!isPlainObject(part) || part.type !== type) return undefined;
  const value = part[field];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Drops tool results (`{ type: 'tool-result', toolCallId }`) whose tool call
 * (`{ type: 'tool-call', toolCallId }`) is not earlier in `messages`, and tool approval
 * responses whose request is not; a message left with no parts is dropped whole. A history
 * window cut between a call and its result would otherwise start with an orphan result, which
 * provider APIs reject. Calls without a result are kept (a pending call or approval is valid).
 * Inputs are not mutated.
 */
export function dropOrphanToolResults<T extends { content: JsonValue }>(messages: readonly T[]): T[] {
  const calls = new Set<string>();
  const approvals = new Set<string>();
  const out: T[] = [];
  for (const message of messages) {
    const parts = partsOf(message.content);
    if (parts === null) {
      out.push(message);
      continue;
    }
    const kept = parts.filter((part) => {
      const call = stringField(part, 'tool-call', 'toolCallId');
      if (call !== undefined) calls.add(call);
      const request = stringField(part, 'tool-approval-request', 'approvalId');
      if (request !== undefined) approvals.add(request);
      const result = stringField(part, 'tool-result', 'toolCallId');
      if (result !== undefined) return calls.has(result);
      const response = stringField(part, 'tool-approval-response', 'approvalId');
      return response === undefined || approvals.has(response);
    });
    if (kept.length === parts.length) out.push(message);
    else if (kept.length > 0) out.push({ ...message, content: withParts(message.content, kept) });
  }
  return out;
}

/** The part of `Memory` that message history needs. */
export interface HistoryHost {
  recall(args: { threadId: string; resourceId?: string; last?: number | false }): Promise<Message[]>;
}

/**
 * The history to show the model: the `lastMessages` newest messages of a thread (the memory's
 * option unless `last` is given; `false` means all), in chronological order, without system
 * messages and working-memory tool calls. The window never splits a tool call from its
 * result: a result whose call is older than the window is left out (see
 * `dropOrphanToolResults`), so the window can hold fewer than `last` messages.
 */
export async function recallHistory(
  memory: HistoryHost,
  args: { threadId: string; resourceId?: string; last?: number | false },
): Promise<Message[]> {
  const messages = await memory.recall({
    threadId: args.threadId,
    resourceId: args.resourceId,
    last: args.last,
  });
  return dropOrphanToolResults(messagesToSave(messages));
}
