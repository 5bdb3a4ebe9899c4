/**
 * A plain Okapi BM25 over a list of documents (k1 1.2, b 0.75, idf ln((N − n + 0.5)/(n + 0.5))
 * floored at 1e-6, as SQLite FTS5's `bm25()`), written here independently of the stores: the
 * reference the retrieval benchmark holds keyword recall to. Documents and queries come as
 * terms (the bench uses core's analyzer for both, so tokenisation is not what is compared).
 */
export class Bm25Index {
  private readonly docs: { id: string; at: number; counts: Map<string, number>; length: number }[] = [];
  private readonly containing = new Map<string, number>();
  private totalLength = 0;

  add(id: string, at: Date, terms: readonly string[]): void {
    if (terms.length === 0) return;
    const counts = new Map<string, number>();
    for (const t of terms) counts.set(t, (counts.get(t) ?? 0) + 1);
    for (const t of counts.keys()) this.containing.set(t, (this.containing.get(t) ?? 0) + 1);
    this.docs.push({ id, at: at.getTime(), counts, length: terms.length });
    this.totalLength += terms.length;
  }

  /**
   * The ids of the `topK` best documents (of those `keep` accepts): score, then newer first, then
   * id (the stores' tie rule). Statistics are over every document added.
   */
  search(queryTerms: readonly string[], topK: number, keep: (id: string) => boolean = () => true): string[] {
    const terms = [...new Set(queryTerms)];
    const n = this.docs.length;
    const avg = n === 0 ? 0 : this.totalLength / n;
    const idf = new Map(
      terms.map((t) => {
        const df = this.containing.get(t) ?? 0;
        return [t, Math.max(Math.log((n - df + 0.5) / (df + 0.5)), 1e-6)];
      }),
    );
    const scored: { id: string; at: number; score: number }[] = [];
    for (const doc of this.docs) {
      if (!keep(doc.id)) continue;
      let score = 0;
      for (const t of terms) {
        const tf = doc.counts.get(t) ?? 0;
        if (tf > 0)
          score += ((idf.get(t) as number) * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * doc.length) / avg));
      }
      if (score > 0) scored.push({ id: doc.id, at: doc.at, score });
    }
    scored.sort((a, b) => b.score - a.score || b.at - a.at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return scored.slice(0, topK).map((d) => d.id);
  }
}
