import { type ReferenceCorpus, type RetrievalAdapterResult, RUNS, type Scores } from './retrieval.ts';
import { CATEGORIES, type datasetShape } from './retrieval-data.ts';
import type { LatencyAdapterResult } from './retrieval-latency.ts';

/** One run of `--retrieval`, as written to `<date>[-quick]-retrieval.json`. */
export interface RetrievalRun {
  date: string;
  machine: string;
  quick: boolean;
  /** What the vector list was ranked with (`lexical`: core's; `word-vectors`: GloVe, `src/word-vectors.ts`). */
  embedder?: 'lexical' | 'word-vectors';
  dataset: ReturnType<typeof datasetShape>;
  /**
   * The in-process BM25 reference over the same turns, statistics per conversation (a plain
   * BM25 over the conversation; what Upstash and MongoDB compute) and over all conversations
   * (what libSQL's and pg's whole-index statistics give).
   */
  reference: Record<ReferenceCorpus, Scores>;
  results: RetrievalAdapterResult[];
}

/** One run of `--retrieval-latency`, as written to `<date>[-quick]-retrieval-latency.json`. */
export interface LatencyRun {
  date: string;
  machine: string;
  quick: boolean;
  sizes: number[];
  results: LatencyAdapterResult[];
}

const REFERENCES: [ReferenceCorpus, string][] = [
  ['conversation', 'BM25 reference (statistics per conversation)'],
  ['all', 'BM25 reference (statistics over all conversations)'],
];

const pct = (x: number | undefined) =>
  x === undefined || Number.isNaN(x) ? '—' : `${(100 * x).toFixed(1)}%`;
const ms = (x: number | undefined) =>
  x === undefined || Number.isNaN(x) ? '—' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0);

const vectorNote = (run: RetrievalRun) =>
  run.embedder === 'word-vectors'
    ? 'a sentence embedder from pre-trained GloVe word vectors (100 dimensions; the smooth-inverse-frequency weighted mean of the known words, `src/word-vectors.ts`): it finds meaning and misses ids and most numbers'
    : "core's offline lexical embedder (256 dimensions): it matches words and character trigrams, not meaning";

