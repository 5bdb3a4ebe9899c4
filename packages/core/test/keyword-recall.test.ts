import fc from 'fast-check';
import { stemmer } from 'stemmer';
import { describe, expect, it } from 'vitest';
import {
  capabilitiesOf,
  createStore,
  type KeywordDriver,
  MemoryDriver,
  NO_KEYWORD_INDEX,
} from '../src/driver.ts';
import {
  createKeywordAnalyzer,
  createLexicalEmbedder,
  InMemoryStore,
  isMemoryError,
  Memory,
  type MemoryStorage,
  type SemanticRecallOptions,
} from '../src/index.ts';
import { bm25Score, termCounts } from '../src/storage/keywords.ts';

const analyzer = createKeywordAnalyzer();

/** Every printable ASCII character and a few control ones, as units of random text. */
const ASCII_PIECES = [...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), '\t', '\n', '\r'];

describe('keyword analyzer', () => {
  it('folds case and Latin accents, keeps numbers and id parts, drops default stop words, stems English', () => {
    expect(analyzer.terms('The CAFÉ in Zürich')).toEqual(['cafe', 'zurich']);
    expect(analyzer.terms('Order ORD-4471-XZ costs 3.14')).toEqual([
      'order',
      'ord',
      '4471',
      'xz',
      'cost',
      '3',
      '14',
    ]);
    expect(analyzer.terms('running runners')).toEqual(['run', 'runner']);
  });

  it('keeps non-Latin scripts, their marks included', () => {
    expect(analyzer.terms('Москва́ столица')).toEqual(['москва', 'столица']);
    expect(analyzer.terms('हिन्दी भाषा')).toEqual(['हिन्दी', 'भाषा']);
    expect(analyzer.terms('東京タワー').length).toBeGreaterThan(0);
  });

  it('takes its own stop words and stemming', () => {
    const own = createKeywordAnalyzer({ stopWords: ['Zürich'], stem: false });
    expect(own.terms('The café in Zurich running')).toEqual(['the', 'cafe', 'in', 'running']);
    expect(own.id).not.toBe(analyzer.id);
  });

  it('ASCII text, taken without the word segmenter, gives the terms Unicode word segmentation gives', () => {
    // The general path, as the analyzer documents it: Intl.Segmenter's word-like segments, each
    // split at whatever is not a letter, digit or mark.
    const segmenter = new Intl.Segmenter('und', { granularity: 'word' });
    const segmented = (text: string) =>
      [...segmenter.segment(text.toLowerCase())]
        .filter((s) => s.isWordLike)
        .flatMap((s) => s.segment.split(/[^\p{L}\p{N}\p{M}]+/u).filter((w) => w !== ''));
    const plain = createKeywordAnalyzer({ stopWords: [], stem: false });
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...ASCII_PIECES), maxLength: 40 }), (text) => {
        expect(plain.terms(text)).toEqual(segmented(text));
      }),
      { numRuns: 2_000 },
    );
    expect(plain.terms("can't e.g. x_y 3.14 1,000 a:b O'Neil's U.S.A.")).toEqual(
      segmented("can't e.g. x_y 3.14 1,000 a:b O'Neil's U.S.A."),
    );
  });

  it('stems a word alike every time it comes, also past the 20,000 stems it remembers', () => {
    const own = createKeywordAnalyzer({ stopWords: [] });
    // 25,000 distinct ASCII words (base-26 letters), each with suffixes the stemmer strips.
    const letters = (i: number): string =>
      (i >= 26 ? letters(Math.floor(i / 26) - 1) : '') + String.fromCharCode(97 + (i % 26));
    const words = Array.from(
      { length: 25_000 },
      (_, i) => `${letters(i)}${['ing', 'ations', 'ed', 'ness'][i % 4]}`,
    );
    const text = words.join(' ');
    const expected = words.map((w) => stemmer(w));
    expect(own.terms(text)).toEqual(expected);
    expect(own.terms(text)).toEqual(expected);
    expect(own.terms(words.slice(0, 50).join(' '))).toEqual(expected.slice(0, 50));
  });

  it('makes no term of search syntax', () => {
    expect(analyzer.terms('"quoted" * : - NEAR & | ! (x)')).toEqual(['quot', 'near', 'x']);
  });
});

