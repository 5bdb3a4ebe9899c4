import { createKeywordAnalyzer } from '@engram/core';
import { searchIndexed } from '@engram/core/driver';
import { describe, expect, it } from 'vitest';
import { Bm25Index } from '../src/bm25.ts';
import { referenceRankings, score } from '../src/retrieval.ts';
import { datasetShape, FULL, generateDataset, QUICK } from '../src/retrieval-data.ts';

describe('retrieval dataset', () => {
  it('has the documented shape and is the same for the same seed', () => {
    const shape = datasetShape(generateDataset(FULL));
    expect(shape).toMatchObject({ conversations: 10, sessions: 150, turns: 4_500, questions: 160 });
    expect(shape.byCategory).toEqual({
      name: 30,
      number: 30,
      id: 30,
      'rare word': 30,
      paraphrase: 30,
      'multi-session': 10,
    });
    expect(generateDataset(QUICK)).toEqual(generateDataset(QUICK));
    expect(generateDataset(QUICK, 28)).not.toEqual(generateDataset(QUICK));
  });

  it('labels evidence that exists, in user turns; paraphrases share no term with it', () => {
    const analyzer = createKeywordAnalyzer();
    for (const c of generateDataset(FULL).conversations) {
      const turns = new Map(c.sessions.flatMap((s) => s.turns.map((t) => [t.id, t] as const)));
      for (const q of c.questions) {
        const evidence = q.evidence.map((id) => turns.get(id));
        expect(evidence.every((t) => t?.role === 'user')).toBe(true);
        if (q.category !== 'paraphrase') continue;
        const asked = new Set(analyzer.terms(q.text));
        const shared = evidence.flatMap((t) => analyzer.terms(t?.text ?? '')).filter((x) => asked.has(x));
        expect(shared).toEqual([]);
      }
    }
  });
});

describe('BM25 reference', () => {
  it("ranks as core's in-memory reference search over the same terms", () => {
    const analyzer = createKeywordAnalyzer();
    const [c] = generateDataset(QUICK).conversations;
    if (!c) throw new Error('no conversation');
    const turns = c.sessions.flatMap((s) => s.turns);
    const index = new Bm25Index();
    for (const t of turns) index.add(t.id, t.createdAt, analyzer.terms(t.text));
    const indexed = turns
      .map(
        (t) =>
          [
            { id: t.id, threadId: 't', resourceId: 'r', createdAt: t.createdAt },
            analyzer.terms(t.text),
          ] as const,
      )
      .filter(([, terms]) => terms.length > 0);
    for (const q of c.questions) {
      const terms = [...new Set(analyzer.terms(q.text))];
      const core = searchIndexed(indexed, { terms, topK: 10, resourceId: 'r', excludeIds: [] });
      expect(index.search(terms, 10)).toEqual(core.map((h) => h.messageId));
    }
  });

  it('scores recall@k from the evidence found', () => {
    const data = generateDataset(QUICK);
    const questions = data.conversations.flatMap((c) => c.questions);
    const none = score(questions, new Map(), [1]);
    expect(none.all).toEqual({ r1: 0, r5: 0, r10: 0 });
    const perfect = score(questions, new Map(questions.map((q) => [q.id, q.evidence])), [1]);
    expect(perfect.all.r10).toBe(1);
    // The reference finds no paraphrase: the questions share no term with their evidence.
    expect(referenceRankings(data, 'conversation').scores.byCategory.paraphrase?.r10).toBe(0);
  });
});
