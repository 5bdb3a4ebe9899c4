import { sha256 } from './hash.ts';
import type { ResolvedMemoryOptions } from './memory-options.ts';
import type { RecallFusion, RecallMode, ResolvedSemanticRecall } from './recall/engine.ts';
import type { MemoryStorage } from './storage/contract.ts';
import type { JsonObject, WorkingMemoryScope } from './storage/records.ts';
import { ENGRAM_VERSION } from './version.ts';
import type { ResolvedSchema } from './working-memory/schema.ts';
import { defaultWorkingMemoryTemplate } from './working-memory/template.ts';

/** The settings key `Memory` records its configuration under. */
export const MEMORY_CONFIG_KEY = 'memory-config';

/**
 * The configuration a `Memory` records in the store (`settings` under `memory-config`): what
 * decides the prompt the agent gets, so a tool that opens the store from a URL renders the same.
 */
export interface MemoryConfigRecord {
  /** The record's format version. */
  v: 1;
  /** The `@engram/core` version that wrote it. */
  engram: string;
  /** When it was written (ISO 8601). */
  recordedAt: string;
  workingMemory: {
    enabled: boolean;
    mode: 'markdown' | 'schema';
    scope: WorkingMemoryScope;
    version: 'stable' | 'vnext';
    useStateSignals: boolean;
    /** Markdown mode: the template text (core's default when none was given). */
    template?: string;
    /** Schema mode: the document's JSON Schema. */
    schema?: JsonObject;
    /** sha256 (hex) of the template text, or of the JSON Schema as JSON. */
    sha256: string;
  };
  lastMessages: number | false;
  semanticRecall:
    | false
    | {
        mode: RecallMode;
        topK: number;
        messageRange: { before: number; after: number };
        scope: WorkingMemoryScope;
        /** Hybrid mode only: how the two lists were fused. */
        fusion?: { rankConstant: number; weights: { vector: number; keyword: number } };
      };
  observationalMemory:
    | false
    | {
        scope: WorkingMemoryScope;
        messageTokens: number;
        observationTokens: number;
        bufferTokens: number | false;
        bufferActivation: number;
        blockAfter: number;
      };
}

function recallRecord(
  recall: ResolvedSemanticRecall,
  { mode, fusion }: { mode: RecallMode; fusion: RecallFusion },
): MemoryConfigRecord['semanticRecall'] {
  const { rankConstant, weights } = fusion;
  return {
    mode,
    topK: recall.topK,
    messageRange: { before: recall.before, after: recall.after },
    scope: recall.scope,
    ...(mode === 'hybrid' ? { fusion: { rankConstant, weights: { ...weights } } } : {}),
  };
}

/** The record of a resolved configuration; `engine`: the mode and fusion the recall engine chose. */
export async function configRecord(
  options: ResolvedMemoryOptions,
  schema: ResolvedSchema | null,
  engine: { mode: RecallMode; fusion: RecallFusion } | undefined,
): Promise<MemoryConfigRecord> {
  const wm = options.workingMemory;
  // Through JSON: a converter may leave `undefined` members, which a setting cannot hold.
  const jsonSchema = schema && (JSON.parse(JSON.stringify(schema.jsonSchema)) as JsonObject);
  const template = wm.template ?? defaultWorkingMemoryTemplate;
  const recall = options.semanticRecall;
  const om = options.observationalMemory;
  return {
    v: 1,
    engram: ENGRAM_VERSION,
    recordedAt: new Date().toISOString(),
    workingMemory: {
      enabled: wm.enabled,
      mode: jsonSchema ? 'schema' : 'markdown',
      scope: wm.scope,
      version: wm.version,
      useStateSignals: wm.useStateSignals,
      ...(jsonSchema ? { schema: jsonSchema } : { template }),
      sha256: sha256(jsonSchema ? JSON.stringify(jsonSchema) : template),
    },
    lastMessages: options.lastMessages,
    semanticRecall: recall && engine ? recallRecord(recall, engine) : false,
    observationalMemory: om
      ? {
          scope: om.scope,
          messageTokens: om.messageTokens,
          observationTokens: om.observationTokens,
          bufferTokens: om.bufferTokens,
          bufferActivation: om.bufferActivation,
          blockAfter: om.blockAfter,
        }
      : false,
  };
}

/**
 * Writes a configuration record to the store once per `Memory`, after its first successful
 * write, and only when it differs from the stored one (`recordedAt` aside). A store without the
 * `settings` domain records nothing. A failure goes to `onError`, never to the caller's write.
 */
export class ConfigRecorder {
  private done: Promise<void> | undefined;

  constructor(
    private readonly storage: MemoryStorage,
    private readonly record: () => Promise<MemoryConfigRecord>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Records the configuration the first time it is called; later calls wait for that one. */
  afterWrite(): Promise<void> {
    this.done ??= this.write().catch((error: unknown) => {
      try {
        this.onError(error);
      } catch {
        // A throwing callback must not fail the caller's write either.
      }
    });
    return this.done;
  }

  private async write(): Promise<void> {
    const settings = this.storage.settings;
    if (!settings) return;
    const next = await this.record();
    const stored = await settings.get(MEMORY_CONFIG_KEY);
    const { recordedAt: _a, ...a } = next;
    if (stored) {
      const { recordedAt: _b, ...b } = stored;
      if (sameJson(a, b)) return;
    }
    await settings.put(MEMORY_CONFIG_KEY, next as unknown as JsonObject);
  }
}

/** Deep equality of JSON values, ignoring the order of object keys (jsonb reorders them). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && sameJson(ra[k], rb[k]));
}
