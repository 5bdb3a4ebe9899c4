import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  createLexicalEmbedder,
  getWorkingMemoryTools,
  Memory,
  SemanticRecall,
  WorkingMemory,
} from '@engram/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdapter, type OpenedStore, openStore, redactUrl, StoreError, urlPath } from '../src/open.ts';
import { PLAIN } from './fixtures/no-observations.ts';
import { type ObservedSeed, seedObservedMemory } from './fixtures/observed-memory.ts';
import {
  ADAPTERS,
  recordTurns,
  type Seeded,
  seed,
  type TestStore,
  tempDir,
  toolsSection,
  XSS_SCRIPT,
} from './support.ts';

const BIN = fileURLToPath(new URL('../bin/engram-inspect.mjs', import.meta.url));
const MODULE = fileURLToPath(new URL('./fixtures/store-module.ts', import.meta.url));
const RECALL_MODULE = fileURLToPath(new URL('./fixtures/recall-module.ts', import.meta.url));
const OBSERVED_MODULE = fileURLToPath(new URL('./fixtures/observed-memory.ts', import.meta.url));
const NO_OBSERVATIONS_MODULE = fileURLToPath(new URL('./fixtures/no-observations.ts', import.meta.url));
const NO_DOMAIN =
  'the memory store has no observations domain: observational memory cannot run on it, so there is no observation log to show';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as users do (the bin script) and collects its output. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ENGRAM_INSPECT_STORE: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += String(c);
  });
  child.stderr.on('data', (c) => {
    stderr += String(c);
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

describe('engram-inspect CLI', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let store: TestStore;
  let opened: OpenedStore;
  let seeded: Seeded;
  let storeArgs: string[];

  beforeAll(async () => {
    tmp = await tempDir();
    store = await ADAPTERS.find((a) => a.name === 'libsql')!.create('', tmp.dir);
    opened = await openStore(store.spec, store.settings);
    seeded = await seed(opened.memory);
    storeArgs = ['--store', store.spec, '--schema', store.settings.schemaFile!];
  });

  afterAll(async () => {
    await opened?.close();
    await tmp?.remove();
  });

  it('thread <id> --json: the newest messages, both working-memory scopes and the recall state', async () => {
    const run = await cli(['thread', seeded.trip, ...storeArgs, '--json', '--last', '2']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.thread.id).toBe(seeded.trip);
    expect(out.messages.map((m: { id: string }) => m.id)).toEqual(seeded.messageIds.slice(1));
    expect(out.totalMessages).toBe(3);
    expect(out.workingMemory.resource.json.parsed.tasks).toEqual(['book flights']);
    expect(out.workingMemory.thread.issues.length).toBeGreaterThan(0);
    expect(out.recall).toEqual({
      configured: false,
      reason:
        'semantic recall is not configured for this memory (it needs an embedder and options.semanticRecall)',
    });
    expect(out.turnRecall).toBeNull();
  });

  it('thread <id> as text, wm <resourceId>, and the store from ENGRAM_INSPECT_STORE', async () => {
    const [text, wm] = await Promise.all([
      cli(['thread', seeded.trip, ...storeArgs]),
      cli(['wm', seeded.resourceId, '--schema', store.settings.schemaFile!, '--json'], {
        ENGRAM_INSPECT_STORE: store.spec,
      }),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('messages: newest 3 of 3');
    expect(text.stdout).toContain(`I live in Berlin. ${XSS_SCRIPT}`);
    expect(text.stdout).toContain('! name:');
    expect(wm.code).toBe(0);
    const doc = JSON.parse(wm.stdout);
    expect(doc.resourceId).toBe(seeded.resourceId);
    expect(doc.resource.value).toBe(await opened.memory.getWorkingMemory({ resourceId: seeded.resourceId }));
    expect(doc.resource.issues).toEqual([]);
  });

  it('prompt <threadId>: exactly the system message of the WorkingMemory processor', async () => {
    const expected = await WorkingMemory.fromMemory(opened.memory).buildMessage({
      threadId: seeded.trip,
      resourceId: seeded.resourceId,
    });
    const ids = { threadId: seeded.trip, resourceId: seeded.resourceId };
    const [text, json, tools] = await Promise.all([
      cli(['prompt', seeded.trip, ...storeArgs]),
      cli(['prompt', seeded.trip, ...storeArgs, '--json']),
      getWorkingMemoryTools(opened.memory, ids),
    ]);
    expect(text.code).toBe(0);
    // --schema gives the mode: the prompt is exact, so nothing is said on stderr.
    expect(text.stderr).toBe('');
    expect(text.stdout).toBe(`${expected.content}\n\n${await toolsSection(opened.memory, ids)}\n`);
    expect(text.stdout).toContain('updateWorkingMemory: ');
    expect(JSON.parse(json.stdout)).toEqual({
      threadId: seeded.trip,
      resourceId: seeded.resourceId,
      text: expected.content,
      tools: Object.values(tools).map(({ name, description, inputSchema }) => ({
        name,
        description,
        inputSchema,
      })),
      // libSQL has the observations domain; this thread has no log.
      observations: {
        status: 'none',
        message: `no observation log (looked at thread:${seeded.trip} and resource:${seeded.resourceId}): every message is in the raw tail`,
      },
    });
  });

  it('prompt without --schema or --template: refused when the stored working memory is a JSON object', async () => {
    // The seeded store is in schema mode: the resource's working memory is a JSON object.
    const run = await cli(['prompt', seeded.trip, '--store', store.spec]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      "engram-inspect: the resource's stored working memory is a JSON object, but the prompt would be composed in Markdown mode, which was assumed",
    );
    for (const way of [
      '--schema <file.json>',
      '--template <file.md>',
      'a module exporting the configured Memory',
    ]) {
      expect(run.stderr).toContain(way);
    }
  });

  it('prompt without --schema or --template over Markdown data: printed, with a warning on stderr', async () => {
    const dbUrl = `file:${tmp.dir}/markdown.db`;
    const markdown = await openStore(dbUrl);
    const thread = await markdown.memory.createThread({ resourceId: 'r-md' });
    await markdown.memory.updateWorkingMemory({ resourceId: 'r-md', workingMemory: '# User\n- Name: Ada\n' });
    const expected = await WorkingMemory.fromMemory(markdown.memory).buildMessage({
      threadId: thread.id,
      resourceId: 'r-md',
    });
    const tools = await toolsSection(markdown.memory, { threadId: thread.id, resourceId: 'r-md' });
    const templateFile = `${tmp.dir}/template.md`;
    await writeFile(templateFile, '# User\n- Name:\n');
    await markdown.close();
    const [guessed, json, given] = await Promise.all([
      cli(['prompt', thread.id, '--store', dbUrl]),
      cli(['prompt', thread.id, '--store', dbUrl, '--json']),
      cli(['prompt', thread.id, '--store', dbUrl, '--template', templateFile]),
    ]);
    const warning =
      "engram-inspect: WARNING: the working-memory mode and template were assumed (Markdown mode with core's default template), so the agent's prompt may differ: pass --schema <file.json> (JSON mode) or --template <file.md>, or open a module exporting the configured Memory\n";
    expect(guessed.code).toBe(0);
    expect(guessed.stdout).toBe(`${expected.content}\n\n${tools}\n`);
    expect(guessed.stdout).toContain('Name: Ada');
    expect(guessed.stderr).toBe(warning);
    expect(json.stderr).toBe(warning);
    expect(JSON.parse(json.stdout).warning).toBe(warning.slice('engram-inspect: WARNING: '.length, -1));
    expect(given.code).toBe(0);
    expect(given.stderr).toBe('');
    expect(given.stdout).toContain('Name: Ada');
  });

  it('turn <threadId>: the newest turn record as text; --last n and --json for more', async () => {
    const agent = new Memory({ storage: opened.memory.storage, options: { turnRecords: true } });
    const recorded = await recordTurns(agent, 'turn-user');
    const [newest, oldest] = recorded.turns;
    const [text, json] = await Promise.all([
      cli(['turn', recorded.threadId, ...storeArgs]),
      cli(['turn', recorded.threadId, ...storeArgs, '--last', '5', '--json']),
    ]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(
      [
        `turn ${newest!.id} · ${newest!.createdAt.toISOString()} · thread ${recorded.threadId} · resource turn-user`,
        `  saved: ${newest!.messageIds.join(', ')}`,
        `  history window (2): ${oldest!.messageIds.join(', ')}`,
        '  recall (keyword, 1 hit):',
        `    1.250 ${recorded.recalled.id} (thread ${recorded.recalled.threadId}) · keyword 1.250 · window ${recorded.recalled.id}`,
        '  working memory: off',
        '  observations: off',
        `  tokens: system ${newest!.tokens.system} · history ${newest!.tokens.history} · input ${newest!.tokens.input}`,
        '',
      ].join('\n'),
    );
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout);
    expect(out.turns.map((t: { id: string }) => t.id)).toEqual([newest!.id, oldest!.id]);
    expect(out.more).toBe(false);
    const none = await cli(['turn', seeded.trip, ...storeArgs]);
    expect(none.stdout).toBe(
      `thread ${seeded.trip} has no turn records (they are kept for turns saved with options.turnRecords: true)\n`,
    );
  });

  it('prompt from a bare URL of a store a schema-mode Memory wrote: its recorded configuration, JSON Schema instructions', async () => {
    const dbUrl = `file:${tmp.dir}/recorded-schema.db`;
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, pets: { type: 'array', items: { type: 'string' } } },
    };
    const storage = (await openStore(dbUrl)).memory.storage;
    const agent = new Memory({
      storage,
      options: { lastMessages: 5, workingMemory: { schema, scope: 'thread' } },
    });
    const thread = await agent.createThread({ resourceId: 'r-json' });
    await agent.applyWorkingMemoryPatch({
      resourceId: 'r-json',
      threadId: thread.id,
      patch: { city: 'Lisbon', pets: ['Biscuit'] },
    });
    const ids = { threadId: thread.id, resourceId: 'r-json' };
    const expected = await WorkingMemory.fromMemory(agent).buildMessage(ids);
    const tools = await toolsSection(agent, ids);
    const templateFile = `${tmp.dir}/override.md`;
    await writeFile(templateFile, '# Notes\n- City:\n');
    await storage.close();
    expect(expected.content).toContain('<working_memory_data format="json">');

    const [bare, json, overridden] = await Promise.all([
      cli(['prompt', thread.id, '--store', dbUrl]),
      cli(['prompt', thread.id, '--store', dbUrl, '--json']),
      cli(['prompt', thread.id, '--store', dbUrl, '--template', templateFile, '--scope', 'thread']),
    ]);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toBe(`${expected.content}\n\n${tools}\n`);
    expect(bare.stdout).toContain('<working_memory_shape format="json">');
    expect(bare.stdout).toContain('Lisbon');
    expect(bare.stdout).not.toContain('format="markdown"');
    expect(bare.stderr).toMatch(
      /^engram-inspect: using the memory configuration recorded in the store \(memory-config: schema mode, thread scope, sha256 [0-9a-f]{12}…, last 5 messages; written by @engram\/core [0-9.]+ at [^)]+\)\n$/,
    );
    expect(bare.stderr).not.toContain('WARNING');
    expect(JSON.parse(json.stdout).warning).toBeUndefined();
    // An explicit flag still wins over the record: the prompt is then in Markdown mode, no record named.
    expect(overridden.code, overridden.stderr).toBe(0);
    expect(overridden.stderr).toBe('');
    expect(overridden.stdout).toContain('<working_memory_template format="markdown">\n# Notes\n- City:');
  });

  it('takes a module exporting a configured Memory (its scope and template are used)', async () => {
    const dbUrl = `file:${tmp.dir}/module.db`;
    const storage = (await openStore(dbUrl)).memory.storage;
    const memory = new Memory({
      storage,
      options: { workingMemory: { enabled: true, scope: 'thread', template: '# Notes\n- Mood:\n' } },
    });
    const thread = await memory.createThread({
      resourceId: 'r1',
      metadata: { workingMemory: '# Notes\n- Mood: sunny\n' },
    });
    const expected = await WorkingMemory.fromMemory(memory).buildMessage({
      threadId: thread.id,
      resourceId: 'r1',
    });
    const tools = await toolsSection(memory, { threadId: thread.id, resourceId: 'r1' });
    await storage.close();
    const run = await cli(['prompt', thread.id, '--store', MODULE], { INSPECT_TEST_DB: dbUrl });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(`${expected.content}\n\n${tools}\n`);
    expect(run.stdout).toContain('Mood: sunny');
  });

  it('recall: a module with semantic recall, --lexical-embedder for a URL, and a space mismatch shown', async () => {
    const dbUrl = `file:${tmp.dir}/recall.db`;
    const storage = (await openStore(dbUrl)).memory.storage;
    const memory = new Memory({
      storage,
      embedder: createLexicalEmbedder(),
      options: { lastMessages: 2, semanticRecall: { topK: 2, messageRange: 1 } },
    });
    const a = await memory.createThread({ resourceId: 'r1', title: 'A' });
    const b = await memory.createThread({ resourceId: 'r1', title: 'B' });
    await memory.saveMessages({
      messages: [
        { threadId: b.id, resourceId: 'r1', role: 'user', content: 'my dog Biscuit likes the beach' },
      ],
    });
    await memory.saveMessages({
      messages: [
        { threadId: a.id, resourceId: 'r1', role: 'user', content: 'where can Biscuit go to the beach?' },
      ],
    });
    const composed = await new SemanticRecall(memory).processInput({
      messages: [{ role: 'user', content: 'where can Biscuit go to the beach?' }],
      requestContext: { threadId: a.id, resourceId: 'r1' },
    });
    const recallText = composed.find((m) => m.source === 'memory-recall')?.content as string;
    expect(recallText).toContain('my dog Biscuit likes the beach');
    await storage.close();

    const [module, flag, mismatch, orphan, unembedded] = await Promise.all([
      cli(['thread', a.id, '--store', RECALL_MODULE, '--json'], { INSPECT_TEST_DB: dbUrl }),
      cli([
        'prompt',
        a.id,
        '--store',
        dbUrl,
        '--lexical-embedder',
        '256',
        '--top-k',
        '2',
        '--message-range',
        '1',
      ]),
      cli(['prompt', a.id, '--store', dbUrl, '--lexical-embedder', '64']),
      cli(['prompt', a.id, '--store', dbUrl, '--top-k', '2']),
      cli(['prompt', a.id, '--store', dbUrl]),
    ]);
    expect(module.stderr).toBe('');
    const view = JSON.parse(module.stdout);
    expect(view.recall.settings).toEqual({ topK: 2, before: 1, after: 1, scope: 'resource' });
    expect(view.turnRecall.text).toBe(recallText);
    // A bare URL: the agent's Memory recorded its configuration when it first wrote; it is used and named.
    expect(flag.stderr).toMatch(
      /^engram-inspect: using the memory configuration recorded in the store \(memory-config: markdown mode, resource scope, sha256 [0-9a-f]{12}…, last 2 messages, hybrid recall top 2; written by @engram\/core [0-9.]+ at [0-9T:.Z-]+\)\n$/,
    );
    expect(flag.stdout).toContain(`\n\n${recallText}`);
    expect(unembedded.code).toBe(0);
    expect(unembedded.stderr).toContain(
      '; its hybrid recall is not run here without an embedder (--lexical-embedder, when the agent embeds with core',
    );
    expect(unembedded.stdout).not.toContain(recallText);
    expect(mismatch.code).toBe(0);
    expect(mismatch.stdout).toContain('(semantic recall failed: ');
    expect(mismatch.stdout).toContain('engram:lexical-256 (256 dimensions)');
    expect(mismatch.stdout).toContain('engram:lexical-64 (64 dimensions)');
    expect(mismatch.stdout).not.toContain('Biscuit likes the beach');
    expect(orphan.code).toBe(2);
    expect(orphan.stderr).toContain('--top-k, --message-range and --recall-scope need --lexical-embedder');
  });

  it('serves the page at a printed URL with a token, until stopped', async () => {
    const child = spawn(process.execPath, [BIN, ...storeArgs, '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c) => {
          out += String(c);
          const found = /http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{32}/.exec(out);
          if (found) resolve(found[0]);
        });
        child.on('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      const token = new URL(url).searchParams.get('token')!;
      const info = await fetch(new URL('/api/info', url), { headers: { 'x-engram-token': token } });
      expect(info.status).toBe(200);
      expect((await info.json()).allowEdits).toBe(false);
      expect((await fetch(new URL('/api/info', url))).status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
  });

  it('refuses bad usage with exit code 2, naming the option', async () => {
    const [unknown, integer, scope, missing] = await Promise.all([
      cli(['thread', 'x', '--bogus']),
      cli(['thread', 'x', ...storeArgs, '--last', '0']),
      cli(['wm', 'r', ...storeArgs, '--scope', 'global']),
      cli(['thread', 'x', '--store']),
    ]);
    expect([unknown.code, integer.code, scope.code, missing.code]).toStrictEqual([2, 2, 2, 2]);
    expect(unknown.stderr).toContain("Unknown option '--bogus'");
    expect(integer.stderr).toContain('--last needs an integer of at least 1');
    expect(scope.stderr).toContain('--scope is resource or thread');
    expect(missing.stderr).toContain("Option '--store <value>' argument missing");
  });

  describe('observational memory (a module seeding an in-memory store through core)', () => {
    const env = { INSPECT_TEST_RESOURCE: 'ada', INSPECT_TEST_THREAD: 'lisbon' };
    let local: ObservedSeed;

    beforeAll(async () => {
      // The same seed in this process: ids differ, but the block and token counts do not.
      local = await seedObservedMemory(undefined, { resourceId: 'ada', threadId: 'lisbon' });
    });

    it('observations <thread>: the generations, the cursor, the tokens on each side and the marked messages', async () => {
      const [text, json] = await Promise.all([
        cli(['observations', 'lisbon', '--store', OBSERVED_MODULE], env),
        cli(['observations', 'lisbon', '--store', OBSERVED_MODULE, '--json'], env),
      ]);
      expect(text.stderr).toBe('');
      expect(text.code).toBe(0);
      const snapshot = await local.memory.observations!.inspect({ threadId: 'lisbon', resourceId: 'ada' });
      const out = text.stdout;
      expect(out).toContain(
        'observation log thread:lisbon (thread scope): generation 2, version 4, updated ',
      );
      expect(out).toContain(
        `tokens: observations ${snapshot.logTokens} · raw tail ${snapshot.tailTokens} in 2 messages · 4 messages observed`,
      );
      expect(out).toMatch(/cursor: 2026-11-30T09:03:00\.000Z \([0-9a-f-]{36}\) · late: none/);
      expect(out).toContain('generation 1 · version 3 · updated ');
      expect(out).toContain('1 entry (64 tokens) · 0 buffered chunks');
      expect(out).toContain('entry 1: several threads · 26 tokens · 4 messages');
      expect(out).toContain('buffered: thread lisbon · 64 tokens · 1 message (42 tokens), not activated');
      expect(out).toContain('current task: Planning the Lisbon trip');
      const marks = out
        .split('\n')
        .filter((line) => line.startsWith('  [') || line.includes('── cursor ──'))
        .map((line) => line.replace(/^.*· /, '').trim());
      expect(marks).toEqual([
        'observed',
        'observed',
        'observed',
        'observed',
        '── cursor ──',
        'raw tail (buffered)',
        'raw tail',
      ]);
      const view = JSON.parse(json.stdout);
      expect(view).toMatchObject({ threadId: 'lisbon', status: 'log', scope: 'thread', generation: 2 });
      expect(view.block).toBe(snapshot.block);
      expect(view.generations).toHaveLength(2);
    });

    it('prompt <thread>: the observation block as the agent gets it, then the raw tail instead of the newest N', async () => {
      const [text, json] = await Promise.all([
        cli(['prompt', 'lisbon', '--store', OBSERVED_MODULE], env),
        cli(['prompt', 'lisbon', '--store', OBSERVED_MODULE, '--json'], env),
      ]);
      expect(text.stderr).toBe('');
      expect(text.code).toBe(0);
      const target = { threadId: 'lisbon', resourceId: 'ada' };
      const snapshot = await local.memory.observations!.inspect(target);
      const wm = await WorkingMemory.fromMemory(local.memory).buildMessage(target);
      const history = [
        `history: the raw tail, 2 messages (${snapshot.tailTokens} tokens); 4 earlier messages replaced by the observations`,
        ...snapshot.tail.flatMap((m) => [
          `[${m.createdAt.toISOString()}] ${m.role} (ID)`,
          `  ${m.content as string}`,
        ]),
      ].join('\n');
      const ids = /\(([0-9a-f-]{36})\)/g;
      const tools = await toolsSection(local.memory, target);
      expect(text.stdout.replace(ids, '(ID)')).toBe(
        `${wm.content}\n\n${snapshot.block}\n\n${history}\n\n${tools}\n`,
      );
      const out = JSON.parse(json.stdout);
      expect(out.observations).toMatchObject({
        status: 'log',
        key: 'thread:lisbon',
        generation: 2,
        block: snapshot.block,
        tailTokens: snapshot.tailTokens,
      });
      expect(out.observations.tail.map((m: { content: string }) => m.content)).toEqual(
        snapshot.tail.map((m) => m.content),
      );
    });

    it('a store without the observations domain, and a bad --observations-scope', async () => {
      const [plain, bad] = await Promise.all([
        cli(['observations', PLAIN.threadId, '--store', NO_OBSERVATIONS_MODULE]),
        cli(['observations', 'lisbon', '--store', OBSERVED_MODULE, '--observations-scope', 'tenant']),
      ]);
      expect(plain.code).toBe(0);
      expect(plain.stdout).toBe(`${NO_DOMAIN}\n`);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--observations-scope is resource or thread');
    });
  });

  it('fails clearly when the store cannot be reached, without printing the password', async () => {
    const [run, noToken, usage] = await Promise.all([
      cli(['thread', 'x', '--store', 'postgres://inspector:s3cret@127.0.0.1:9/nowhere']),
      cli(['thread', 'x', '--store', 'https://example.upstash.io'], {
        ENGRAM_UPSTASH_TOKEN: '',
        UPSTASH_REDIS_REST_TOKEN: '',
      }),
      cli(['thread']),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot reach the store postgres://inspector:***@127.0.0.1:9/nowhere');
    expect(run.stderr).not.toContain('s3cret');
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('ENGRAM_UPSTASH_TOKEN or UPSTASH_REDIS_REST_TOKEN');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('thread needs an id');
  });

  it('takes multi-host MongoDB URLs and never prints the password of an Upstash or MongoDB URL', async () => {
    const [upstash, mongo] = await Promise.all([
      cli(['thread', 'x', '--store', 'https://user:UpstashPw9@127.0.0.1:1'], {
        ENGRAM_UPSTASH_TOKEN: 'token',
      }),
      cli([
        'thread',
        'x',
        '--store',
        'mongodb://app:MongoPw9@127.0.0.1:9,127.0.0.1:10/inspectdb?replicaSet=rs0&serverSelectionTimeoutMS=300',
      ]),
    ]);
    expect(upstash.code).toBe(1);
    expect(upstash.stderr).toContain('INVALID_ARGUMENT: upstash: url must not hold a user name or password');
    expect(upstash.stdout + upstash.stderr).not.toContain('UpstashPw9');
    expect(mongo.code).toBe(1);
    // The driver was given the URL and tried the hosts: the failure is reaching them, not parsing.
    expect(mongo.stderr).toContain(
      'cannot reach the store mongodb://app:***@127.0.0.1:9,127.0.0.1:10/inspectdb (mongodb): mongodb: init failed',
    );
    expect(mongo.stdout + mongo.stderr).not.toContain('MongoPw9');
  });

  it('reads the database of multi-host and SRV MongoDB URLs, and prints them without password or query', () => {
    expect(urlPath('mongodb://u:p@h1:27017,h2:27017/app%2Ddb?replicaSet=rs0')).toBe('app%2Ddb');
    expect(urlPath('mongodb+srv://u:p@cluster0.example.net/prod?retryWrites=true')).toBe('prod');
    expect(urlPath('mongodb://h1,h2/?replicaSet=rs0')).toBe('');
    expect(urlPath('mongodb://h1:27017')).toBe('');
    expect(redactUrl('mongodb+srv://u:Pw1@cluster0.example.net/prod?authSource=admin')).toBe(
      'mongodb+srv://u:***@cluster0.example.net/prod',
    );
    expect(redactUrl('libsql://db.example.io?authToken=Tk1')).toBe('libsql://db.example.io');
  });

  it('prints stored terminal control sequences as visible escapes, never raw', async () => {
    const hostile = '\u001b]0;pwned\u0007\u001b[2J\rcleared\u009b31m';
    await opened.memory.saveMessages({
      messages: [
        { threadId: seeded.groceries, resourceId: seeded.resourceId, role: 'user', content: hostile },
      ],
    });
    const [text, json] = await Promise.all([
      cli(['thread', seeded.groceries, ...storeArgs]),
      cli(['thread', seeded.groceries, ...storeArgs, '--json']),
    ]);
    expect(text.code).toBe(0);
    const raw = (out: string) => ['\u001b', '\u0007', '\r', '\u009b'].filter((c) => out.includes(c));
    expect(raw(text.stdout)).toEqual([]);
    expect(text.stdout).toContain('\\u001b]0;pwned\\u0007\\u001b[2J\\u000dcleared\\u009b31m');
    expect(raw(json.stdout)).toEqual([]);
    expect(JSON.parse(json.stdout).messages[0].content).toBe(hostile);
  });

  it('opens an Oracle URL through the Oracle adapter (no server here: it fails to reach it, naming it)', async () => {
    const error = await openStore('oracle://app:OraclePw9@127.0.0.1:1/FREEPDB1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    const { message } = error as Error;
    expect(message).toContain(
      'cannot reach the store oracle://app:***@127.0.0.1:1/FREEPDB1 (oracle): oracle: init failed',
    );
    expect(message).not.toContain('OraclePw9');
  });

  it('refuses a URL no adapter opens, naming the schemes that are known', async () => {
    const error = await openStore('redis://127.0.0.1:6379').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    const { message } = error as Error;
    expect(message).toContain('cannot open redis://127.0.0.1:6379: no installed adapter opens redis: URLs');
    for (const scheme of ['file:', 'postgres:', 'https:', 'mongodb:', 'oracle:'])
      expect(message).toContain(scheme);
  });

  it('names the package to install when an adapter is missing', async () => {
    const error = await loadAdapter('@engram/not-installed', 'x://y').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toContain('needs the package @engram/not-installed');
  });

  it('names the missing driver, not the adapter that imports it, and keeps a relative file: URL', async () => {
    const adapter = new URL('./fixtures/needs-driver.mjs', import.meta.url).href;
    const error = await loadAdapter(adapter, 'file:./x.db').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    const { message } = error as Error;
    expect(message).toContain('needs the package engram-missing-driver-for-tests');
    expect(message).toContain('the store file:./x.db ');
    expect(message).not.toContain('file:///x.db');
  });
});
