import type { RecallAdapterResult, RecallRow } from './recall.ts';

/** One run of the recall section. */
export interface RecallRun {
  date: string;
  machine: string;
  quick: boolean;
  dimensions: number;
  results: RecallAdapterResult[];
}

const ms = (n: number) => (n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** The run as Markdown: every comparison, then the growth of each from 10k to the largest size. */
export function recallMarkdown(run: RecallRun): string {
  const lines = [
    `Semantic recall, run ${run.date} on ${run.machine}${run.quick ? ' (--quick)' : ''}; ${run.dimensions}-dimension vectors of core's lexical embedder, precomputed; top 3 in one resource (spread over 10 threads, next to another resource's 1,000 messages). Medians in ms; ratio = engram / raw exact scan (in \`limit:\` rows, engram / a brute-force scan of the same vectors in a Float32Array in the bench's process); sides alternated round by round. \`memory.recall\` runs with the query's vector in core's query cache: no embedding is timed.`,
    '',
    '| adapter | operation | engram | raw | ratio | peer | engram / peer |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of run.results) {
    if (r.skipped) lines.push(`| ${r.adapter} | skipped: ${r.skipped} | | | | | |`);
    for (const c of r.rows) {
      const peer =
        c.peer && c.peerRatio !== undefined ? `${ms(c.peer.median)} | ${c.peerRatio.toFixed(2)}×` : ' | ';
      lines.push(
        `| ${r.adapter} | ${c.operation} | ${ms(c.engram.median)} | ${ms(c.raw.median)} | ${c.ratio.toFixed(2)}× | ${peer} |`,
      );
    }
  }
  lines.push('', 'Growth of the engram median from 10,000 messages to the largest size:', '');
  lines.push('| adapter | operation | variant | 10k ms | largest ms | growth | ratio at largest |');
  lines.push('|---|---|---|---:|---:|---:|---:|');
  for (const r of run.results) {
    const groups = new Map<string, RecallRow[]>();
    for (const row of r.rows) {
      const key = `${row.operation.split(' of ')[0]}|${row.variant}`;
      groups.set(key, [...(groups.get(key) ?? []), row]);
    }
    for (const [key, rows] of groups) {
      const at10k = rows.find((x) => x.messages === 10_000);
      const last = rows[rows.length - 1] as RecallRow;
      if (!at10k || last === at10k) continue;
      const [operation, variant] = key.split('|');
      lines.push(
        `| ${r.adapter} | ${operation} | ${variant} | ${ms(at10k.engram.median)} | ${ms(last.engram.median)} (${last.messages}) | ${(last.engram.median / at10k.engram.median).toFixed(1)}× | ${last.ratio.toFixed(2)}× |`,
      );
    }
  }
  lines.push('');
  if (run.results.some((r) => r.rows.some((row) => row.variant.includes('HNSW')))) {
    lines.push(
      "- HNSW rows: the raw side runs the same query as in the exact rows, but with the index in place PostgreSQL's planner answers it from the HNSW index too (approximate, without iterative scans: it may return fewer than k hits of the resource). Their ratio is indexed engram / indexed raw; divide the engram median by the exact row's raw median for indexed engram / raw exact scan.",
    );
  }
  for (const r of run.results) {
    if (r.raw) lines.push(`- ${r.adapter} raw: ${r.raw}.`);
    if (r.peer) lines.push(`- ${r.adapter} peer: ${r.peer}.`);
    if (r.note) lines.push(`- ${r.adapter}: ${r.note}.`);
    if (r.setup.length)
      lines.push(
        `- ${r.adapter} setup: ${r.setup.map((s) => `${s.step} ${s.seconds.toFixed(1)} s`).join(', ')}.`,
      );
  }
  return `${lines.join('\n')}\n`;
}
