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
      "- HNSW rows: the raw side runs the same query as in the exact rows, which with the index in place PostgreSQL's planner answers from the HNSW index, on connections set once to the store's index settings (`hnsw.ef_search`, iterative scans in strict order; before 2026-12-05 it ran at pgvector's defaults, which search less and may return fewer than k hits of the resource). Their ratio is indexed engram / indexed raw; divide the engram median by the exact row's raw median for indexed engram / raw exact scan.",
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

/**
 * A line chart (SVG) of the `searchVectors` median per resource size, one line per adapter and
 * variant, both axes logarithmic; where the run has `limit:` rows, the in-process brute-force
 * scan of the same vectors (their raw side, averaged over adapters) is the dashed line.
 */
export function recallChart(run: RecallRun): string {
  const series = new Map<string, { messages: number; ms: number }[]>();
  const brute = new Map<number, number[]>();
  for (const r of run.results) {
    for (const row of r.rows) {
      if (row.operation.startsWith('limit:')) {
        brute.set(row.messages, [...(brute.get(row.messages) ?? []), row.raw.median]);
      } else if (row.operation.startsWith('searchVectors')) {
        const key = row.variant === 'exact' ? r.adapter : `${r.adapter}, ${row.variant.split(' (')[0]}`;
        series.set(key, [...(series.get(key) ?? []), { messages: row.messages, ms: row.engram.median }]);
      }
    }
  }
  if (brute.size > 0) {
    const points = [...brute].map(([messages, all]) => ({
      messages,
      ms: all.reduce((a, b) => a + b, 0) / all.length,
    }));
    series.set('brute force in a Float32Array (the limit)', points);
  }
  const points = [...series.values()].flat();
  const [width, height, left, top, plotW, plotH] = [640, 380, 60, 40, 380, 280];
  const lo = (v: number[]) => Math.log10(Math.min(...v));
  const hi = (v: number[]) => Math.log10(Math.max(...v));
  const [x0, x1] = [
    Math.floor(lo(points.map((p) => p.messages))),
    Math.ceil(hi(points.map((p) => p.messages))),
  ];
  const [y0, y1] = [Math.floor(lo(points.map((p) => p.ms))), Math.ceil(hi(points.map((p) => p.ms)))];
  const x = (n: number) => left + (plotW * (Math.log10(n) - x0)) / Math.max(1, x1 - x0);
  const y = (v: number) => top + plotH - (plotH * (Math.log10(v) - y0)) / Math.max(1, y1 - y0);
  const colours = ['#1f4e89', '#c0504d', '#4f8f3a', '#8064a2', '#d08b1f', '#2c9fa6', '#7f7f7f'];
  const grid: string[] = [];
  for (let e = x0; e <= x1; e++) {
    grid.push(
      `<line x1="${x(10 ** e)}" y1="${top}" x2="${x(10 ** e)}" y2="${top + plotH}" stroke="#ddd"/>`,
      `<text x="${x(10 ** e)}" y="${top + plotH + 14}" text-anchor="middle">${(10 ** e).toLocaleString('en')}</text>`,
    );
  }
  for (let e = y0; e <= y1; e++) {
    grid.push(
      `<line x1="${left}" y1="${y(10 ** e)}" x2="${left + plotW}" y2="${y(10 ** e)}" stroke="#ddd"/>`,
      `<text x="${left - 6}" y="${y(10 ** e) + 4}" text-anchor="end">${10 ** e} ms</text>`,
    );
  }
  const lines = [...series].map(([label, pts], i) => {
    const colour = brute.size > 0 && i === series.size - 1 ? '#000' : colours[i % colours.length];
    const dash = brute.size > 0 && i === series.size - 1 ? ' stroke-dasharray="5,4"' : '';
    const sorted = [...pts].sort((a, b) => a.messages - b.messages);
    const path = sorted.map((p) => `${x(p.messages)},${y(p.ms)}`).join(' ');
    const dots = sorted
      .map((p) => `<circle cx="${x(p.messages)}" cy="${y(p.ms)}" r="3" fill="${colour}"/>`)
      .join('');
    const legend = `<line x1="${left + plotW + 14}" y1="${top + 8 + i * 18}" x2="${left + plotW + 34}" y2="${top + 8 + i * 18}" stroke="${colour}" stroke-width="2"${dash}/><text x="${left + plotW + 38}" y="${top + 12 + i * 18}">${label}</text>`;
    return `<polyline points="${path}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>${dots}${legend}`;
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="13">searchVectors top 3, median ms by messages in the resource (log–log), ${run.date.slice(0, 10)}</text>
${grid.join('\n')}
${lines.join('\n')}
<text x="${left + plotW / 2}" y="${height - 12}" text-anchor="middle">messages in the resource</text>
</svg>
`;
}
