import { describe, expect, it } from 'vitest';
import {
  createLexicalEmbedder,
  InMemoryStore,
  Memory,
  type MemoryStorage,
  type Message,
} from '../src/index.ts';

type Call = (...args: unknown[]) => Promise<unknown>;

/**
 * `store` with its reads of recall slowed down (10 ms each) and logged as `> name` when they start
 * and `< name` when they end, so the order shows which reads waited for which. `fastPath`: what
 * its vectors keep of the optional paths: `searchWithWindows` taking the history (the in-memory
 * store's own), without it (`'windows'`), or neither (`'none'`), as stores that have less.
 */
function traced(
  store: InMemoryStore,
  log: string[],
  fastPath: 'history' | 'windows' | 'none' = 'history',
): MemoryStorage {
  const timed =
    (label: (args: unknown[]) => string, call: Call): Call =>
    async (...args) => {
      const name = label(args);
      log.push(`> ${name}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      try {
        return await call(...args);
      } finally {
        log.push(`< ${name}`);
      }
    };
  const wrap = <T extends object>(target: T, names: Record<string, (args: unknown[]) => string>): T =>
    new Proxy(target, {
      get(object, key) {
        const value = Reflect.get(object, key, object);
        if (typeof value !== 'function') return value;
        const bound = value.bind(object) as Call;
        const label = typeof key === 'string' ? names[key] : undefined;
        return label ? timed(label, bound) : bound;
      },
    });
  const vectors = wrap(store.vectors as object, {
    searchVectors: () => 'searchVectors',
    searchWithWindows: () => 'searchWithWindows',
  });
  const withLess = new Proxy(vectors, {
    get: (object, key) =>
      key === 'historyInSearch'
        ? false
        : key === 'searchWithWindows' && fastPath === 'none'
          ? undefined
          : Reflect.get(object, key),
  });
  const keywords = wrap(store.keywords as object, { search: () => 'keywords.search' });
  return new Proxy(
    wrap(store, {
      listMessages: ([query]) =>
        (query as { perPage?: number }).perPage === 0
          ? `window ${(query as { threadId: string }).threadId}`
          : 'history',
      listMessagesById: () => 'listMessagesById',
    }),
    {
      get: (object, key) =>
        key === 'vectors'
          ? fastPath === 'history'
            ? vectors
            : withLess
          : key === 'keywords'
            ? keywords
            : Reflect.get(object, key),
    },
  ) as MemoryStorage;
}

const say = (threadId: string, content: string, id: string, at: number) => ({
  id,
  threadId,
  resourceId: 'u1',
  role: 'user' as const,
  content,
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, at)),
});

describe('memory.recall round trips', () => {
  it('searches beside the history read, reads the hits of both lists in one call and every window at once', async () => {
    const store = new InMemoryStore();
    const log: string[] = [];
    const memory = new Memory({
      storage: traced(store, log),
      embedder: createLexicalEmbedder(),
      options: { lastMessages: 2, semanticRecall: { mode: 'hybrid', topK: 3, messageRange: 1 } },
    });
    for (const threadId of ['a', 'b', 'c', 'now']) await memory.createThread({ resourceId: 'u1', threadId });
    let at = 0;
    for (const threadId of ['a', 'b', 'c']) {
      await memory.saveMessages({
        messages: [
          say(threadId, `filler before in ${threadId}`, `${threadId}1`, at++),
          say(threadId, `the ferry to Skye leaves from pier ${threadId}`, `${threadId}2`, at++),
          say(threadId, `filler after in ${threadId}`, `${threadId}3`, at++),
        ],
      });
    }
    await memory.saveMessages({
      messages: [
        say('now', 'hello', 'n1', at++),
        say('now', 'which pier does the ferry to Skye use', 'n2', at++),
      ],
    });

    log.length = 0;
    const { hits } = await memory.recall({ threadId: 'now', resourceId: 'u1', query: 'ferry to Skye pier' });
    expect(hits.map((h) => h.message.id).sort()).toEqual(['a2', 'b2', 'c2']);
    expect(hits.every((h) => h.window.length === 3)).toBe(true);

    const started = (name: string) => log.indexOf(`> ${name}`);
    const ended = (name: string) => log.indexOf(`< ${name}`);
    // Both searches start before the history read ends.
    expect(started('searchVectors')).toBeLessThan(ended('history'));
    expect(started('keywords.search')).toBeLessThan(ended('history'));
    // One read of the hits' messages for both lists.
    expect(log.filter((entry) => entry === '> listMessagesById')).toHaveLength(1);
    // One read of every window, whatever the threads (hits in a, b and c).
    expect(log.filter((entry) => entry.startsWith('> window'))).toHaveLength(1);
    const window = log.find((entry) => entry.startsWith('> window')) as string;
    expect(log.indexOf(window)).toBeGreaterThan(ended('listMessagesById'));
  });

  it('with one list, reads the hits with their windows: two waits in all, one where the store searches with windows, one call where it reads the history too', async () => {
    const store = new InMemoryStore();
    const log: string[] = [];
    for (const [mode, fastPath] of [
      ['vector', 'history'],
      ['vector', 'windows'],
      ['vector', 'none'],
      ['keyword', 'history'],
    ] as const) {
      const memory = new Memory({
        storage: traced(store, log, fastPath),
        embedder: createLexicalEmbedder(),
        options: { lastMessages: 2, semanticRecall: { mode, topK: 3, messageRange: 1 } },
      });
      if (mode === 'vector' && fastPath === 'history') {
        for (const threadId of ['a', 'b', 'c', 'now'])
          await memory.createThread({ resourceId: 'u1', threadId });
        let at = 0;
        for (const threadId of ['a', 'b', 'c'])
          await memory.saveMessages({
            messages: [
              say(threadId, `filler before in ${threadId}`, `${threadId}1`, at++),
              say(threadId, `the ferry to Skye leaves from pier ${threadId}`, `${threadId}2`, at++),
              say(threadId, `filler after in ${threadId}`, `${threadId}3`, at++),
            ],
          });
        await memory.saveMessages({ messages: [say('now', 'which pier for the ferry to Skye', 'n1', at++)] });
      }
      log.length = 0;
      const { hits } = await memory.recall({
        threadId: 'now',
        resourceId: 'u1',
        query: 'ferry to Skye pier',
      });
      const what = `${mode} (fast path: ${fastPath})`;
      expect(hits.map((h) => h.message.id).sort(), what).toEqual(['a2', 'b2', 'c2']);
      expect(
        hits.map((h) => h.window.map((m) => m.id)),
        what,
      ).toEqual(hits.map((h) => [1, 2, 3].map((i) => `${h.threadId}${i}`)));
      expect(
        log.filter((entry) => entry === '> listMessagesById'),
        what,
      ).toEqual([]);
      const windows = log.filter((entry) => entry.startsWith('> window'));
      const search =
        mode === 'keyword' ? 'keywords.search' : fastPath === 'none' ? 'searchVectors' : 'searchWithWindows';
      if (mode === 'vector' && fastPath === 'history') {
        // The history, the hits and their windows in one call.
        expect(log, what).toEqual(['> searchWithWindows', '< searchWithWindows']);
        continue;
      }
      expect(log.indexOf(`> ${search}`), what).toBeLessThan(log.indexOf('< history'));
      if (search === 'searchWithWindows') {
        // The windows came with the search: no read after it.
        expect(windows, what).toEqual([]);
        expect(
          log.filter((entry) => entry === '> searchVectors'),
          what,
        ).toEqual([]);
      } else {
        expect(windows, what).toHaveLength(1);
        expect(log.indexOf(windows[0] as string), what).toBeGreaterThan(log.indexOf(`< ${search}`));
      }
    }
  });

  it('drops a vector hit whose text changed since its vector was made', async () => {
    const store = new InMemoryStore();
    const memory = new Memory({
      storage: store,
      embedder: createLexicalEmbedder(),
      options: { lastMessages: 0, semanticRecall: { mode: 'vector', topK: 3, messageRange: 0 } },
    });
    await memory.createThread({ resourceId: 'u1', threadId: 't' });
    await memory.saveMessages({
      messages: [
        say('t', 'the ferry to Skye leaves at noon', 'm1', 1),
        say('t', 'the ferry to Skye is late', 'm2', 2),
        say('t', 'the ferry to Mull', 'm3', 3),
      ],
    });
    // Edited behind the memory's back (no re-embedding): its stored vector is of the old text.
    const [m1] = await store.listMessagesById({ ids: ['m1'] });
    await store.saveMessages([{ ...(m1 as Message), content: 'nothing about boats' }]);
    const { hits } = await memory.recall({ threadId: 't', resourceId: 'u1', query: 'ferry to Skye' });
    expect(hits.map((h) => h.message.id)).toEqual(['m2', 'm3']);
  });

  it('asks for as many more hits as the history can hold, so hits in the history do not crowd the others out', async () => {
    const memory = new Memory({
      storage: new InMemoryStore(),
      options: { lastMessages: 5, semanticRecall: { mode: 'keyword', topK: 3, messageRange: 0 } },
    });
    await memory.createThread({ resourceId: 'u1', threadId: 't' });
    // Message i says "kiwi" i + 1 times: the newest five, the history, rank best.
    await memory.saveMessages({
      messages: Array.from({ length: 10 }, (_, i) =>
        say('t', `${'kiwi '.repeat(i + 1)}and some other words here`, `m${i}`, i),
      ),
    });
    const { hits } = await memory.recall({ threadId: 't', resourceId: 'u1', query: 'kiwi' });
    expect(hits.map((h) => h.message.id)).toEqual(['m4', 'm3', 'm2']);
    const whole = await memory.recall({ threadId: 't', resourceId: 'u1', query: 'kiwi', last: false });
    expect(whole.hits).toEqual([]);
    const none = await memory.recall({ threadId: 't', resourceId: 'u1', query: 'kiwi', last: 0 });
    expect(none.hits.map((h) => h.message.id)).toEqual(['m9', 'm8', 'm7']);
  });
});
