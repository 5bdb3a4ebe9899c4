import type { ContentionResult } from './contention.ts';
import type { Comparison } from './measure.ts';

/** Everything one adapter measured. */
export interface AdapterResult {
  adapter: string;
  skipped?: string;
  /** Why this adapter ran smaller fixtures than the others, when it did. */
  note?: string;
  comparisons: Comparison[];
  /** The peer library measured beside engram and raw, and how each of its writes behaves. */
  peer?: { name: string; atomicity: { replace: string; merge: string; saveMessages: string } };
  scaling?: { small: number; large: number; engram: [number, number]; raw: [number, number]; ratio: number };
  contention?: { engram: ContentionResult; raw: ContentionResult };
}

export interface BenchRun {
  date: string;
  machine: string;
  quick: boolean;
  results: AdapterResult[];
}

const ms = (n: number) => (n >= 10 ? n.toFixed(1) : n.toFixed(2));

/** The run as Markdown: one comparison table, one contention table, one scaling table. */
export function toMarkdown(run: BenchRun): string {
  const lines = [
    `Run ${run.date} on ${run.machine}${run.quick ? ' (--quick)' : ''}. Medians in ms; ratio = engram / raw; engram / peer where a peer library ran on the same database (sides alternated round by round).`,
    '',
    '| adapter | operation | engram | raw | ratio | peer | engram / peer |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of run.results) {
    if (r.skipped) lines.push(`| ${r.adapter} | skipped: ${r.skipped} | | | | | |`);
    for (const c of r.comparisons) {
      const peer =
        c.peer && c.peerRatio !== undefined ? `${ms(c.peer.median)} | ${c.peerRatio.toFixed(2)}×` : ' | ';
      lines.push(
        `| ${r.adapter} | ${c.operation} | ${ms(c.engram.median)} | ${ms(c.raw.median)} | ${c.ratio.toFixed(2)}× | ${peer} |`,
      );
    }
  }
  for (const r of run.results) if (r.note) lines.push('', `${r.adapter}: ${r.note}`);
  const peers = run.results.filter((r) => r.peer);
  if (peers.length > 0) {
    lines.push(
      '',
      'Atomicity of the writes compared. engram: a replace is one upsert; `mergeWorkingMemory` is an atomic read-modify-write across processes, validated before anything is written (libSQL and pg a compare-and-set on the value, then, after a lost race, `BEGIN IMMEDIATE` (libSQL) or the row lock (pg); Upstash a compare-and-set on a version, a lease after a lost race); `saveMessages` is all or nothing with thread checks, kept counts and `updatedAt` (libSQL one statement for new messages of one thread, else one transaction; pg one statement). Raw: a replace is one upsert; the merge is serialised (row 2 of bench/README.md); the save is one multi-row insert with no checks.',
      '',
      '| adapter | peer | replace | read-merge-write | saveMessages |',
      '|---|---|---|---|---|',
    );
    for (const r of peers) {
      const a = r.peer!.atomicity;
      lines.push(`| ${r.adapter} | ${r.peer!.name} | ${a.replace} | ${a.merge} | ${a.saveMessages} |`);
    }
  }
  lines.push(
    '',
    'Contended merges (8 processes, disjoint keys into one resource):',
    '',
    '| adapter | side | merges/s | p50 ms | p99 ms | retries | failed | keys survived |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of run.results) {
    if (!r.contention) continue;
    for (const [side, c] of Object.entries(r.contention)) {
      lines.push(
        `| ${r.adapter} | ${side} | ${c.throughput.toFixed(0)} | ${ms(c.p50)} | ${ms(c.p99)} | ${c.retries} | ${c.failed} | ${c.keysSurvived}/${c.keysExpected} |`,
      );
    }
  }
  lines.push(
    '',
    'Scaling of newest-20 listMessages (engram median, ms):',
    '',
    '| adapter | small thread | large thread | large/small |',
    '|---|---:|---:|---:|',
  );
  for (const r of run.results) {
    if (!r.scaling) continue;
    const s = r.scaling;
    lines.push(
      `| ${r.adapter} | ${ms(s.engram[0])} (${s.small}) | ${ms(s.engram[1])} (${s.large}) | ${s.ratio.toFixed(2)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * A bar chart (SVG) of newest-20 latency on the small and large thread, engram and raw. Each
 * adapter has its own scale (backends differ by three orders of magnitude); the numbers are ms.
 */
export function scalingChart(run: BenchRun): string {
  const rows = run.results.filter((r) => r.scaling);
  const bars = rows.flatMap((r) => {
    const s = r.scaling!;
    const max = Math.max(0.001, ...s.engram, ...s.raw);
    return [
      { label: `${r.adapter} engram`, values: s.engram, max, sizes: [s.small, s.large] },
      { label: `${r.adapter} raw`, values: s.raw, max, sizes: [s.small, s.large] },
    ];
  });
  const width = 640;
  const rowHeight = 34;
  const left = 140;
  const scale = (v: number, max: number) => ((width - left - 140) * v) / max;
  const body = bars
    .map((b, i) => {
      const y = 40 + i * rowHeight + (Math.floor(i / 2) * rowHeight) / 3;
      const [a, z] = b.values;
      return [
        `<text x="${left - 8}" y="${y + 14}" text-anchor="end">${b.label}</text>`,
        `<rect x="${left}" y="${y}" width="${scale(a, b.max)}" height="12" fill="#7aa6d8"/>`,
        `<text x="${left + scale(a, b.max) + 4}" y="${y + 10}">${ms(a)} ms (${b.sizes[0]})</text>`,
        `<rect x="${left}" y="${y + 14}" width="${scale(z, b.max)}" height="12" fill="#1f4e89"/>`,
        `<text x="${left + scale(z, b.max) + 4}" y="${y + 24}">${ms(z)} ms (${b.sizes[1]})</text>`,
      ].join('');
    })
    .join('\n');
  const height = 60 + bars.length * rowHeight + (rows.length * rowHeight) / 3;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="13">Newest-20 listMessages, median (each adapter on its own scale) — light: small thread, dark: large thread</text>
${body}
</svg>
`;
}
