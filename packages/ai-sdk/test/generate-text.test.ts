import { InMemoryStore, Memory, type MemoryOptions } from '@engram/core';
import { generateText, jsonSchema, type ModelMessage, stepCountIs, streamText, tool } from 'ai';
import * as aiTest from 'ai/test';
import { convertArrayToReadableStream, type MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryStep, workingMemoryTools } from '../src/index.ts';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type CallOptions = MockLanguageModelV3['doGenerateCalls'][number];
type StreamPart =
  Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

// The same tests run against `ai` 6 and `ai` 7 (ENGRAM_AI_MAJOR=7, see vitest.config.ts). ai 7
// adds MockLanguageModelV4, the model spec its providers implement; ai 6 has V3 only. Both take
// the same options and results for what these tests use.
const aiTestExports: Record<string, unknown> = aiTest;
const major = 'MockLanguageModelV4' in aiTestExports ? 7 : 6;
const MockModel = (aiTestExports.MockLanguageModelV4 ??
  aiTest.MockLanguageModelV3) as typeof MockLanguageModelV3;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function toolCall(toolName: string, input: unknown, id = 'call-1'): GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

function text(value: string): GenerateResult {
  return {
    content: [{ type: 'text', text: value }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}

/** A mock model that answers with `script` in order. */
function scripted(...script: GenerateResult[]): MockLanguageModelV3 {
  let i = 0;
  return new MockModel({
    doGenerate: async () => {
      const next = script[i++];
      if (!next) throw new Error('the mock model ran out of answers');
      return next;
    },
  });
}

/** A mock model that streams `script` in order (tool calls and text, one step each). */
function streamed(...script: GenerateResult[]): MockLanguageModelV3 {
  let i = 0;
  return new MockModel({
    doStream: async () => {
      const next = script[i++];
      if (!next) throw new Error('the mock model ran out of answers');
      const chunks: StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      for (const part of next.content) {
        if (part.type === 'text') {
          chunks.push({ type: 'text-start', id: 't' });
          chunks.push({ type: 'text-delta', id: 't', delta: part.text });
          chunks.push({ type: 'text-end', id: 't' });
        } else if (part.type === 'tool-call') {
          chunks.push(part);
        }
      }
      chunks.push({ type: 'finish', finishReason: next.finishReason, usage: next.usage });
      return { stream: convertArrayToReadableStream(chunks) };
    },
  });
}

function setup(
  workingMemory: MemoryOptions['workingMemory'],
  options: Omit<MemoryOptions, 'workingMemory'> = {},
) {
  const memory = new Memory({ storage: new InMemoryStore(), options: { ...options, workingMemory } });
  const n = Math.random().toString(36).slice(2);
  return { memory, threadId: `t-${n}`, resourceId: `r-${n}` };
}

/** The system prompt and the rest of the prompt the model received. */
function promptOf(call: CallOptions): { system: string; rest: CallOptions['prompt'] } {
  const system = call.prompt
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n');
  return { system, rest: call.prompt.filter((m) => m.role !== 'system') };
}

function textOf(message: CallOptions['prompt'][number]): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => ('text' in part ? part.text : '')).join('');
}

const TEMPLATE = '# Profile\n- Name:\n- City:\n';

