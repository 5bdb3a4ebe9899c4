/**
 * Throughput and peak memory of moving a store from a libSQL file to PostgreSQL with the `engram`
 * CLI: `engram export` to a JSON Lines file, `engram import` of that file into one schema, and
 * `engram copy` straight into another, then the same copy again (it converges: everything is
 * skipped). The file holds N messages (default 100,000) in resources of 10 threads of 1,000, saved
 * through the store (so its keyword index is written). Each command runs in a process of its
 * own under GNU time: wall seconds and the largest resident set of the process tree.
 *
 *   node --import tsx --conditions=source scripts/copy-time.ts [messages]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Message } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { descriptor as pgDescriptor } from '@engram/pg/descriptor';

const size = Number(process.argv[2] ?? 100_000);
const PER_THREAD = 1_000;
const THREADS = 10;
const cli = fileURLToPath(new URL('../../packages/inspector/bin/engram.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'engram-copy-'));
const file = `file:${join(dir, 'source.db')}`;
const dump = join(dir, 'dump.jsonl');

async function seed(): Promise<void> {
  const store = new LibSQLStore({ url: file });
  try {
    for (let from = 0; from < size; from += PER_THREAD) {
      const thread = from / PER_THREAD;
      const resourceId = `user-${Math.floor(thread / THREADS)}`;
      const threadId = `${resourceId}-t${thread % THREADS}`;
      const at = new Date(Date.UTC(2026, 0, 1) + from * 1000);
      await store.saveThread({
        id: threadId,
        resourceId,
        title: threadId,
        metadata: {},
        createdAt: at,
        updatedAt: at,
      });
      const messages: Message[] = Array.from({ length: Math.min(PER_THREAD, size - from) }, (_, i) => ({
        id: `${threadId}-m${i}`,
        threadId,
        resourceId,
        role: i % 2 ? 'assistant' : 'user',
        content: `message ${from + i}: the quick brown fox jumps over the lazy dog near pier ${i % 97}`,
        type: 'text',
        createdAt: new Date(at.getTime() + i),
      }));
      await store.saveMessages(messages);
    }
  } finally {
    await store.close();
  }
}

/** Runs the CLI with `args` under GNU time; stdin/stdout optionally from/to files. */
function run(label: string, args: string[], io: { stdin?: string; stdout?: string } = {}) {
  const result = spawnSync('/usr/bin/time', ['-f', 'TIME %e %M', process.execPath, cli, ...args], {
    stdio: [
      io.stdin ? openSync(io.stdin, 'r') : 'ignore',
      io.stdout ? openSync(io.stdout, 'w') : 'ignore',
      'pipe',
    ],
    encoding: 'utf8',
  });
  const line = result.stderr.split('\n').find((l) => l.startsWith('TIME ')) ?? '';
  const [, seconds = 'NaN', kb = 'NaN'] = line.split(' ');
  const last = result.stderr
    .split('\n')
    .filter((l) => l.startsWith('engram') && !l.startsWith('TIME'))
    .slice(-2)
    .join(' | ');
  const s = Number(seconds);
  // The CLI's own time (after the process has started and loaded its modules).
  const work = Number(/ in ([\d.]+)s/.exec(last)?.[1] ?? Number.NaN);
  console.log(
    `${label}: exit ${result.status}, ${s.toFixed(1)} s wall (${Math.round(size / s)} messages/s), ${work.toFixed(1)} s in the command (${Math.round(size / work)} messages/s), peak RSS ${(Number(kb) / 1024).toFixed(0)} MB; ${last}`,
  );
  if (result.status !== 0) console.log(result.stderr.slice(-2000));
}

const imported = await pgDescriptor.service?.provision(`copy_import_${process.pid}`);
const copied = await pgDescriptor.service?.provision(`copy_copy_${process.pid}`);
if (!imported || !copied) throw new Error('ENGRAM_PG_URL is not set');
try {
  const started = performance.now();
  await seed();
  console.log(
    `seeded ${size} messages (${size / PER_THREAD} threads, ${Math.ceil(size / PER_THREAD / THREADS)} resources) in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  run('export libSQL → file', ['export', '--store', file], { stdout: dump });
  console.log(`dump: ${(statSync(dump).size / 1024 / 1024).toFixed(0)} MB`);
  const importSchema = String(imported.options.schemaName);
  run('import file → pg', ['import', '--store', imported.url, '--pg-schema', importSchema], { stdin: dump });
  const copySchema = String(copied.options.schemaName);
  const copy = ['copy', '--from', file, '--to', copied.url, '--to-pg-schema', copySchema];
  run('copy libSQL → pg', copy);
  run('copy again (everything skipped)', copy);
} finally {
  await imported.drop();
  await copied.drop();
  rmSync(dir, { recursive: true, force: true });
}
