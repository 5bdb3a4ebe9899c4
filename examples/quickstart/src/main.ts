/**
 * engram quickstart: a user with two threads and messages, and schema-mode working memory that
 * four OS processes update at the same time, all on one libSQL file. Run it twice: the second
 * run finds what the first one stored.
 */
import { fork } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DB_PATH, openMemory, TOPICS, type Topic, USER_ID, UserMemory } from './setup.ts';

interface Report {
  topic: Topic;
  pid: number;
  landed: number;
  failed: string[];
  ms: number;
}

const started = Date.now();
mkdirSync(dirname(resolve(DB_PATH)), { recursive: true });
const { store, memory } = openMemory();
await store.init();

console.log(`engram quickstart: libSQL database ${resolve(DB_PATH)}\n`);

// 1. What do we already know? (Nothing on the first run.)
const before = await memory.getWorkingMemory({ resourceId: USER_ID });
const previous = before === null ? null : UserMemory.parse(JSON.parse(before));
const now = new Date().toISOString();
if (previous) {
  console.log(`Found ${previous.name}'s working memory from earlier runs:`);
  console.log(
    `  runs so far: ${previous.runs}, first seen ${previous.firstSeen}, last seen ${previous.lastSeen}`,
  );
} else {
  console.log(`No working memory for ${USER_ID} yet: this is the first run.`);
}
const run = (previous?.runs ?? 0) + 1;

// 2. A user (the resource) with two threads (created on the first run), and new messages in each.
const threads = [
  await openThread('ada-trip', 'Planning a trip'),
  await openThread('ada-dinner', 'Dinner ideas'),
];
await memory.saveMessages({
  messages: [
    {
      threadId: 'ada-trip',
      resourceId: USER_ID,
      role: 'user',
      content: `Run ${run}: where should I go in spring?`,
    },
    {
      threadId: 'ada-trip',
      resourceId: USER_ID,
      role: 'assistant',
      content: 'Lisbon or Kyoto, by the sound of it. Renew your passport first: it expires in June.',
    },
    {
      threadId: 'ada-dinner',
      resourceId: USER_ID,
      role: 'user',
      content: `Run ${run}: something quick tonight?`,
    },
    {
      threadId: 'ada-dinner',
      resourceId: USER_ID,
      role: 'assistant',
      content: 'Ramen: you liked it last time.',
    },
  ],
});
console.log(`\n${USER_ID} has ${threads.length} threads:`);
for (const thread of threads) {
  const messages = await memory.recall({ threadId: thread.id, resourceId: USER_ID, last: false });
  console.log(
    `  "${thread.title}" (${thread.id}): ${messages.length} messages, newest: ${JSON.stringify(messages.at(-1)?.content)}`,
  );
}

// 2b. Semantic recall: a question asked in the dinner thread finds the answer in the trip thread.
const question = 'When does my passport expire?';
const recalled = await memory.recall({ threadId: 'ada-dinner', resourceId: USER_ID, query: question });
const hit = recalled.hits[0];
console.log(`\nSemantic recall for "${question}", asked in the dinner thread:`);
if (hit) {
  console.log(`  found in thread ${JSON.stringify(hit.threadId)} (score ${hit.score.toFixed(2)}):`);
  for (const m of hit.window)
    console.log(`    ${m.id === hit.message.id ? '>' : ' '} ${m.role}: ${JSON.stringify(m.content)}`);
} else {
  console.log('  nothing found');
}
console.log(`  (${recalled.usage.tokens} embedding tokens for the query; lexical embedder, offline)`);

// 3. Start this run: bump the run counter and clear last run's facts (`null` deletes a key).
await memory.mergeWorkingMemory({
  resourceId: USER_ID,
  workingMemory: {
    name: 'Ada',
    runs: run,
    firstSeen: previous?.firstSeen ?? now,
    lastSeen: now,
    facts: null,
  },
});

// 4. Several processes merge into the same working memory at once, each its own keys.
const topics = Object.keys(TOPICS) as Topic[];
const expected = topics.reduce((n, topic) => n + TOPICS[topic].length, 0);
console.log(
  `\n${topics.length} worker processes now merge ${expected} facts into that one working memory at the same time…`,
);
const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));
const workers = topics.map((topic) =>
  fork(workerPath, [topic], { env: { ...process.env, ENGRAM_QUICKSTART_DB: DB_PATH } }),
);
const waitFor = <T>(child: (typeof workers)[number], type: string) =>
  new Promise<T>((done, fail) => {
    child.on('message', (message: { type: string; report?: T }) => {
      if (message.type === type) done(message.report as T);
    });
    child.once('exit', (code) => fail(new Error(`a worker exited with code ${code} before "${type}"`)));
  });
await Promise.all(workers.map((child) => waitFor<void>(child, 'ready')));
const reports = await Promise.all(
  workers.map((child) => {
    const report = waitFor<Report>(child, 'done');
    child.send('go');
    return report;
  }),
);
for (const r of reports) {
  console.log(
    `  ${r.topic.padEnd(7)} worker (pid ${r.pid}): ${r.landed} merges in ${r.ms} ms${r.failed.length ? `, FAILED: ${r.failed.join('; ')}` : ''}`,
  );
}

// 5. The result, read back from the database.
const stored = await memory.getWorkingMemory({ resourceId: USER_ID });
const final = UserMemory.parse(JSON.parse(stored ?? '{}'));
console.log('\nFinal working memory:');
console.log(formatMemory(final));
const landed = Object.values(final.facts ?? {}).reduce((n, facts) => n + Object.keys(facts).length, 0);
const reported = reports.reduce((n, r) => n + r.landed, 0);
const allLanded = landed === expected && reported === expected;
console.log(
  `\nUpdates landed: ${landed} of ${expected} merges from ${workers.length} processes ${allLanded ? '(all of them)' : '(SOME WERE LOST)'}.`,
);
await store.close();
console.log(
  `Run ${run} done in ${((Date.now() - started) / 1000).toFixed(1)} s. Run it again: the memory persists (runs: ${run} → ${run + 1}).`,
);
if (!allLanded) process.exitCode = 1;

/** The user's thread with this id: found from an earlier run, or created now. */
async function openThread(threadId: string, title: string) {
  const found = await memory.getThreadById({ threadId, resourceId: USER_ID });
  return found ?? memory.createThread({ resourceId: USER_ID, threadId, title });
}

/** Indented JSON, with each topic's facts on one line. */
function formatMemory(value: UserMemory): string {
  const { facts, ...rest } = value;
  const lines = Object.entries(rest).map(([key, v]) => `    ${JSON.stringify(key)}: ${JSON.stringify(v)}`);
  const factLines = Object.entries(facts ?? {}).map(
    ([topic, items]) => `      ${JSON.stringify(topic)}: ${JSON.stringify(items)}`,
  );
  if (facts) lines.push(`    "facts": {\n${factLines.join(',\n')}\n    }`);
  return `  {\n${lines.join(',\n')}\n  }`;
}
