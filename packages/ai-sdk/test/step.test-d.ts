import { InMemoryStore, Memory } from '@engram/core';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import type { MockLanguageModelV3 } from 'ai/test';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { memoryStep } from '../src/index.ts';

// Your own tool beside the memory tool, the documented pattern, with state signals on (so
// `prepareStep` is set): it type-checks on ai 6 (tsconfig.json) and ai 7 (tsconfig.ai7.json), and
// the tool's input and output types reach the results.
const getWeather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, forecast: 'sun' as const }),
});
const memory = new Memory({
  storage: new InMemoryStore(),
  options: { workingMemory: { enabled: true, useStateSignals: true, template: '# User\n' } },
});
declare const model: MockLanguageModelV3;

describe('memoryStep with your own tools', () => {
  it('generateText: spread step.call, then tools: { ...step.call.tools, getWeather }', async () => {
    const step = await memoryStep({ memory, threadId: 't', resourceId: 'r', input: 'Weather?' });
    const result = await generateText({
      model,
      ...step.call,
      tools: { ...step.call.tools, getWeather },
      toolChoice: { type: 'tool', toolName: 'getWeather' },
      stopWhen: stepCountIs(3),
    });
    const call = result.steps[0]?.toolCalls.find((c) => c.toolName === 'getWeather');
    if (call && !call.dynamic && call.toolName === 'getWeather') {
      expectTypeOf(call.input).toEqualTypeOf<{ city: string }>();
    }
    const output = result.steps[0]?.toolResults.find((r) => r.toolName === 'getWeather');
    if (output && !output.dynamic && output.toolName === 'getWeather') {
      expectTypeOf(output.output).toEqualTypeOf<{ city: string; forecast: 'sun' }>();
    }
  });

  it('streamText: the same pattern', async () => {
    const step = await memoryStep({ memory, threadId: 't', resourceId: 'r', input: 'Weather?' });
    const result = streamText({ model, ...step.call, tools: { ...step.call.tools, getWeather } });
    await step.save(result);
  });

  it('memoryStep({ tools }) adds them to step.call.tools with their types', async () => {
    const step = await memoryStep({
      memory,
      threadId: 't',
      resourceId: 'r',
      input: 'Weather?',
      tools: { getWeather },
    });
    expectTypeOf(step.call.tools.getWeather).toEqualTypeOf<typeof getWeather>();
    const result = await generateText({
      model,
      ...step.call,
      toolChoice: { type: 'tool', toolName: 'getWeather' },
    });
    const call = result.toolCalls[0];
    if (call && !call.dynamic && call.toolName === 'getWeather') {
      expectTypeOf(call.input).toEqualTypeOf<{ city: string }>();
    }
  });
});