export function retrievalMarkdown(run: RetrievalRun): string {
  const d = run.dataset;
  const lines = [
    `# Retrieval quality${run.quick ? ' (quick)' : ''}${run.embedder === 'word-vectors' ? ', vector list by word vectors' : ''} — ${run.date.slice(0, 10)}`,
    '',
    `${run.machine}. Dataset: seeded generator (\`src/retrieval-data.ts\`, seed ${d.seed}), ${d.conversations} conversations, ${d.sessions} sessions, ${d.turns} turns, ${d.questions} questions (${CATEGORIES.map((c) => `${c} ${d.byCategory[c]}`).join(', ')}).`,
    "Each conversation is one resource, each session one thread, each turn one message. `memory.recall` with `scope: resource`, `messageRange: 0`, `last: 0` (no history left out), top 10; recall@k = share of a question's evidence turns in the top k, averaged over questions.",
    `vector = ${vectorNote(run)}; hybrid = reciprocal-rank fusion of both lists (default: rank constant 60, both weighted 1; the second hybrid row weights the keyword list 3 with rank constant 1); BM25 reference = an in-process Okapi BM25 (\`src/bm25.ts\`) over the same turns and core's analyzed terms, searching the question's conversation, computed in the same run; its statistics (document frequencies, average length) per conversation, or over all conversations as libSQL and pg keep them (Upstash and MongoDB keep them per resource).`,
    '',
    '| adapter | mode | R@1 | R@5 | R@10 | median ms / query |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...REFERENCES.map(([corpus, label]) => {
      const s = run.reference[corpus];
      return `| — | ${label} | ${pct(s.all.r1)} | ${pct(s.all.r5)} | ${pct(s.all.r10)} | ${ms(s.medianMs)} |`;
    }),
  ];
  for (const r of run.results) {
    if (r.skipped) {
      lines.push(`| ${r.adapter} | not run: ${r.skipped} | | | | |`);
      continue;
    }
    for (const { label } of RUNS) {
      const s = r.modes[label];
      if (s)
        lines.push(
          `| ${r.adapter} | ${label} | ${pct(s.all.r1)} | ${pct(s.all.r5)} | ${pct(s.all.r10)} | ${ms(s.medianMs)} |`,
        );
    }
  }
  lines.push('', '## Recall@5 / recall@10 per category', '');
  lines.push(
    `| adapter | mode | ${CATEGORIES.join(' | ')} |`,
    `| --- | --- |${CATEGORIES.map(() => ' ---: |').join('')}`,
  );
  const row = (adapter: string, mode: string, s: Scores) =>
    `| ${adapter} | ${mode} | ${CATEGORIES.map((c) => `${pct(s.byCategory[c]?.r5)} / ${pct(s.byCategory[c]?.r10)}`).join(' | ')} |`;
  for (const [corpus, label] of REFERENCES) lines.push(row('—', label, run.reference[corpus]));
  for (const r of run.results)
    for (const { label } of RUNS)
      if (r.modes[label]) lines.push(row(r.adapter, label, r.modes[label] as Scores));
  lines.push('', '## Per adapter', '');
  for (const r of run.results) {
    if (r.skipped) continue;
    lines.push(
      `- ${r.adapter}: keyword ranking \`${r.ranking}\`; loading through \`Memory\` took ${r.loadSeconds?.toFixed(1)} s; keyword top 10 holds ${pct(r.keywordOverlap)} of the top 10 of the reference with the same statistics (${r.referenceCorpus === 'all' ? 'all conversations' : 'per conversation'}; ${deltaNote(run.reference[r.referenceCorpus ?? 'conversation'], r.modes.keyword)}).`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function deltaNote(reference: Scores, keyword: Scores | undefined): string {
  if (!keyword) return 'no keyword run';
  const d = (k: 'r5' | 'r10') => `${((keyword.all[k] - reference.all[k]) * 100).toFixed(1)} points`;
  return `R@5 ${d('r5')}, R@10 ${d('r10')} from the reference`;
}

export function latencyMarkdown(run: LatencyRun): string {
  const lines = [
    `# Keyword and hybrid search latency${run.quick ? ' (quick)' : ''} — ${run.date.slice(0, 10)}`,
    '',
    `${run.machine}. One resource of ${run.sizes.map((n) => n.toLocaleString('en')).join(', ')} messages (10 threads, texts of the retrieval dataset, saved through \`Memory\` in hybrid mode with core's lexical embedder); queries are the dataset's questions, top 10. engram = \`storage.keywords.search\` (what \`memory.recall\` in keyword mode runs); raw = the backend's own full-text query on the same index, run directly in the same process, alternating with engram's; hybrid = \`memory.recall\` in hybrid mode (the query embedded, both lists searched and fused, the hits' messages read; no history, no windows), in the same rounds.`,
    '',
    '| adapter | messages | engram median ms | engram p95 ms | raw median ms | raw p95 ms | engram / raw | hybrid median ms | hybrid p95 ms | hits / query (engram, raw, hybrid) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of run.results) {
    if (r.skipped) {
      lines.push(`| ${r.adapter} | not run: ${r.skipped} | | | | | | | | |`);
      continue;
    }
    for (const row of r.rows) {
      lines.push(
        `| ${r.adapter} | ${row.messages.toLocaleString('en')} | ${ms(row.engram.median)} | ${ms(row.engram.p95)} | ${ms(row.raw?.median)} | ${ms(row.raw?.p95)} | ${row.raw ? (row.engram.median / row.raw.median).toFixed(2) : '—'} | ${ms(row.hybrid?.median)} | ${ms(row.hybrid?.p95)} | ${row.meanHits.engram.toFixed(1)}, ${row.meanHits.raw?.toFixed(1) ?? '—'}, ${row.meanHits.hybrid?.toFixed(1) ?? '—'} |`,
      );
    }
  }
  lines.push('');
  for (const r of run.results.filter((x) => !x.skipped)) {
    lines.push(
      `- ${r.adapter}: raw = ${r.raw ?? "none (no full-text query of the backend's own: the index is the adapter's own data)"}; setup ${r.setup.map((x) => `${x.step} ${x.seconds.toFixed(1)} s`).join(', ')}.${r.note ? ` ${r.note}` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
