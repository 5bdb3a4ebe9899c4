import { describe, expect, it } from 'vitest';
import { createLexicalEmbedder, InMemoryStore, isMemoryError, Memory } from '../src/index.ts';

const resourceId = 'r';
const threadId = 't';

async function seeded(mode: 'vector' | 'keyword' | 'hybrid', embedder = createLexicalEmbedder()) {
  const storage = new InMemoryStore();
  const memory = new Memory({ storage, embedder, options: { semanticRecall: { mode }, lastMessages: 2 } });
  await memory.createThread({ threadId, resourceId });
  await memory.saveMessages({
    messages: ['lisbon trams are yellow', 'the coffee in porto', 'a train to madrid', 'hello', 'bye'].map(
      (content, i) => ({
        id: `m${i}`,
        threadId,
        resourceId,
        role: 'user' as const,
        content,
        createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
      }),
    ),
  });
  return { storage, memory };
}

const aborted = (reason: unknown) => {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
};

describe('recall and reindex with an AbortSignal', () => {
  for (const mode of ['vector', 'keyword', 'hybrid'] as const) {
    it(`${mode}: an aborted signal rejects with its reason, also for a query whose vector is cached`, async () => {
      const { memory } = await seeded(mode);
      const query = 'lisbon trams';
      const { hits } = await memory.recall({ threadId, resourceId, query });
      expect(hits.map((h) => h.message.id)).toContain('m0');
      const reason = new Error('the request was cancelled');
      await expect(memory.recall({ threadId, resourceId, query, signal: aborted(reason) })).rejects.toBe(
        reason,
      );
      // Without a reason: the platform's AbortError.
      const controller = new AbortController();
      controller.abort();
      await expect(
        memory.recall({ threadId, resourceId, query, signal: controller.signal }),
      ).rejects.toMatchObject({
        name: 'AbortError',
      });
    });
  }

  it('a signal aborted while the recall runs rejects it, though its search completed', async () => {
    const controller = new AbortController();
    const reason = new Error('stop');
    const lexical = createLexicalEmbedder();
    // The query's embedding aborts the signal, then answers: the search still runs, the result is not handed back.
    const embedder = {
      ...lexical,
      doEmbed: async (options: Parameters<typeof lexical.doEmbed>[0]) => {
        if (options.values.includes('porto coffee')) controller.abort(reason);
        return lexical.doEmbed(options);
      },
    };
    const { memory } = await seeded('vector', embedder);
    await expect(
      memory.recall({ threadId, resourceId, query: 'porto coffee', signal: controller.signal }),
    ).rejects.toBe(reason);
    // A live signal changes nothing.
    const { hits } = await memory.recall({
      threadId,
      resourceId,
      query: 'porto coffee',
      signal: new AbortController().signal,
    });
    expect(hits[0]?.message.id).toBe('m1');
  });

  it('a signal that is not an AbortSignal is INVALID_ARGUMENT', async () => {
    const { memory } = await seeded('vector');
    for (const signal of [{ aborted: 'no' }, 'abort', { aborted: false }]) {
      const error = await memory
        .recall({ threadId, resourceId, query: 'x', signal: signal as never })
        .catch((e: unknown) => e);
      expect(isMemoryError(error) && error.code === 'INVALID_ARGUMENT', String(error)).toBe(true);
      expect(String(error)).toContain('signal must be an AbortSignal');
      const reindex = await memory.reindex({ signal: signal as never }).catch((e: unknown) => e);
      expect(isMemoryError(reindex) && reindex.code === 'INVALID_ARGUMENT', String(reindex)).toBe(true);
    }
  });

  it('reindex with an aborted signal rejects with its reason before embedding anything', async () => {
    const storage = new InMemoryStore();
    const plain = new Memory({ storage });
    await plain.createThread({ threadId, resourceId });
    await plain.saveMessages({
      messages: [
        { id: 'a', threadId, resourceId, role: 'user', content: 'words to embed', createdAt: new Date(0) },
      ],
    });
    const memory = new Memory({
      storage,
      embedder: createLexicalEmbedder(),
      options: { semanticRecall: true },
    });
    const reason = new Error('not now');
    await expect(memory.reindex({ signal: aborted(reason) })).rejects.toBe(reason);
    expect(memory.embeddingUsage().calls).toBe(0);
    expect((await memory.reindex()).embedded).toBe(1);
  });
});
