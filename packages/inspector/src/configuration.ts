import {
  MEMORY_CONFIG_KEY,
  type MemoryConfigRecord,
  type MemoryOptions,
  type MemoryStorage,
  type SemanticRecallOptions,
} from '@engram/core';

/**
 * Where the inspected memory's working-memory mode, template and recall settings came from:
 * `'recorded'` — the `memory-config` record the agent's `Memory` wrote into the store;
 * `'flags'` — `--schema` or `--template`; `'module'` — a module exporting the configured
 * `Memory`; `'assumed'` — none of these (core's defaults, with a warning).
 */
export type ConfigurationSource = 'recorded' | 'flags' | 'module' | 'assumed';

/** What `/api/info` says about the configuration (field `configuration`). */
export interface ConfigurationInfo {
  source: ConfigurationSource;
  /** The record found in the store, used or not (`null`: none, or the store has no settings). */
  recorded: MemoryConfigRecord | null;
}

/**
 * The `memory-config` record of the store, `null` when there is none (or the store has no
 * `settings` domain), or why it cannot be used (a record this version does not read).
 */
export async function readRecord(storage: MemoryStorage): Promise<MemoryConfigRecord | null | string> {
  const value = await storage.settings?.get(MEMORY_CONFIG_KEY);
  if (!value) return null;
  const record = value as unknown as MemoryConfigRecord;
  const wm = record.workingMemory as Partial<MemoryConfigRecord['workingMemory']> | undefined;
  if (record.v !== 1)
    return `its format version is ${JSON.stringify(record.v)}, not 1 (upgrade @engram/inspector)`;
  if (wm?.mode === 'schema' ? typeof wm.schema !== 'object' : typeof wm?.template !== 'string') {
    return 'its working-memory mode has no schema or template';
  }
  return record;
}

/**
 * `Memory` options that render what the recording `Memory` rendered: its working-memory mode,
 * template or schema, scope and tool version, its history window and, when recall can run here
 * (keyword mode, or vectors with `lexicalEmbedder`), its recall settings. `scope` and `recall`
 * given on the command line override the recorded ones.
 */
export function recordedOptions(
  record: MemoryConfigRecord,
  given: { scope?: 'resource' | 'thread'; recall?: SemanticRecallOptions; lexicalEmbedder?: number },
): { options: MemoryOptions; recall: SemanticRecallOptions | undefined } {
  const wm = record.workingMemory;
  const options: MemoryOptions = {
    lastMessages: record.lastMessages,
    workingMemory: {
      enabled: wm.enabled,
      scope: given.scope ?? wm.scope,
      version: wm.version,
      useStateSignals: wm.useStateSignals,
      ...(wm.mode === 'schema' ? { schema: wm.schema } : { template: wm.template }),
    },
  };
  const r = record.semanticRecall;
  const recorded: SemanticRecallOptions | undefined = r
    ? { mode: r.mode, topK: r.topK, messageRange: r.messageRange, scope: r.scope }
    : undefined;
  const recall = recorded || given.recall ? { ...recorded, ...given.recall } : undefined;
  if (recall && given.lexicalEmbedder === undefined && recall.mode === 'keyword') {
    options.semanticRecall = recall;
  }
  return { options, recall };
}

/**
 * One line naming the record used, for stderr; says when its vector or hybrid recall cannot run
 * here (no `--lexical-embedder`: the inspector has no embedder of its own).
 */
export function describeRecord(record: MemoryConfigRecord, embedder: boolean): string {
  const wm = record.workingMemory;
  const mode = record.semanticRecall ? record.semanticRecall.mode : 'keyword';
  const unrun =
    mode !== 'keyword' && !embedder
      ? `; its ${mode} recall is not run here without an embedder (--lexical-embedder, when the agent embeds with core's lexical embedder)`
      : '';
  const recall = record.semanticRecall
    ? `, ${record.semanticRecall.mode} recall top ${record.semanticRecall.topK}`
    : '';
  return `using the memory configuration recorded in the store (${MEMORY_CONFIG_KEY}: ${wm.mode} mode, ${wm.scope} scope, sha256 ${wm.sha256.slice(0, 12)}…, last ${record.lastMessages === false ? 'all' : record.lastMessages} messages${recall}; written by @engram/core ${record.engram} at ${record.recordedAt})${unrun}`;
}
