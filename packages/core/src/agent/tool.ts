import { MemoryError } from '../errors.ts';
import { ownedThread } from '../storage/ownership.ts';
import type { JsonObject } from '../storage/records.ts';
import { assertOptionalId, isPlainObject } from '../storage/validate.ts';
import { readMemoryIds } from './context.ts';
import type { WorkingMemoryToolName } from './instructions.ts';
import {
  assertObjectSchema,
  type JsonSchemaObject,
  toMergePatchSchema,
  toProviderSafeSchema,
} from './json-schema-rules.ts';
import type { MemoryIds, RequestContextLike, WorkingMemoryHost } from './types.ts';
import { applyVNextEdit, parseVNextInput, VNEXT_UPDATE_REASONS, type VNextOutcome } from './vnext.ts';

/** How the tool writes: replace the document, merge a JSON patch, or vnext edits. */
export type WorkingMemoryToolMode = 'template' | 'schema' | 'vnext';

export interface WorkingMemoryToolOptions extends MemoryIds {
  /** No tool is offered when true (also when the memory's own `readOnly` is set). */
  readOnly?: boolean;
}

/** Per-call ids, for frameworks that pass them when the tool runs. Ids bound at creation win. */
export interface WorkingMemoryToolCallContext extends MemoryIds {
  requestContext?: RequestContextLike;
}

/** What the tool reports back to the model. */
export interface WorkingMemoryToolResult {
  success: true;
  outcome: 'replaced' | 'merged' | VNextOutcome;
  message: string;
}

/**
 * The working-memory tool, framework-neutral: hand `name`, `description` and `inputSchema` (a
 * provider-safe JSON Schema) to the model and call `execute` with its arguments.
 */
export interface WorkingMemoryTool {
  name: WorkingMemoryToolName;
  description: string;
  inputSchema: JsonSchemaObject;
  mode: WorkingMemoryToolMode;
  execute(input: unknown, context?: WorkingMemoryToolCallContext): Promise<WorkingMemoryToolResult>;
}

const DESCRIPTIONS: Record<WorkingMemoryToolMode, string> = {
  template:
    'Update the working memory: what you know about the user and the task, kept across conversations. Send the complete Markdown document; it replaces the stored one.',
  schema:
    'Update the working memory: what you know about the user and the task, kept across conversations. Send only the fields that change; objects merge field by field, arrays replace the stored array, null deletes a field.',
  vnext:
    'Add to or correct the working memory: what you know about the user and the task, kept across conversations. Send only the new text; lines already stored as they are are skipped.',
};

function inputSchemaFor(mode: WorkingMemoryToolMode, jsonSchema: unknown): JsonSchemaObject {
  if (mode === 'vnext') {
    return {
      type: 'object',
      properties: {
        newMemory: {
          type: 'string',
          description: 'The new text to add, or the replacement for searchString. Never the whole document.',
        },
        searchString: {
          type: 'string',
          description:
            'For clarify-existing-memory and replace-irrelevant-memory: the exact text of the current memory to replace.',
        },
        updateReason: {
          type: 'string',
          enum: [...VNEXT_UPDATE_REASONS],
          description: 'append-new-memory adds text; the other two replace searchString with newMemory.',
        },
      },
      required: ['newMemory', 'updateReason'],
      additionalProperties: false,
    };
  }
  if (mode === 'schema') {
    const safe = toProviderSafeSchema(jsonSchema);
    assertObjectSchema(safe);
    const patch = toMergePatchSchema({ ...safe, type: 'object', properties: safe.properties ?? {} });
    return {
      type: 'object',
      properties: {
        memory: {
          ...patch,
          description: 'Only the fields to change. Objects merge, arrays replace, null deletes a field.',
        },
      },
      required: ['memory'],
      additionalProperties: false,
    };
  }
  return {
    type: 'object',
    properties: {
      memory: {
        type: 'string',
        description: 'The complete working memory as Markdown, following the template.',
      },
    },
    required: ['memory'],
    additionalProperties: false,
  };
}

/** The mode the memory's configuration selects. Throws `INVALID_ARGUMENT` for invalid combinations. */
export function workingMemoryToolMode(memory: WorkingMemoryHost): WorkingMemoryToolMode {
  const config = memory.options.workingMemory ?? {};
  const schema = memory.getWorkingMemorySchema();
  const vnext = config.version === 'vnext';
  if (vnext && config.useStateSignals) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      "workingMemory.useStateSignals cannot be combined with version 'vnext'",
    );
  }
  if (schema) {
    if (vnext)
      throw new MemoryError('INVALID_ARGUMENT', "workingMemory version 'vnext' works with templates only");
    return 'schema';
  }
  return vnext ? 'vnext' : 'template';
}

function pick(...candidates: (string | undefined)[]): string | undefined {
  return candidates.find((c) => c !== undefined);
}

/**
 * Creates the working-memory tool for a memory, or `null` when none should be offered: working
 * memory disabled, or read-only (per call or in the memory's options). `threadId` and
 * `resourceId` given here are bound and win over the ids passed at call time.
 */
