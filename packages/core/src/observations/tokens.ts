import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type { Message } from '../storage/records.ts';

/**
 * Token counts by `gpt-tokenizer` with the `o200k_base` encoding (the encoding of the GPT-4o and
 * GPT-5 families): a pure-JavaScript tokenizer with no native or WASM build step and no network,
 * exact for those models and a close estimate for others — thresholds only need the order of
 * magnitude to be right, and the same count on every process.
 */
export function tokensOf(text: string): number {
  return text === '' ? 0 : countTokens(text);
}

/**
 * The text of a message as the Observer and the token counts see it: text parts as they are,
 * tool calls and results as a short line with their JSON, files and images as a placeholder
 * (their bytes are not text to observe).
 */
export function contentText(content: Message['content']): string {
  if (typeof content === 'string') return content;
  const parts = Array.isArray(content)
    ? content
    : content && typeof content === 'object' && Array.isArray(content.parts)
      ? content.parts
      : null;
  if (!parts) return JSON.stringify(content) ?? '';
  return parts.map(partText).join('\n');
}

function partText(part: unknown): string {
  if (typeof part === 'string') return part;
  if (!part || typeof part !== 'object') return String(part);
  const p = part as Record<string, unknown>;
  switch (p.type) {
    case 'text':
    case 'reasoning':
      return typeof p.text === 'string' ? p.text : '';
    case 'tool-call':
      return `[tool call ${String(p.toolName)} ${JSON.stringify(p.input ?? p.args ?? null)}]`;
    case 'tool-result':
      return `[tool result ${String(p.toolName)} ${JSON.stringify(p.output ?? p.result ?? null)}]`;
    default:
      return `[${String(p.type ?? 'part')}${typeof p.mediaType === 'string' ? ` ${p.mediaType}` : ''}]`;
  }
}

/** Most message counts kept; the oldest are dropped first. */
const CACHE_SIZE = 20_000;

/** Token counts of messages, cached per message id and text (an edited message is counted again). */
export class TokenCounter {
  private readonly cache = new Map<string, { text: string; tokens: number }>();

  /** The tokens of one message (role and content). */
  message(message: Pick<Message, 'id' | 'content'>): number {
    const text = contentText(message.content);
    const hit = this.cache.get(message.id);
    if (hit && hit.text === text) return hit.tokens;
    const tokens = tokensOf(text) + 4; // role and framing, as chat formats count them
    this.cache.delete(message.id);
    this.cache.set(message.id, { text, tokens });
    if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    return tokens;
  }

  /** The sum over `messages`. */
  messages(messages: readonly Pick<Message, 'id' | 'content'>[]): number {
    let sum = 0;
    for (const m of messages) sum += this.message(m);
    return sum;
  }
}
