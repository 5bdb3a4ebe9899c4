import type { LanguageModelLike, LogState, Memory, Message, ObservationTarget } from '@engram/core';
import { ConformanceError } from './assert.ts';

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** Marks a message in the suite's observations: `«id»`. */
const MARK = /«([^»]*)»/g;

function answer(text: string) {
  return {
    content: [{ type: 'text' as const, text }],
    finishReason: { unified: 'stop' as const, raw: 'stop' },
    usage: USAGE,
    warnings: [],
  };
}

function userText(prompt: readonly { role: string; content: unknown }[]): string {
  const user = prompt.find((m) => m.role === 'user');
  const parts = Array.isArray(user?.content) ? (user.content as { type: string; text?: string }[]) : [];
  return parts.map((p) => p.text ?? '').join('');
}

/**
 * The suite's deterministic Observer and Reflector: a language model of the AI SDK's shape (the
 * suite does not depend on `ai`) whose Observer writes one line per message it is given, naming
 * the message by the `«id»` its content starts with, and whose Reflector keeps every line. So a
 * log says exactly which messages it covers.
 */
export function conformanceModel(options: { delayMs?: number } = {}): LanguageModelLike {
  const delay = () =>
    options.delayMs
      ? new Promise((resolve) => setTimeout(resolve, Math.random() * (options.delayMs ?? 0)))
      : undefined;
  return {
    specificationVersion: 'v3',
    provider: 'conformance',
    modelId: 'echo-observer',
    doGenerate: async ({ prompt }) => {
      await delay();
      const system = prompt.find((m) => m.role === 'system');
      const input = userText(prompt);
      if (typeof system?.content === 'string' && system.content.includes('Reflector')) {
        return answer(`<observations>\n${input}\n</observations>`);
      }
      const marks = [...input.matchAll(MARK)].map((m) => `- 12:00 🟢 observed «${m[1]}»`);
      return answer(
        `<observations>\n${marks.join('\n')}\n</observations>\n<current-task>testing</current-task>`,
      );
    },
  };
}

/** The content of a suite message: its `«id»` mark, then some words. */
export function observedContent(id: string, words = 'the user said something'): string {
  return `«${id}» ${words}`;
}

/** The message ids a log's activated observations name, in order (an id named twice appears twice). */
export function observedIds(state: LogState): string[] {
  return state.entries.flatMap((e) => [...e.text.matchAll(MARK)].map((m) => m[1] as string));
}

/**
 * The invariant of observational memory for one thread: every message of the thread is covered
 * by an activated observation or in the raw tail, never both, and no message is observed twice.
 */
export async function expectObservedOrInTail(memory: Memory, target: ObservationTarget): Promise<void> {
  const om = memory.observations;
  if (!om) throw new ConformanceError('the memory has no observational memory');
  const snapshot = await om.inspect(target);
  const all = (await memory.storage.listMessages({ threadId: target.threadId, perPage: false })).messages;
  const thread = new Set(all.map((m: Message) => m.id));
  const observed = observedIds(snapshot.state).filter((id) => thread.has(id));
  const twice = observed.filter((id, i) => observed.indexOf(id) !== i);
  if (twice.length) throw new ConformanceError(`observed twice: ${twice.slice(0, 5).join(', ')}`);
  const tail = new Set(snapshot.tail.map((m) => m.id));
  const both = observed.filter((id) => tail.has(id));
  if (both.length)
    throw new ConformanceError(`both observed and in the raw tail: ${both.slice(0, 5).join(', ')}`);
  const seen = new Set([...observed, ...tail]);
  const lost = [...thread].filter((id) => !seen.has(id));
  if (lost.length) {
    throw new ConformanceError(
      `${lost.length} message(s) neither observed nor in the raw tail (lost from the agent's view): ${lost.slice(0, 5).join(', ')}`,
    );
  }
}
