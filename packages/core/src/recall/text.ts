import { sha256 } from '../hash.ts';
import type { Message } from '../storage/records.ts';

/** The roles whose messages are embedded; system and tool messages are not recalled. */
const EMBEDDED_ROLES = new Set(['user', 'assistant']);

function partsText(parts: unknown[]): string {
  return parts
    .flatMap((part) => {
      if (typeof part === 'string') return [part];
      if (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text') {
        const text = (part as { text?: unknown }).text;
        return typeof text === 'string' ? [text] : [];
      }
      return [];
    })
    .join('\n');
}

/**
 * The text of a message that semantic recall embeds: string content as it is, else the text
 * parts joined by newlines (AI SDK part arrays and `{ parts }` / `{ content }` objects). `''`
 * for system and tool messages and for content without text; such messages get no vector.
 */
export function messageText(message: Pick<Message, 'role' | 'content'>): string {
  if (!EMBEDDED_ROLES.has(message.role)) return '';
  const content = message.content;
  let text = '';
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) text = partsText(content);
  else if (content && typeof content === 'object') {
    if (Array.isArray(content.parts)) text = partsText(content.parts);
    else if (typeof content.content === 'string') text = content.content;
  }
  return text.trim() === '' ? '' : text;
}

/** SHA-256 (hex) of `text`; vectors store it so unchanged text is never embedded twice. */
export function textHash(text: string): string {
  return sha256(text);
}