describe('BM25 reference', () => {
  it('computes Okapi BM25 with k1 1.2, b 0.75 and the floored idf', () => {
    const stats = { documents: 4, terms: 10, containing: new Map([['cat', 1]]) };
    const idf = Math.log((4 - 1 + 0.5) / (1 + 0.5));
    const expected = (idf * 2 * 2.2) / (2 + 1.2 * (1 - 0.75 + (0.75 * 3) / 2.5));
    expect(bm25Score(['cat'], termCounts(['cat', 'cat', 'dog']), 3, stats)).toBeCloseTo(expected, 12);
  });
});

async function keywordMemory(storage: MemoryStorage = new InMemoryStore(), extra: object = {}) {
  const memory = new Memory({
    storage,
    options: { lastMessages: 1, semanticRecall: { topK: 3, messageRange: 0, ...extra } },
  });
  await memory.createThread({ resourceId: 'u1', threadId: 'a' });
  await memory.createThread({ resourceId: 'u1', threadId: 'b' });
  await memory.createThread({ resourceId: 'u2', threadId: 'c' });
  return memory;
}

const say = (threadId: string, content: string, id?: string) => ({
  ...(id === undefined ? {} : { id }),
  threadId,
  resourceId: threadId === 'c' ? 'u2' : 'u1',
  role: 'user' as const,
  content,
});

