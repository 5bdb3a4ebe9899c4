/**
 * Your own tool beside the memory tool: a zod `getWeather` tool added to `step.call.tools`, with
 * state signals on (so the memory call brings its own `prepareStep`). It type-checks under
 * `strict` with the tool's input and output types intact, on `ai` 6 and `ai` 7.
 *
 *   node --conditions=source --import tsx src/own-tool.ts     # the AI SDK's mock model
 */
import { memoryStep } from '@engram/ai-sdk';
import { InMemoryStore, Memory } from '@engram/core';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { answer, type GenerateResult, mockModel, type Prompt } from './mock-model.ts';

const getWeather = tool({
  description: 'The weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, forecast: 'sunny' as const, celsius: 24 }),
});

/** Calls `getWeather` for Lisbon, then answers with what the tool returned. */
function weatherReply(prompt: Prompt): GenerateResult {
  const last = prompt.at(-1);
  if (last?.role === 'tool') {
    const part = last.content.find((p) => p.type === 'tool-result');
    const output = part?.type === 'tool-result' && part.output.type === 'json' ? part.output.value : null;
    return answer(`The tool said: ${JSON.stringify(output)}`);
  }
  return {
    content: [
      { type: 'tool-call', toolCallId: 'call-w', toolName: 'getWeather', input: '{"city":"Lisbon"}' },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: answer('').usage,
    warnings: [],
  };
}

const memory = new Memory({
  storage: new InMemoryStore(),
  options: { workingMemory: { enabled: true, useStateSignals: true, template: '# User\n- City:\n' } },
});
const step = await memoryStep({ memory, threadId: 'weather', resourceId: 'user-sam', input: 'Weather?' });
const result = await generateText({
  model: mockModel(weatherReply),
  ...step.call,
  tools: { ...step.call.tools, getWeather },
  stopWhen: stepCountIs(3),
});
await step.save(result);

for (const toolResult of result.steps.flatMap((s) => s.toolResults)) {
  // Typed from the zod schema and `execute`: `output.celsius` is a number, `input.city` a string.
  if (!toolResult.dynamic && toolResult.toolName === 'getWeather') {
    const { input, output } = toolResult;
    console.log(`getWeather(${input.city}): ${output.forecast}, ${output.celsius.toFixed(0)} °C`);
  }
}
console.log(`assistant: ${result.text}`);
const saved = await memory.recall({ threadId: 'weather' });
console.log(`saved: ${saved.map((m) => m.role).join(', ')}`);
