import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { isMemoryError, type Message, type SemanticRecallOptions } from '@engram/core';
import { type DocumentView, Inspector } from './inspector.ts';
import type { ObservationsScope, ObservationsView } from './observations.ts';
import { type OpenedStore, openStore, StoreError, type StoreSettings } from './open.ts';
import { startServer } from './server.ts';
import { formatTurns, TURN_PAGE_LIMIT } from './turns.ts';

const USAGE = `usage:
  engram-inspect <store> [--port <n>] [--allow-edits] [--last <n>] [store options]
  engram-inspect thread <threadId> [--store <store>] [--last <n>] [--json]
  engram-inspect wm <resourceId> [--thread <threadId>] [--store <store>] [--json]
  engram-inspect prompt <threadId> [--store <store>] [--json]
  engram-inspect observations <threadId> [--store <store>] [--last <n>] [--json]
  engram-inspect turn <threadId> [--store <store>] [--last <n>] [--json]

Shows what an engram memory holds. The first form serves a page on 127.0.0.1 (a random port
unless --port is given) at a URL holding a per-run token; it is read-only unless started with
--allow-edits. The other forms print one thread, one working memory, one composed system
prompt (with the observation block, the raw tail when the thread has an observation log, and
the memory tools offered beside it), or
a thread's observation log: its generations, the cursor and the tokens on each side, or the
record of the thread's newest turns (--last of them, default 1; kept by an agent whose memory
has options.turnRecords): the history window's message ids, the recall hits with their scores,
the working memory's hash, the observation generation and token counts (JSON with --json).

<store> (or --store, or ENGRAM_INSPECT_STORE) is a URL or a module:
  file:./memory.db                 libSQL (@engram/libsql)
  postgres://user@host/db          PostgreSQL (@engram/pg)
  mongodb://host/db                MongoDB (@engram/mongodb); the path is the database
  https://…upstash.io              Upstash (@engram/upstash); token in ENGRAM_UPSTASH_TOKEN
                                   or UPSTASH_REDIS_REST_TOKEN
  ./memory.ts                      a module exporting a configured Memory (\`memory\` or
                                   default), or create() returning a Memory or a storage

store options (URLs only; a module configures its own Memory):
  --scope resource|thread          working-memory scope the agent uses (default: the recorded
                                   one, else resource)
  --schema <file.json>             JSON Schema of the working memory (JSON mode)
  --template <file.md>             Markdown template of the working memory
                                   (with neither: the configuration the agent's Memory recorded
                                   in the store, named on stderr; without a record, Markdown mode
                                   and core's default template are assumed: prompt warns on
                                   stderr, and refuses when the stored working memory is a JSON
                                   object)
  --prefix <p>                     key (Upstash), table (pg) or collection (MongoDB) prefix
  --pg-schema <name>               PostgreSQL schema (default public)
  --db <name>                      MongoDB database (default: the URL's path, else engram)
  --observations-scope thread|resource
                                   the observation log to read (default: the thread's, else its
                                   resource's; a module's observationalMemory.scope)
  --lexical-embedder <dimensions>  semantic recall with core's lexical embedder, for a store
                                   whose vectors that embedder made (another space is refused)
  --top-k <n>, --message-range <n>, --recall-scope resource|thread
                                   with --lexical-embedder: the agent's semanticRecall settings`;

interface Parsed {
  command: 'serve' | 'thread' | 'wm' | 'prompt' | 'observations' | 'turn';
  target?: string;
  store?: string;
  port?: number;
  allowEdits: boolean;
  json: boolean;
  last?: number;
  thread?: string;
  observationsScope?: ObservationsScope;
  settings: StoreSettings;
}

class UsageError extends Error {}

const OPTIONS = {
  store: { type: 'string' },
  port: { type: 'string' },
  'allow-edits': { type: 'boolean' },
  json: { type: 'boolean' },
  last: { type: 'string' },
  thread: { type: 'string' },
  scope: { type: 'string' },
  schema: { type: 'string' },
  template: { type: 'string' },
  prefix: { type: 'string' },
  'pg-schema': { type: 'string' },
  db: { type: 'string' },
  'lexical-embedder': { type: 'string' },
  'top-k': { type: 'string' },
  'message-range': { type: 'string' },
  'recall-scope': { type: 'string' },
  'observations-scope': { type: 'string' },
} as const;