describe('keyword recall (no embedder)', () => {
  it('semanticRecall: true without an embedder finds rare words and ids, in scope, outside the history', async () => {
    const memory = await keywordMemory();
    await memory.saveMessages({
      messages: [
        say('a', 'My order number is ORD-4471', 'm1'),
        say('a', 'I like green tea in the morning', 'm2'),
        say('c', 'ORD-4471 is also mine', 'other'),
        say('b', 'latest message', 'm3'),
      ],
    });
    const { hits } = await memory.recall({ threadId: 'b', resourceId: 'u1', query: 'what was ord 4471?' });
    expect(hits.map((h) => h.message.id)).toEqual(['m1']);
    expect(hits[0]?.scores.keyword).toBeGreaterThan(0);
    expect(hits[0]?.scores.vector).toBeUndefined();
    const none = await memory.recall({ threadId: 'a', resourceId: 'u1', query: 'latest', scope: 'thread' });
    expect(none.hits).toEqual([]);
  });

  it('sees edits, moves and deletes at once', async () => {
    const memory = await keywordMemory();
    await memory.saveMessages({ messages: [say('a', 'the walrus sleeps', 'm1'), say('b', 'now', 'm9')] });
    const find = async (query: string) =>
      (await memory.recall({ threadId: 'b', resourceId: 'u1', query, last: 0 })).hits.map(
        (h) => h.message.id,
      );
    expect(await find('walrus')).toEqual(['m1']);
    await memory.storage.updateMessages([{ id: 'm1', content: 'the narwhal sleeps' }]);
    expect(await find('walrus')).toEqual([]);
    expect(await find('narwhal')).toEqual(['m1']);
    await memory.saveMessages({ messages: [say('b', 'the narwhal sleeps', 'm1')] });
    const inThread = async (threadId: string) =>
      (await memory.recall({ threadId, resourceId: 'u1', query: 'narwhal', last: 0, scope: 'thread' })).hits;
    expect(await inThread('a')).toEqual([]);
    expect((await inThread('b')).map((h) => h.message.id)).toEqual(['m1']);
    await memory.storage.deleteMessages(['m1']);
    expect(await find('narwhal')).toEqual([]);
  });

  it('threshold.keyword drops weak hits', async () => {
    const memory = await keywordMemory(new InMemoryStore(), { threshold: { keyword: 1000 } });
    await memory.saveMessages({ messages: [say('a', 'walrus', 'm1'), say('b', 'now')] });
    expect((await memory.recall({ threadId: 'b', resourceId: 'u1', query: 'walrus' })).hits).toEqual([]);
  });

  it('is UNSUPPORTED on a store without a keyword index, naming what to do', async () => {
    const error = await (async () => {
      try {
        new Memory({ storage: new InMemoryStore({ keywords: false }), options: { semanticRecall: true } });
      } catch (e) {
        return e;
      }
    })();
    expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
    expect((error as Error).message).toMatch(/embedder/);
  });

  it('keywords: false (the NO_KEYWORD_INDEX analyzer): no terms, no search offered, the cascade hooks still run', async () => {
    expect(createKeywordAnalyzer(false)).toBe(NO_KEYWORD_INDEX);
    expect(NO_KEYWORD_INDEX.terms('the walrus sleeps')).toEqual([]);
    const driver = new MemoryDriver();
    const deleted: string[][] = [];
    const keywords = driver.keywords as KeywordDriver;
    Object.assign(driver, {
      keywords: {
        ...keywords,
        analyzer: NO_KEYWORD_INDEX,
        deleteByMessages: async (_tx: unknown, ids: string[]) => void deleted.push(ids),
      },
    });
    const storage = createStore(driver);
    expect(storage.keywords).toBeUndefined();
    expect(capabilitiesOf(storage).keywords).toBe(false);
    const error = (() => {
      try {
        new Memory({ storage, options: { semanticRecall: { mode: 'keyword' } } });
      } catch (e) {
        return e;
      }
    })();
    expect(isMemoryError(error, 'UNSUPPORTED')).toBe(true);
    expect((error as Error).message).toMatch(/keywords: false/);
    await storage.saveThread({
      id: 't',
      resourceId: 'u',
      title: '',
      metadata: {},
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    await storage.saveMessages([
      {
        id: 'm1',
        threadId: 't',
        resourceId: 'u',
        role: 'user',
        content: 'walrus',
        type: 'text',
        createdAt: new Date(),
      },
    ]);
    await storage.deleteMessages(['m1']);
    expect(deleted).toEqual([['m1']]);
  });

  it('refuses reindex in keyword mode', async () => {
    const memory = await keywordMemory();
    await expect(memory.reindex()).rejects.toMatchObject({ code: 'UNSUPPORTED' });
  });
});

describe('hybrid recall', () => {
  it('is the default with an embedder; hits report both scores; a hit of one list still counts', async () => {
    const storage = new InMemoryStore();
    const memory = new Memory({
      storage,
      embedder: createLexicalEmbedder(),
      options: { lastMessages: 0, semanticRecall: { topK: 3, messageRange: 0 } },
    });
    expect(memory.options.semanticRecall ? memory.options.semanticRecall.mode : 'off').toBeUndefined();
    await memory.createThread({ resourceId: 'u1', threadId: 'a' });
    await memory.saveMessages({
      messages: [say('a', 'the invoice number is 99812', 'm1'), say('a', 'cats and dogs', 'm2')],
    });
    const { hits } = await memory.recall({ threadId: 'a', resourceId: 'u1', query: 'invoice 99812' });
    expect(hits[0]?.message.id).toBe('m1');
    expect(hits[0]?.scores.keyword).toBeGreaterThan(0);
    expect(hits[0]?.scores.vector).toBeGreaterThan(0);
    // The lexical embedder's default fusion: keyword weight 3, vector 1, rank constant 1.
    expect(hits[0]?.score).toBeCloseTo(3 / 2 + 1 / 2, 12);
  });

  it('fusion weights and rank constant decide between the top hits of the keyword and vector lists', async () => {
    const top = async (semanticRecall: SemanticRecallOptions) => {
      const memory = new Memory({
        storage: new InMemoryStore(),
        embedder: createLexicalEmbedder(),
        options: { lastMessages: 0, semanticRecall: { topK: 3, messageRange: 0, ...semanticRecall } },
      });
      await memory.createThread({ resourceId: 'u1', threadId: 'a' });
      await memory.saveMessages({
        messages: [
          say('a', 'order 4471 shipped', 'm1'),
          say('a', 'shipping the order to the office took ages, the order was late', 'm2'),
          say('a', 'orders', 'm3'),
        ],
      });
      const query = 'order 4471 shipping late office';
      return (await memory.recall({ threadId: 'a', resourceId: 'u1', query })).hits;
    };
    const [byKeyword] = await top({ mode: 'keyword' });
    const [byVector] = await top({ mode: 'vector' });
    // The fixture's premise: the two lists disagree on the best hit.
    expect(byKeyword?.message.id).not.toBe(byVector?.message.id);
    const keywordLed = await top({ mode: 'hybrid', fusion: { rankConstant: 0, weights: { keyword: 10 } } });
    const vectorLed = await top({ mode: 'hybrid', fusion: { rankConstant: 0, weights: { vector: 10 } } });
    expect(keywordLed[0]?.message.id).toBe(byKeyword?.message.id);
    expect(vectorLed[0]?.message.id).toBe(byVector?.message.id);
    // Its score is Σ weight / (rankConstant + rank) over both lists, the keyword list's rank 1.
    const vectorRank =
      (await top({ mode: 'vector' })).findIndex((h) => h.message.id === byKeyword?.message.id) + 1;
    expect(keywordLed[0]?.score).toBeCloseTo(10 / 1 + (vectorRank > 0 ? 1 / vectorRank : 0), 12);
  });
});