export async function createWorkingMemoryTool(
  memory: WorkingMemoryHost,
  options: WorkingMemoryToolOptions = {},
): Promise<WorkingMemoryTool | null> {
  assertOptionalId(options.threadId, 'threadId');
  assertOptionalId(options.resourceId, 'resourceId');
  const config = memory.options.workingMemory;
  if (!config?.enabled || options.readOnly || memory.options.readOnly) return null;
  const mode = workingMemoryToolMode(memory);
  const name: WorkingMemoryToolName = config.useStateSignals ? 'setWorkingMemory' : 'updateWorkingMemory';
  const template = mode === 'vnext' ? (await memory.getWorkingMemoryTemplate()).content : '';
  const inputSchema = inputSchemaFor(mode, memory.getWorkingMemorySchema()?.jsonSchema);

  const resolveIds = async (context: WorkingMemoryToolCallContext = {}): Promise<MemoryIds> => {
    assertOptionalId(context.threadId, 'threadId');
    assertOptionalId(context.resourceId, 'resourceId');
    const fromRequest = readMemoryIds(context.requestContext);
    const ids = {
      threadId: pick(options.threadId, context.threadId, fromRequest.threadId),
      resourceId: pick(options.resourceId, context.resourceId, fromRequest.resourceId),
    };
    if (ids.threadId && ids.resourceId) await ownedThread(memory, name, ids.threadId, ids.resourceId);
    return ids;
  };

  const execute = async (
    input: unknown,
    context?: WorkingMemoryToolCallContext,
  ): Promise<WorkingMemoryToolResult> => {
    const ids = await resolveIds(context);
    if (mode === 'vnext') {
      const edit = parseVNextInput(input);
      let outcome = 'appended' as VNextOutcome;
      await memory.editWorkingMemory({
        ...ids,
        edit: (current) => {
          const result = applyVNextEdit(current, edit, template);
          outcome = result.outcome;
          return result.next;
        },
      });
      return { success: true, outcome, message: VNEXT_MESSAGES[outcome] };
    }
    if (!isPlainObject(input) || !('memory' in input)) {
      throw new MemoryError('INVALID_ARGUMENT', 'the input must be an object with a "memory" field');
    }
    if (mode === 'schema') {
      const patch = input.memory;
      if (!isPlainObject(patch) && typeof patch !== 'string') {
        throw new MemoryError(
          'INVALID_ARGUMENT',
          'memory must be a JSON object holding the fields to change',
        );
      }
      try {
        await memory.applyWorkingMemoryPatch({ ...ids, patch: patch as JsonObject | string });
      } catch (error) {
        throw toolError(error);
      }
      return { success: true, outcome: 'merged', message: 'Working memory updated (merged).' };
    }
    if (typeof input.memory !== 'string') {
      throw new MemoryError('INVALID_ARGUMENT', 'memory must be the complete Markdown document as a string');
    }
    await memory.updateWorkingMemory({ ...ids, workingMemory: input.memory });
    return { success: true, outcome: 'replaced', message: 'Working memory updated.' };
  };

  return { name, description: DESCRIPTIONS[mode], inputSchema, mode, execute };
}

/**
 * The error the model sees: when the stored document is what fails the schema, says so briefly
 * (the patch is not the cause, and the model cannot repair it); any other error as it is.
 */
function toolError(error: unknown): unknown {
  const details = error instanceof MemoryError ? error.details : undefined;
  if (!isPlainObject(details) || details.invalidStored !== true) return error;
  const issues = Array.isArray(details.storedIssues) ? details.storedIssues.join('; ') : '';
  return new MemoryError(
    'VALIDATION',
    `The stored working memory does not match the schema (${issues}), so no update can be merged into it; the fields you sent are not the cause. Nothing was written. The application must repair the stored memory (options.workingMemory.onInvalidStored, updateWorkingMemory, or the inspector with --allow-edits).`,
    { cause: error, details },
  );
}

const VNEXT_MESSAGES: Record<VNextOutcome, string> = {
  appended: 'Added to working memory.',
  replaced: 'Working memory updated: the search string was replaced.',
  'appended-search-not-found': 'The search string was not found, so the new memory was added at the end.',
  duplicate: 'Already in working memory; nothing changed.',
  template: 'That is the template itself; nothing changed.',
  empty: 'newMemory was empty; nothing changed.',
};

/**
 * The tools to offer, keyed by name: `{ updateWorkingMemory }` (or `{ setWorkingMemory }` under
 * state signals), or `{}` when working memory is disabled or read-only.
 */
export async function getWorkingMemoryTools(
  memory: WorkingMemoryHost,
  options: WorkingMemoryToolOptions = {},
): Promise<Record<string, WorkingMemoryTool>> {
  const tool = await createWorkingMemoryTool(memory, options);
  return tool ? { [tool.name]: tool } : {};
}
