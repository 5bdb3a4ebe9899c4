import {
  getWorkingMemoryTools,
  type Memory,
  type WorkingMemoryTool,
  type WorkingMemoryToolOptions,
} from '@engram/core';
import type { JSONSchema7 } from 'ai';
import { jsonSchema, type Tool, tool } from 'ai';

/**
 * Wraps engram's framework-neutral working-memory tool as an AI SDK `tool()`: same description,
 * its provider-safe JSON Schema as `inputSchema`, and `execute` writing through `Memory`.
 * Errors (bad input, schema violations) surface to the model as tool errors.
 */
export function toAISDKTool(workingMemoryTool: WorkingMemoryTool): Tool<unknown, unknown> {
  return tool({
    description: workingMemoryTool.description,
    inputSchema: jsonSchema<unknown>(workingMemoryTool.inputSchema as JSONSchema7),
    execute: (input: unknown): Promise<unknown> => workingMemoryTool.execute(input),
  });
}

/**
 * The AI SDK tools for a memory and one thread/resource: `{ updateWorkingMemory }` (or
 * `{ setWorkingMemory }` under state signals), or `{}` when working memory is disabled or
 * read-only. Spread into `tools` of `generateText` / `streamText`.
 */
export async function workingMemoryTools(
  memory: Memory,
  options: WorkingMemoryToolOptions,
): Promise<Record<string, Tool<unknown, unknown>>> {
  const tools = await getWorkingMemoryTools(memory, options);
  return Object.fromEntries(Object.entries(tools).map(([name, t]) => [name, toAISDKTool(t)]));
}
