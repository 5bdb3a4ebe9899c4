import { isPlainObject } from '../storage/validate.ts';
import { toProviderSafeSchema } from './json-schema-rules.ts';
import { emptyShape } from './template.ts';
import type { WorkingMemoryTemplate } from './types.ts';

/** The tool's name: `updateWorkingMemory`, or `setWorkingMemory` when state signals are used. */
export type WorkingMemoryToolName = 'updateWorkingMemory' | 'setWorkingMemory';

export interface InstructionOptions {
  template: WorkingMemoryTemplate;
  /** The stored working memory; `null` or `''` when nothing is stored. */
  data: string | null;
  /** Only the data and a note that it cannot be changed. */
  readOnly?: boolean;
  /** Instructions for the vnext tool (`newMemory`, `searchString`, `updateReason`). */
  useVNext?: boolean;
  toolName?: WorkingMemoryToolName;
  /** The data is delivered as a state signal; the message only holds guidance and template. */
  dataInStateSignal?: boolean;
}

const EMPTY_MARKDOWN = '(empty: nothing has been stored yet)';

/**
 * The `<` of anything in the data that reads as one of engram's own tags, opening or closing
 * (`working_memory_data`, `working_memory_template`, `working_memory_shape`, `state`,
 * `recalled_messages`), in any case and with whitespace inside the tag (`< / Working_Memory_Data >`).
 */
const TAG_START =
  /<(?=\s*(?:\/\s*)?(?:working[\s_-]*memory|state|recalled[\s_-]*messages|observations|current[\s_-]*task|suggested[\s_-]*response)(?![a-z0-9]))/gi;

/**
 * Neutralises tag look-alikes in stored data, so the data can neither close its block early
 * nor open a block of its own: in Markdown (and invalid JSON) their `<` becomes `&lt;`; in JSON
 * it becomes the escape `\u003c`, which is the same JSON value.
 */
export function escapeData(text: string, json = false): string {
  return text.replace(TAG_START, json ? '\\u003c' : '&lt;');
}

/**
 * The stored data as the model should see it; never the text `null`. Tag look-alikes in the
 * data are escaped (see `escapeData`).
 */
export function renderData(format: WorkingMemoryTemplate['format'], data: string | null): string {
  if (format === 'json') {
    if (data === null || data.trim() === '') return '{}';
    try {
      const parsed: unknown = JSON.parse(data);
      return isPlainObject(parsed) ? escapeData(JSON.stringify(parsed, null, 2), true) : '{}';
    } catch {
      return escapeData(data);
    }
  }
  return data === null || data.trim() === '' ? EMPTY_MARKDOWN : escapeData(data);
}

/** A JSON Schema with its `$ref`s inlined; a field map (or anything unusable) as it is. */
function inlineRefs(schema: unknown): unknown {
  if (!isPlainObject(schema) || !('type' in schema || 'properties' in schema || '$ref' in schema))
    return schema;
  try {
    return toProviderSafeSchema(schema);
  } catch {
    return schema;
  }
}

/** The template as the model should see it: Markdown as is, JSON as an empty object of its shape. */
export function renderTemplate(template: WorkingMemoryTemplate): string {
  if (template.format === 'markdown') return template.content;
  let parsed: unknown;
  try {
    parsed = JSON.parse(template.content);
  } catch {
    return template.content;
  }
  return JSON.stringify(emptyShape(inlineRefs(parsed)), null, 2);
}

function readOnlyText(template: WorkingMemoryTemplate, data: string | null): string {
  return [
    'WORKING MEMORY (read-only)',
    'What is known about the user and the task, kept across conversations. Use it to personalise your answers.',
    'It is read-only here: it cannot be changed in this conversation, and there is no tool to update it.',
    '',
    `<working_memory_data format="${template.format}">`,
    renderData(template.format, data),
    '</working_memory_data>',
  ].join('\n');
}

function markdownRules(toolName: string): string[] {
  return [
    `- When the user shares something worth keeping (name, preferences, goals, facts, decisions), call \`${toolName}\` right away, in the same turn.`,
    `- \`${toolName}\` replaces the whole document: always send the complete Markdown, with everything already known plus the new facts.`,
    '- Keep the structure of the template. Fill in fields as you learn them; leave unknown fields empty.',
  ];
}

function vnextRules(toolName: string): string[] {
  return [
    `- When the user shares something worth keeping, call \`${toolName}\` with only the new text in \`newMemory\`, never the whole document.`,
    '- `updateReason: "append-new-memory"` adds the text at the end. A line that is already stored as it is (ignoring case, spacing and list markers) is skipped, so do not resend it.',
    '- `updateReason: "clarify-existing-memory"` or `"replace-irrelevant-memory"` replaces the exact text given in `searchString` with `newMemory`; copy `searchString` verbatim from the current memory.',
    '- Never send the template itself as new memory.',
  ];
}

function jsonRules(toolName: string): string[] {
  return [
    `- When the user shares something worth keeping, call \`${toolName}\` with \`memory\` holding only the fields that change.`,
    '- Fields are merged into what is stored: objects merge field by field, arrays replace the stored array whole (send the full list), and `null` deletes a field.',
    '- Keep to the fields of the shape below.',
  ];
}

/**
 * The text of the working-memory system message: guidance, the template (Markdown) or an empty
 * object shaped like the schema (JSON), and the current data. In read-only mode, only the data
 * and a note that it cannot be changed.
 */
export function workingMemoryInstructions(options: InstructionOptions): string {
  const { template, data } = options;
  if (options.readOnly) return readOnlyText(template, data);
  const toolName = options.toolName ?? 'updateWorkingMemory';
  const rules =
    template.format === 'json'
      ? jsonRules(toolName)
      : options.useVNext
        ? vnextRules(toolName)
        : markdownRules(toolName);
  const lines = [
    'WORKING MEMORY',
    'You keep a working memory: what you know about the user and the task, kept across conversations and shown to you on every turn.',
    'Guidelines:',
    ...rules,
    '- Do not store secrets such as passwords or keys. Do not tell the user about this memory unless they ask.',
    '',
    template.format === 'json'
      ? '<working_memory_shape format="json">'
      : '<working_memory_template format="markdown">',
    renderTemplate(template),
    template.format === 'json' ? '</working_memory_shape>' : '</working_memory_template>',
    '',
  ];
  if (options.dataInStateSignal) {
    lines.push(
      'The current working memory is delivered separately as a state signal with stateId "working-memory"; the latest one is current.',
    );
  } else {
    lines.push(
      `<working_memory_data format="${template.format}">`,
      renderData(template.format, data),
      '</working_memory_data>',
    );
  }
  return lines.join('\n');
}