function parse(argv: readonly string[]): Parsed {
  let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];
  let positional: string[];
  try {
    ({ values, positionals: positional } = parseArgs({
      args: [...argv],
      options: OPTIONS,
      allowPositionals: true,
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const integer = (flag: keyof typeof OPTIONS, min: number): number | undefined => {
    const text = values[flag];
    if (typeof text !== 'string') return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < min)
      throw new UsageError(`--${flag} needs an integer of at least ${min}`);
    return n;
  };
  const scopeOf = (
    flag: 'scope' | 'recall-scope' | 'observations-scope',
  ): 'resource' | 'thread' | undefined => {
    const scope = values[flag];
    if (scope !== undefined && scope !== 'resource' && scope !== 'thread') {
      throw new UsageError(`--${flag} is resource or thread`);
    }
    return scope;
  };
  const defined = <T extends object>(object: T): T =>
    Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as T;
  const out: Parsed = defined({
    command: 'serve' as const,
    allowEdits: values['allow-edits'] === true,
    json: values.json === true,
    store: values.store,
    port: integer('port', 0),
    last: integer('last', 1),
    thread: values.thread,
    observationsScope: scopeOf('observations-scope'),
    settings: defined({
      scope: scopeOf('scope'),
      schemaFile: values.schema,
      templateFile: values.template,
      prefix: values.prefix,
      pgSchema: values['pg-schema'],
      dbName: values.db,
      lexicalEmbedder: integer('lexical-embedder', 2),
    }),
  });
  const recall: SemanticRecallOptions = defined({
    topK: integer('top-k', 1),
    messageRange: integer('message-range', 0),
    scope: scopeOf('recall-scope'),
  });
  if (Object.keys(recall).length > 0) {
    if (out.settings.lexicalEmbedder === undefined) {
      throw new UsageError('--top-k, --message-range and --recall-scope need --lexical-embedder');
    }
    out.settings.recall = recall;
  }
  const [first, second, third] = positional;
  if (
    first === 'thread' ||
    first === 'wm' ||
    first === 'prompt' ||
    first === 'observations' ||
    first === 'turn'
  ) {
    out.command = first;
    if (second === undefined) throw new UsageError(`${first} needs an id`);
    out.target = second;
    if (third !== undefined) out.store ??= third;
    if (positional.length > 3) throw new UsageError(`unexpected argument ${positional[3]}`);
  } else {
    if (first === 'serve') positional.shift();
    const [store, extra] = positional;
    if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`);
    if (store !== undefined) out.store = store;
  }
  return out;
}

/** Runs the CLI; resolves to the exit code (0 ok, 1 failure, 2 bad usage). */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    if (error instanceof UsageError) return usage(error.message);
    throw error;
  }
  const spec = parsed.store ?? env.ENGRAM_INSPECT_STORE;
  if (!spec) return usage('no store: pass a URL or module (or set ENGRAM_INSPECT_STORE)');
  let opened: OpenedStore;
  try {
    opened = await openStore(spec, { ...parsed.settings, env });
  } catch (error) {
    console.error(`engram-inspect: ${describe(error)}`);
    return 1;
  }
  if (opened.note) console.error(`engram-inspect: ${visibleControls(opened.note)}`);
  const inspector = new Inspector({
    memory: opened.memory,
    label: opened.label,
    allowEdits: parsed.allowEdits,
    lastMessages: parsed.last,
    assumed: opened.assumed,
    configuration: opened.configuration,
    observationsScope: parsed.observationsScope,
  });
  if (parsed.command === 'serve') return serve(inspector, opened, parsed.port);
  try {
    const out = await printCommand(inspector, parsed);
    // Stored text may hold terminal control sequences (JSON.stringify leaves C1 controls raw).
    const safe = visibleControls(out);
    process.stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`);
    return 0;
  } catch (error) {
    console.error(`engram-inspect: ${describe(error)}`);
    return 1;
  } finally {
    await opened.close().catch(() => undefined);
  }
}

async function serve(inspector: Inspector, opened: OpenedStore, port: number | undefined): Promise<number> {
  const server = await startServer(inspector, { port });
  const mode = inspector.allowEdits ? 'edits ALLOWED' : 'read-only';
  console.log(`engram-inspect: ${opened.label}, ${mode}`);
  if (opened.assumed) {
    console.error(
      `engram-inspect: WARNING: the working-memory mode and template are assumed (default Markdown template): ${opened.assumed}`,
    );
  }
  console.log(`engram-inspect: open ${server.url}`);
  console.log('engram-inspect: the URL holds this run’s token; press Ctrl+C to stop');
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
  await server.close();
  await opened.close().catch(() => undefined);
  return 0;
}

/** The text (or JSON) one of the terminal commands prints. */
async function printCommand(inspector: Inspector, parsed: Parsed): Promise<string> {
  const id = parsed.target!;
  if (parsed.command === 'thread') {
    const view = await inspector.thread(id);
    if (parsed.json) {
      const { version: _version, ...rest } = view;
      return JSON.stringify(rest, null, 2);
    }
    const lines = [
      `thread ${view.thread.id}  ${view.thread.title === '' ? '(untitled)' : JSON.stringify(view.thread.title)}`,
      `resource ${view.thread.resourceId}  updated ${view.thread.updatedAt.toISOString()}`,
      `messages: newest ${view.messages.length} of ${view.totalMessages}`,
      '',
    ];
    for (const m of view.messages) {
      const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
      lines.push(`[${m.createdAt.toISOString()}] ${m.role} (${m.id})`, indent(content), '');
    }
    if (view.workingMemory) {
      lines.push(formatDocument(view.workingMemory.resource), formatDocument(view.workingMemory.thread));
    }
    const r = view.recall.settings;
    lines.push(
      r
        ? `semantic recall: topK ${r.topK}, ${r.before} before / ${r.after} after, scope ${r.scope}`
        : `semantic recall: ${view.recall.reason}`,
    );
    return lines.join('\n');
  }
  if (parsed.command === 'prompt') {
    const thread = await inspector.memory.getThreadById({ threadId: id });
    if (!thread) throw new StoreError(`thread ${JSON.stringify(id)} does not exist`);
    const prompt = await inspector.prompt(thread);
    if ('refused' in prompt) throw new StoreError(prompt.unavailable);
    if ('text' in prompt && prompt.warning) {
      console.error(`engram-inspect: WARNING: ${visibleControls(prompt.warning)}`);
    }
    const recalled = await inspector.turnRecall(thread);
    const { view: observed, tail } = await inspector.readObservations(id, 1);
    if (parsed.json) {
      const recall = recalled ? { recall: recalled } : {};
      const observations =
        observed.status === 'log'
          ? {
              status: observed.status,
              scope: observed.scope,
              key: observed.key,
              generation: observed.generation,
              block: observed.block,
              logTokens: observed.logTokens,
              tailTokens: observed.tailTokens,
              tail,
            }
          : { status: observed.status, message: observed.message };
      return JSON.stringify(
        { threadId: id, resourceId: thread.resourceId, ...prompt, ...recall, observations },
        null,
        2,
      );
    }
    const parts = ['text' in prompt ? prompt.text : prompt.unavailable];
    if (observed.status === 'log' && observed.block !== null) parts.push(observed.block);
    if (recalled) {
      if ('error' in recalled) parts.push(`(semantic recall failed: ${recalled.error})`);
      else parts.push(recalled.text === '' ? `(semantic recall: ${recalled.note})` : recalled.text);
    }
    if (observed.status === 'log' && tail) {
      // Under observational memory the agent gets the raw tail instead of the newest N messages.
      const lines = [
        `history: the raw tail, ${plural(observed.tailMessages, 'message')} (${observed.tailTokens} tokens); ${plural(observed.observedMessages, 'earlier message')} replaced by the observations`,
      ];
      for (const m of tail)
        lines.push(`[${m.createdAt.toISOString()}] ${m.role} (${m.id})`, indent(textOf(m)));
      parts.push(lines.join('\n'));
    }
    if ('tools' in prompt && prompt.tools.length > 0) {
      const lines = ['tools offered beside the prompt:'];
      for (const tool of prompt.tools) {
        lines.push(`${tool.name}: ${tool.description}`, indent(`input: ${JSON.stringify(tool.inputSchema)}`));
      }
      parts.push(lines.join('\n'));
    }
    return parts.join('\n\n');
  }
  if (parsed.command === 'turn') {
    const view = await inspector.turns(id, Math.min(parsed.last ?? 1, TURN_PAGE_LIMIT));
    if (parsed.json) return JSON.stringify({ threadId: id, ...view }, null, 2);
    return formatTurns(view, id);
  }
  if (parsed.command === 'observations') {
    const { view, messages } = await inspector.readObservations(id);
    if (parsed.json) return JSON.stringify({ threadId: id, ...view }, null, 2);
    return formatObservations(view, messages);
  }
  const resource = await inspector.resource(id);
  let threadDoc: DocumentView | null = null;
  if (parsed.thread !== undefined) {
    const view = await inspector.thread(parsed.thread);
    if (view.thread.resourceId !== id) {
      throw new StoreError(
        `thread ${JSON.stringify(parsed.thread)} does not belong to resource ${JSON.stringify(id)}`,
      );
    }
    threadDoc = view.workingMemory?.thread ?? null;
  }
  if (parsed.json) {
    return JSON.stringify(
      { resourceId: id, resource: resource.workingMemory, ...(threadDoc ? { thread: threadDoc } : {}) },
      null,
      2,
    );
  }
  if (!resource.workingMemory) return 'working memory is disabled for this memory';
  return [formatDocument(resource.workingMemory), threadDoc ? formatDocument(threadDoc) : '']
    .filter(Boolean)
    .join('\n');
}

/** The `observations` command's text: the log's generations, the cursor and the marked messages. */
function formatObservations(view: ObservationsView, messages: readonly Message[]): string {
  if (view.status !== 'log') return view.message;
  const lines = [
    `observation log ${view.key} (${view.scope} scope): generation ${view.generation}, version ${view.version}, updated ${view.updatedAt}`,
    `tokens: observations ${view.logTokens} · raw tail ${view.tailTokens} in ${plural(view.tailMessages, 'message')} · ${plural(view.observedMessages, 'message')} observed`,
    `cursor: ${view.cursor ? `${view.cursor.at} (${view.cursor.id})` : 'none (nothing activated for this thread)'} · late: ${view.late.length === 0 ? 'none' : view.late.join(', ')}`,
  ];
  for (const g of view.generations) {
    lines.push(
      '',
      `generation ${g.generation} · version ${g.version} · updated ${g.updatedAt} · ${plural(g.entries.length, 'entry', 'entries')} (${g.logTokens} tokens) · ${plural(g.chunks.length, 'buffered chunk')}`,
    );
    if (g.currentTask) lines.push(`  current task: ${g.currentTask}`);
    if (g.suggestedResponse) lines.push(`  suggested response: ${g.suggestedResponse}`);
    g.entries.forEach((e, i) => {
      const from = e.threadId === '' ? 'several threads' : `thread ${e.threadId}`;
      lines.push(`  entry ${i + 1}: ${from} · ${e.tokens} tokens · ${plural(e.messages, 'message')}`);
      lines.push(indent(indent(e.text)));
    });
    for (const c of g.chunks) {
      lines.push(
        `  buffered: thread ${c.threadId} · ${c.tokens} tokens · ${plural(c.messageIds.length, 'message')} (${c.messageTokens} tokens), not activated`,
      );
      lines.push(indent(indent(c.text)));
    }
  }
  const marks = new Map(view.marks.map((m) => [m.id, m]));
  lines.push('', `messages (newest ${messages.length}):`);
  let before: string | undefined;
  for (const m of messages) {
    const mark = marks.get(m.id);
    const label = mark?.mark === 'observed' ? 'observed' : `raw tail${mark?.buffered ? ' (buffered)' : ''}`;
    if (before === 'observed' && mark?.mark !== 'observed') lines.push('  ── cursor ──');
    lines.push(
      `  [${m.createdAt.toISOString()}] ${m.role} (${m.id}) · ${mark?.tokens ?? 0} tokens · ${label}`,
    );
    before = mark?.mark;
  }
  return lines.join('\n');
}

function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

function textOf(m: Message): string {
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
}

function formatDocument(doc: DocumentView): string {
  const head = `working memory, ${doc.scope} scope${doc.active ? ' (used by the agent)' : ''}:`;
  if (doc.value === null) return `${head} (empty)\n`;
  let body = doc.value;
  if (doc.json && 'parsed' in doc.json) body = JSON.stringify(doc.json.parsed, null, 2);
  const lines = [head, indent(body)];
  if (doc.json && 'error' in doc.json) lines.push(`  ! not valid JSON: ${doc.json.error}`);
  for (const issue of doc.issues ?? []) lines.push(`  ! ${issue}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Shows control characters (other than newline and tab) as `\u001b`-style escapes, so stored
 * text cannot move the cursor, recolour or retitle the terminal it is printed to.
 */
export function visibleControls(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    const control = (code < 0x20 && ch !== '\n' && ch !== '\t') || (code >= 0x7f && code <= 0x9f);
    out += control ? `\\u${code.toString(16).padStart(4, '0')}` : ch;
  }
  return out;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

function describe(error: unknown): string {
  if (isMemoryError(error)) return visibleControls(`${error.code}: ${error.message}`);
  return visibleControls(error instanceof Error ? error.message : String(error));
}

function usage(problem: string): number {
  console.error(`engram-inspect: ${problem}\n\n${USAGE}`);
  return 2;
}

const invokedAs = process.argv[1] ? pathToFileURL(resolve(process.argv[1])).href : '';
if (invokedAs === import.meta.url) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`engram-inspect: ${describe(error)}`);
      process.exit(1);
    },
  );
}