describe(`generateText with engram memory (ai ${major}, mock model)`, () => {
  it('runs against the ai major this run asked for', () => {
    expect(major).toBe(Number(process.env.ENGRAM_AI_MAJOR ?? 6));
  });

  it('the model calls updateWorkingMemory, the stored memory changes, and the next turn sees it', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    const model = scripted(
      toolCall('updateWorkingMemory', { memory: '# Profile\n- Name: Sam\n- City: Berlin\n' }),
      text('Nice to meet you, Sam.'),
    );
    const step = await memoryStep({
      memory,
      threadId,
      resourceId,
      instructions: 'You are a helpful assistant.',
      input: 'Hi, I am Sam from Berlin.',
    });
    expect(Object.keys(step.call.tools)).toEqual(['updateWorkingMemory']);
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();

    const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(3) });
    expect(result.text).toBe('Nice to meet you, Sam.');
    expect(await memory.getWorkingMemory({ resourceId })).toBe('# Profile\n- Name: Sam\n- City: Berlin\n');

    // The first model call saw instructions, guidance, the template and empty data, and the tool.
    const first = model.doGenerateCalls[0]!;
    const { system } = promptOf(first);
    expect(system).toContain('You are a helpful assistant.');
    expect(system).toContain('<working_memory_template format="markdown">\n# Profile');
    expect(system).toContain('nothing has been stored yet');
    const offered = first.tools?.find((t) => t.name === 'updateWorkingMemory');
    expect(offered).toMatchObject({
      type: 'function',
      inputSchema: { type: 'object', required: ['memory'] },
    });

    // Saving drops the system prompt and the working-memory tool call and result.
    const saved = await step.save(result);
    expect(saved.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Hi, I am Sam from Berlin.'],
      ['assistant', { format: 2, parts: [{ type: 'text', text: 'Nice to meet you, Sam.' }] }],
    ]);

    // Turn two, same thread: the stored memory and the thread's history.
    const model2 = scripted(text('You are Sam.'));
    const step2 = await memoryStep({ memory, threadId, resourceId, input: 'Who am I?' });
    await generateText({ model: model2, ...step2.call });
    const second = promptOf(model2.doGenerateCalls[0]!);
    expect(second.system).toContain('- Name: Sam\n- City: Berlin');
    expect(second.rest.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'Hi, I am Sam from Berlin.'],
      ['assistant', 'Nice to meet you, Sam.'],
      ['user', 'Who am I?'],
    ]);
  });

  it('works with streamText too', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    const model = streamed(toolCall('updateWorkingMemory', { memory: '- Name: Kim' }), text('Hello Kim'));
    const step = await memoryStep({ memory, threadId, resourceId, input: 'I am Kim' });
    const result = streamText({ model, ...step.call, stopWhen: stepCountIs(3) });
    expect(await result.text).toBe('Hello Kim');
    expect(await memory.getWorkingMemory({ resourceId })).toBe('- Name: Kim');
    // The ai 6 idiom, the awaited response, is still accepted.
    const saved = await step.save(await result.response);
    expect(saved.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('streamText under state signals: save(result) keeps every step of the turn', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE, useStateSignals: true });
    await memory.updateWorkingMemory({ resourceId, workingMemory: '- Name: Kim' });
    const model = streamed(
      toolCall('setWorkingMemory', { memory: '- Name: Kim\n- City: Oslo' }),
      text('Oslo, nice.'),
    );
    const step = await memoryStep({ memory, threadId, resourceId, input: 'I live in Oslo.' });
    const result = streamText({ model, ...step.call, stopWhen: stepCountIs(3) });
    // On ai 7 `response` holds the last step only; the result itself gives the whole turn.
    const saved = await step.save(result);
    expect(saved.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant']);
    expect(saved[3]!.content).toMatchObject({ format: 2, parts: [{ type: 'tool-result' }] });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('- Name: Kim\n- City: Oslo');
    expect(textOf(model.doStreamCalls[1]!.prompt.at(-1)!)).toContain('- City: Oslo');
  });

  it('state signals: each step after a write carries one signal, with the latest value', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE, useStateSignals: true });
    await memory.updateWorkingMemory({ resourceId, workingMemory: '- Name: ?' });
    const model = scripted(
      toolCall('setWorkingMemory', { memory: '- Name: Sam' }, 'a'),
      toolCall('setWorkingMemory', { memory: '- Name: Sam\n- City: Oslo' }, 'b'),
      text('Done.'),
    );
    const step = await memoryStep({ memory, threadId, resourceId, input: 'I am Sam from Oslo.' });
    await generateText({ model, ...step.call, stopWhen: stepCountIs(4) });
    const calls = model.doGenerateCalls.map((c) => promptOf(c).rest);
    const signals = calls.map((prompt) => prompt.filter((m) => textOf(m).startsWith('<state ')).map(textOf));
    expect(signals.map((s) => s.length)).toEqual([1, 2, 2]);
    expect(signals[0]![0]).toContain('- Name: ?');
    expect(signals[1]![1]).toContain('- Name: Sam');
    expect(signals[2]![1]).toContain('- City: Oslo');
    // The last step still sees both tool calls and both results, and ends with the signal.
    expect(calls[2]!.map((m) => m.role)).toEqual([
      'user',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'user',
    ]);
  });

  it('schema mode: the tool call merges a JSON patch', async () => {
    const { memory, threadId, resourceId } = setup({
      schema: z.object({
        name: z.string().optional(),
        prefs: z.object({ tone: z.string().optional() }).optional(),
      }),
    });
    await memory.mergeWorkingMemory({ resourceId, workingMemory: { name: 'Sam' } });
    const model = scripted(
      toolCall('updateWorkingMemory', { memory: { prefs: { tone: 'dry' } } }),
      text('Noted.'),
    );
    const step = await memoryStep({ memory, threadId, resourceId, input: 'Keep it dry.' });
    await generateText({ model, ...step.call, stopWhen: stepCountIs(3) });
    expect(JSON.parse((await memory.getWorkingMemory({ resourceId }))!)).toEqual({
      name: 'Sam',
      prefs: { tone: 'dry' },
    });
    expect(promptOf(model.doGenerateCalls[0]!).system).toContain('"name": "Sam"');
  });

  it('vnext: append, then a duplicate the tool skips', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE, version: 'vnext' });
    const model = scripted(
      toolCall('updateWorkingMemory', { newMemory: '- Name: Sam', updateReason: 'append-new-memory' }, 'a'),
      toolCall('updateWorkingMemory', { newMemory: '- Name:  Sam', updateReason: 'append-new-memory' }, 'b'),
      text('Done.'),
    );
    const step = await memoryStep({ memory, threadId, resourceId, input: 'I am Sam.' });
    const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(4) });
    expect(await memory.getWorkingMemory({ resourceId })).toBe('- Name: Sam');
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => r.output));
    expect(outputs).toMatchObject([{ outcome: 'appended' }, { outcome: 'duplicate' }]);
  });

  it('read-only: the memory is shown, no tool is offered', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    await memory.updateWorkingMemory({ resourceId, workingMemory: '- Name: Sam' });
    const step = await memoryStep({
      memory,
      threadId,
      resourceId,
      input: 'What do you know?',
      readOnly: true,
    });
    expect(step.call.tools).toEqual({});
    expect(step.call.prepareStep).toBeUndefined();
    expect(await workingMemoryTools(memory, { resourceId, readOnly: true })).toEqual({});
    const model = scripted(text('You are Sam.'));
    await generateText({ model, ...step.call });
    const call = model.doGenerateCalls[0]!;
    expect(call.tools ?? []).toEqual([]);
    expect(promptOf(call).system).toContain('cannot be changed');
    expect(promptOf(call).system).toContain('- Name: Sam');
  });

  it('a tool error reaches the model and writes nothing', async () => {
    const { memory, threadId, resourceId } = setup({
      schema: z.object({ age: z.number().min(0).optional() }),
    });
    const model = scripted(toolCall('updateWorkingMemory', { memory: { age: -1 } }), text('Sorry.'));
    const step = await memoryStep({ memory, threadId, resourceId, input: 'I am -1 years old.' });
    const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(3) });
    expect(await memory.getWorkingMemory({ resourceId })).toBeNull();
    const errors = result.steps.flatMap((s) => s.content.filter((p) => p.type === 'tool-error'));
    expect(errors).toHaveLength(1);
  });

  it('state signals: setWorkingMemory, a signal only when the snapshot changed, calls kept in history', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE, useStateSignals: true });
    await memory.updateWorkingMemory({ resourceId, workingMemory: '- Name: Sam' });

    const model1 = scripted(
      toolCall('setWorkingMemory', { memory: '- Name: Sam\n- City: Oslo' }),
      text('Oslo, nice.'),
    );
    const step1 = await memoryStep({ memory, threadId, resourceId, input: 'I live in Oslo.' });
    expect(Object.keys(step1.call.tools)).toEqual(['setWorkingMemory']);
    expect(step1.call.system).not.toContain('- Name: Sam');
    const signals1 = step1.call.messages.filter(isSignal);
    expect(signals1).toHaveLength(1);
    expect(JSON.stringify(signals1[0])).toContain('- Name: Sam');
    expect(step1.call.prepareStep).toBeTypeOf('function');
    const result1 = await generateText({ model: model1, ...step1.call, stopWhen: stepCountIs(3) });
    // The step after setWorkingMemory already sees the new value as a signal.
    const afterWrite = model1.doGenerateCalls[1]!.prompt.at(-1)!;
    expect(afterWrite.role).toBe('user');
    expect(textOf(afterWrite)).toContain('- City: Oslo');
    expect(textOf(afterWrite)).toMatch(/^<state id="working-memory"/);
    expect(textOf(model1.doGenerateCalls[0]!.prompt.at(-1)!)).toBe('I live in Oslo.');
    const saved = await step1.save(result1);
    expect(saved.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant']);

    // The snapshot changed (the tool wrote): a new signal.
    const step2 = await memoryStep({ memory, threadId, resourceId, input: 'Thanks.' });
    const signals2 = step2.call.messages.filter(isSignal);
    expect(signals2).toHaveLength(2);
    expect(JSON.stringify(signals2[1])).toContain('- City: Oslo');
    await step2.save([{ role: 'assistant', content: 'You are welcome.' }]);

    // Unchanged and still in the window: no new signal.
    const step3 = await memoryStep({ memory, threadId, resourceId, input: 'Bye.' });
    expect(step3.call.messages.filter(isSignal)).toHaveLength(2);
    await step3.save([{ role: 'assistant', content: 'Bye.' }]);

    // The last signal has left a short window: it is sent again.
    const step4 = await memoryStep({ memory, threadId, resourceId, input: 'Hello again.', lastMessages: 2 });
    expect(step4.call.messages.filter(isSignal)).toHaveLength(1);
    expect(step4.call.messages).toHaveLength(4);
  });

  it('save refuses what is not a turn result, and stores nothing', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    const step = await memoryStep({ memory, threadId, resourceId, input: 'Hi' });
    const bad: unknown[] = [
      null,
      'text',
      { responseMessages: 'not messages' },
      { responseMessages: Promise.resolve(null) },
      { response: Promise.resolve({}) },
      { response: { messages: 'x' } },
      { messages: 42 },
    ];
    for (const result of bad) {
      await expect(step.save(result as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect((await memory.recall({ threadId })).length).toBe(0);
  });

  it('lastMessages: 2 after a tool turn: the prompt never starts with an orphan tool result', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    const getWeather = tool({
      description: 'weather',
      inputSchema: jsonSchema<unknown>({ type: 'object', properties: { city: { type: 'string' } } }),
      execute: async (): Promise<unknown> => 'sun',
    });
    const model1 = scripted(toolCall('getWeather', { city: 'Berlin' }, 'call-w1'), text('It is sunny.'));
    const step1 = await memoryStep({ memory, threadId, resourceId, input: 'Weather in Berlin?' });
    const result1 = await generateText({
      model: model1,
      ...step1.call,
      tools: { ...step1.call.tools, getWeather },
      stopWhen: stepCountIs(3),
    });
    const saved = await step1.save(result1);
    expect(saved.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);

    const model2 = scripted(text('You are welcome.'));
    const step2 = await memoryStep({ memory, threadId, resourceId, input: 'Thanks!', lastMessages: 2 });
    await generateText({ model: model2, ...step2.call });
    const { rest } = promptOf(model2.doGenerateCalls[0]!);
    expect(rest.map((m) => m.role)).toEqual(['assistant', 'user']);
    expect(rest.map(textOf)).toEqual(['It is sunny.', 'Thanks!']);

    // A window wide enough for the call keeps call and result together.
    const model3 = scripted(text('Bye.'));
    const step3 = await memoryStep({ memory, threadId, resourceId, input: 'Bye', lastMessages: 3 });
    await generateText({ model: model3, ...step3.call });
    const roles = promptOf(model3.doGenerateCalls[0]!).rest.map((m) => m.role);
    expect(roles).toEqual(['assistant', 'tool', 'assistant', 'user']);
  });

  it('memoryStep({ tools }): your tool runs beside the memory tool; a memory tool name is refused', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE, useStateSignals: true });
    const cities: string[] = [];
    const getWeather = tool({
      description: 'weather',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        cities.push(city);
        return `sun in ${city}`;
      },
    });
    const step = await memoryStep({ memory, threadId, resourceId, input: 'Weather?', tools: { getWeather } });
    expect(Object.keys(step.call.tools).sort()).toEqual(['getWeather', 'setWorkingMemory']);
    const model = scripted(toolCall('getWeather', { city: 'Lisbon' }, 'call-w'), text('Sunny.'));
    const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(3) });
    expect(cities).toEqual(['Lisbon']);
    expect(result.text).toBe('Sunny.');

    for (const name of ['setWorkingMemory', 'updateWorkingMemory']) {
      await expect(
        memoryStep({ memory, threadId, resourceId, input: 'x', tools: { [name]: getWeather } }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect((await memory.recall({ threadId })).length).toBe(0);
  });

  it('useStateSignals with vnext is refused', () => {
    expect(() => setup({ template: TEMPLATE, useStateSignals: true, version: 'vnext' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('a thread of another resource is refused', async () => {
    const { memory, threadId, resourceId } = setup({ template: TEMPLATE });
    await memory.createThread({ threadId, resourceId });
    await expect(
      memoryStep({ memory, threadId, resourceId: 'someone-else', input: 'x' }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });
});

function isSignal(message: ModelMessage): boolean {
  return (
    message.role === 'user' && typeof message.content === 'string' && message.content.startsWith('<state ')
  );
}
