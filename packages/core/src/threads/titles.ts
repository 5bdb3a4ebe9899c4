import { MemoryError } from '../errors.ts';
import { generate, type LanguageModelLike } from '../observations/model.ts';
import { messageText } from '../recall/text.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import type { Message, Thread } from '../storage/records.ts';
import { DEFAULT_TITLE_INSTRUCTIONS, type ResolvedThreadTitle } from './title-options.ts';

/** What `memory.generateTitle` did. */
export interface GeneratedTitle {
  /** The thread's title after the call: the generated one when stored, else the one kept. */
  title: string;
  /**
   * `true` when the generated title was stored; `false` when the thread already had a title
   * (set by a user, or by another writer while the model ran), which is kept and never replaced.
   */
  applied: boolean;
}

/** The first exchange of a thread: its first user message and the first assistant reply with text. */
interface Exchange {
  user: Message;
  assistant: Message;
}

/** How many of a thread's oldest messages are searched for its first exchange. */
const FIRST_MESSAGES = 20;
/** The longest title stored; a longer answer is cut at a word boundary. */
const MAX_TITLE = 120;
/** How much of each message the model is shown. */
const MAX_EXCERPT = 2_000;

/**
 * Titles threads from their first exchange. A title is only ever written over the empty
 * (default) title: the stored thread is read again right before the write, so a title set while
 * the model ran is kept. The storage contract has no compare-and-set on titles, so a title set
 * in the window between that read and the write (one round trip) is overwritten.
 */
export class ThreadTitles {
  constructor(
    private readonly storage: MemoryStorage,
    private readonly config: ResolvedThreadTitle | false,
    private readonly onError: (error: unknown, threadId: string) => void,
  ) {}

  /**
   * After a save: titles each untitled thread whose first assistant reply is among `saved`.
   * Never throws; a failing or timed-out model goes to `onError` and the title stays as it is.
   */
  async afterSave(saved: readonly Message[]): Promise<void> {
    const config = this.config;
    if (!config) return;
    const replies = new Map<string, Set<string>>();
    for (const m of saved) {
      if (m.role !== 'assistant' || messageText(m) === '') continue;
      const ids = replies.get(m.threadId) ?? new Set<string>();
      ids.add(m.id);
      replies.set(m.threadId, ids);
    }
    for (const [threadId, ids] of replies) {
      try {
        const thread = await this.storage.getThreadById({ threadId });
        if (thread?.title !== '') continue;
        const exchange = await firstExchange(this.storage, threadId);
        if (!exchange || !ids.has(exchange.assistant.id)) continue;
        await this.apply(thread, exchange, config.model, config);
      } catch (error) {
        this.onError(error, threadId);
      }
    }
  }

  /**
   * Generates a title from the thread's first exchange and stores it if the thread is still
   * untitled. A thread that already has a title gets no model call. Model errors propagate.
   */
  async generate(thread: Thread, model: LanguageModelLike | undefined): Promise<GeneratedTitle> {
    if (thread.title !== '') return { title: thread.title, applied: false };
    const config = this.config;
    const using = model ?? (config ? config.model : undefined);
    if (!using) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        'generateTitle needs a model: pass { model } or set options.threadTitle.model',
      );
    }
    const exchange = await firstExchange(this.storage, thread.id);
    if (!exchange) {
      throw new MemoryError(
        'INVALID_ARGUMENT',
        `generateTitle: thread ${JSON.stringify(thread.id)} has no first exchange yet (a user message and an assistant reply with text); call it after the first reply is saved`,
        { details: { operation: 'generateTitle', threadId: thread.id } },
      );
    }
    return this.apply(thread, exchange, using, config || undefined);
  }

  private async apply(
    thread: Thread,
    exchange: Exchange,
    model: LanguageModelLike,
    config: Pick<ResolvedThreadTitle, 'instructions' | 'timeoutMs'> | undefined,
  ): Promise<GeneratedTitle> {
    const answer = await generate(
      model,
      config?.instructions ?? DEFAULT_TITLE_INSTRUCTIONS,
      prompt(exchange),
      config?.timeoutMs ?? 5_000,
    );
    const title = cleanTitle(answer);
    if (title === '') {
      throw new Error(`${model.provider}:${model.modelId} answered no title text; the title was left as is`);
    }
    // The narrowest window the contract allows: read again, write only over the empty title.
    const current = await this.storage.getThreadById({ threadId: thread.id });
    if (!current) return { title: '', applied: false };
    if (current.title !== '') return { title: current.title, applied: false };
    await this.storage.updateThread({ id: thread.id, title });
    return { title, applied: true };
  }
}

/** The first user message with text and the first assistant reply with text after it. */
async function firstExchange(storage: MemoryStorage, threadId: string): Promise<Exchange | null> {
  const { messages } = await storage.listMessages({ threadId, perPage: FIRST_MESSAGES, direction: 'ASC' });
  const at = messages.findIndex((m) => m.role === 'user' && messageText(m) !== '');
  const user = messages[at];
  if (!user) return null;
  const assistant = messages.slice(at + 1).find((m) => m.role === 'assistant' && messageText(m) !== '');
  return assistant ? { user, assistant } : null;
}

function prompt({ user, assistant }: Exchange): string {
  return [
    `<user>\n${messageText(user).slice(0, MAX_EXCERPT)}\n</user>`,
    `<assistant>\n${messageText(assistant).slice(0, MAX_EXCERPT)}\n</assistant>`,
    'The title of this conversation:',
  ].join('\n');
}

/** The model's answer as a title: first line, no quotes or `Title:` prefix, at most `MAX_TITLE` characters. */
export function cleanTitle(answer: string): string {
  let title = (answer.trim().split('\n')[0] ?? '').trim();
  const unquote = (t: string) => t.replace(/^["'“”‘’`*]+|["'“”‘’`*]+$/g, '').trim();
  title = unquote(unquote(title).replace(/^title\s*:\s*/i, ''));
  title = title.replace(/[.。]+$/, '').trim();
  if (title.length > MAX_TITLE) {
    const cut = title.slice(0, MAX_TITLE);
    const space = cut.lastIndexOf(' ');
    title = (space > MAX_TITLE / 2 ? cut.slice(0, space) : cut).trim();
  }
  return title;
}
