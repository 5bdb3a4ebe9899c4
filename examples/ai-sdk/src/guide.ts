/**
 * The code of docs/working-memory.md. Each `#region` is one code block of the guide;
 * test/guide.test.ts checks that the guide's blocks match these regions and runs them.
 */
// #region imports
import { memoryStep, toAISDKTool } from '@engram/ai-sdk';
import {
  type AgentMessage,
  createWorkingMemoryTool,
  InMemoryStore,
  isMemoryError,
  Memory,
  messagesToSave,
  PROVIDER_SAFE_RULES,
  providerSafetyViolations,
  recallHistory,
  WorkingMemory,
  WorkingMemoryState,
} from '@engram/core';
import { generateText, type LanguageModel, stepCountIs } from 'ai';
import { z } from 'zod';
// #endregion imports

export async function quickStart(model: LanguageModel): Promise<string | null> {
  // #region quick-start
  const memory = new Memory({
    storage: new InMemoryStore(), // or LibSQLStore, PostgresStore, …
    options: {
      lastMessages: 20,
      workingMemory: { enabled: true, template: '# User\n- Name:\n- City:\n' },
    },
  });

  const step = await memoryStep({
    memory,
    threadId: 'thread-1',
    resourceId: 'user-42',
    instructions: 'You are a helpful assistant.',
    input: "Hi, I'm Sam from Berlin.",
  });
  const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(5) });
  await step.save(result);

  const notes = await memory.getWorkingMemory({ resourceId: 'user-42' });
  // #endregion quick-start
  return notes;
}

export async function scopes(): Promise<[string | null, string | null]> {
  const storage = new InMemoryStore();
  // #region scopes
  const perUser = new Memory({ storage, options: { workingMemory: { scope: 'resource' } } });
  const perThread = new Memory({ storage, options: { workingMemory: { scope: 'thread' } } });

  await perThread.createThread({ threadId: 't-1', resourceId: 'user-42' });
  await perUser.updateWorkingMemory({ resourceId: 'user-42', workingMemory: '- Name: Sam' });
  await perThread.updateWorkingMemory({ threadId: 't-1', workingMemory: '- Topic: taxes' });

  // Each scope sees only its own document.
  const shared = await perUser.getWorkingMemory({ threadId: 't-1', resourceId: 'user-42' }); // '- Name: Sam'
  const own = await perThread.getWorkingMemory({ threadId: 't-1', resourceId: 'user-42' }); // '- Topic: taxes'
  // #endregion scopes
  return [shared, own];
}

export async function templates(): Promise<string | null> {
  const storage = new InMemoryStore();
  // #region templates
  const memory = new Memory({
    storage,
    options: {
      workingMemory: {
        template: `# Patient
- Name:
- Allergies:
- Medications:
`,
      },
    },
  });

  // An initial value: thread metadata (thread scope) or updateWorkingMemory (either scope).
  await memory.updateWorkingMemory({
    resourceId: 'patient-7',
    workingMemory: '# Patient\n- Name: John Doe\n- Allergies: Penicillin\n- Medications: None\n',
  });
  // #endregion templates
  return memory.getWorkingMemory({ resourceId: 'patient-7' });
}

export async function schemas(): Promise<Record<string, unknown>> {
  // #region schemas
  const profile = z.object({
    name: z.string().optional(),
    location: z.string().optional(),
    preferences: z
      .object({ tone: z.enum(['formal', 'casual']).optional(), topics: z.array(z.string()).optional() })
      .optional(),
  });
  const memory = new Memory({
    storage: new InMemoryStore(),
    options: { workingMemory: { schema: profile } },
  });

  // A plain JSON Schema works the same way:
  const fromJsonSchema = new Memory({
    storage: new InMemoryStore(),
    options: {
      workingMemory: {
        schema: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false },
      },
    },
  });
  // #endregion schemas
  await fromJsonSchema.updateWorkingMemory({ resourceId: 'u', workingMemory: '{"name":"Sam"}' });
  return memory.mergeWorkingMemory({ resourceId: 'u', workingMemory: { name: 'Sam' } });
}

export async function mergeRules(): Promise<Record<string, unknown>> {
  const memory = new Memory({
    storage: new InMemoryStore(),
    options: {
      workingMemory: {
        schema: z.object({
          name: z.string().optional(),
          prefs: z.object({ tone: z.string().optional(), topics: z.array(z.string()).optional() }).optional(),
        }),
      },
    },
  });
  // #region merge
  await memory.mergeWorkingMemory({
    resourceId: 'user-42',
    workingMemory: { name: 'Sam', prefs: { tone: 'formal', topics: ['tax', 'travel'] } },
  });
  const merged = await memory.mergeWorkingMemory({
    resourceId: 'user-42',
    workingMemory: { name: null, prefs: { topics: ['chess'] } },
  });
  // merged: { prefs: { tone: 'formal', topics: ['chess'] } }
  // #endregion merge
  return merged;
}

export async function neutralTool(): Promise<string | null> {
  const memory = new Memory({ storage: new InMemoryStore(), options: { workingMemory: { enabled: true } } });
  // #region tool
  const tool = await createWorkingMemoryTool(memory, { threadId: 'thread-1', resourceId: 'user-42' });
  if (tool) {
    // tool.name: 'updateWorkingMemory'; tool.inputSchema: provider-safe JSON Schema
    await tool.execute({ memory: '# User\n- Name: Sam\n' });
  }

  // The same tool for the Vercel AI SDK:
  const tools = tool ? { [tool.name]: toAISDKTool(tool) } : {};
  // #endregion tool
  void tools;
  return memory.getWorkingMemory({ resourceId: 'user-42' });
}

export async function processor(): Promise<unknown> {
  const storage = new InMemoryStore();
  await storage.updateResource({ resourceId: 'user-42', workingMemory: '- Name: Sam' });
  // #region processor
  const workingMemory = new WorkingMemory({
    storage,
    scope: 'resource',
    template: { format: 'markdown', content: '# User\n- Name:\n- City:\n' },
  });

  const messages = await workingMemory.processInput({
    messages: [{ role: 'user', content: 'Where do I live?' }],
    requestContext: new Map([
      ['threadId', 'thread-1'],
      ['resourceId', 'user-42'],
    ]),
  });
  // [{ role: 'system', source: 'memory', content: 'WORKING MEMORY …' }, { role: 'user', … }]
  // #endregion processor
  return messages;
}

export async function readOnly(): Promise<unknown> {
  const storage = new InMemoryStore();
  // #region read-only
  const memory = new Memory({ storage, options: { readOnly: true, workingMemory: { enabled: true } } });
  const tool = await createWorkingMemoryTool(memory, { resourceId: 'user-42' }); // null

  // Or per request, with a memory that is writable elsewhere:
  const writable = new Memory({ storage, options: { workingMemory: { enabled: true } } });
  const step = await memoryStep({
    memory: writable,
    threadId: 'thread-9',
    resourceId: 'user-42',
    input: 'What do you know about me?',
    readOnly: true,
  }); // step.call.tools is {}

  try {
    await memory.updateWorkingMemory({ resourceId: 'user-42', workingMemory: 'x' });
  } catch (error) {
    if (isMemoryError(error, 'UNSUPPORTED')) console.log('read-only: nothing was written');
  }
  // #endregion read-only
  return [tool, step.call.tools];
}

export async function vnext(): Promise<string | null> {
  // #region vnext
  const memory = new Memory({
    storage: new InMemoryStore(),
    options: { workingMemory: { template: '# User\n- Name:\n', version: 'vnext' } },
  });
  const tool = await createWorkingMemoryTool(memory, { resourceId: 'user-42' });

  await tool?.execute({ newMemory: '- Name: Sam', updateReason: 'append-new-memory' });
  await tool?.execute({ newMemory: '- Name: Sam', updateReason: 'append-new-memory' }); // duplicate: skipped
  await tool?.execute({
    newMemory: '- Name: Samantha',
    searchString: '- Name: Sam',
    updateReason: 'clarify-existing-memory',
  });
  // stored: '- Name: Samantha'
  // #endregion vnext
  return memory.getWorkingMemory({ resourceId: 'user-42' });
}

export async function stateSignals(): Promise<unknown> {
  const storage = new InMemoryStore();
  // #region state-signals
  const memory = new Memory({
    storage,
    options: { workingMemory: { template: '# User\n- Name:\n', useStateSignals: true } },
  });
  // memoryStep delivers the memory as a signal and names the tool setWorkingMemory.

  // Without the AI SDK helper, use the processor directly:
  const state = new WorkingMemoryState({ storage, scope: 'resource', templateProvider: memory });
  const messages = await state.processInput({
    messages: [{ role: 'user', content: 'Hello' }],
    requestContext: { threadId: 'thread-1', resourceId: 'user-42' },
  });
  // [{ role: 'user', type: 'state', source: 'memory',
  //    content: { format: 2, parts: [{ type: 'state', stateId: 'working-memory', cacheKey, content }] } },
  //  { role: 'user', content: 'Hello' }]
  // #endregion state-signals
  return messages;
}

export async function history(): Promise<unknown> {
  const memory = new Memory({ storage: new InMemoryStore(), options: { lastMessages: 2 } });
  await memory.createThread({ threadId: 'thread-1', resourceId: 'user-42' });
  // #region history
  const turn: AgentMessage[] = [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: 'My name is Sam.' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Hi Sam!' },
        {
          type: 'tool-call',
          toolCallId: 'c1',
          toolName: 'updateWorkingMemory',
          input: { memory: '- Name: Sam' },
        },
      ],
    },
  ];
  await memory.saveMessages({
    messages: messagesToSave(turn).map(({ role, content }) => ({
      threadId: 'thread-1',
      resourceId: 'user-42',
      role,
      content,
    })),
  });
  // saved: the user message, and the assistant message without the tool call

  const recent = await recallHistory(memory, { threadId: 'thread-1', resourceId: 'user-42' });
  // the newest `lastMessages` messages, oldest first
  // #endregion history
  return recent;
}

export function providerSafe(): string[] {
  // #region provider-safe
  console.log(PROVIDER_SAFE_RULES.join('\n'));
  const problems = providerSafetyViolations({
    type: 'object',
    properties: { pet: { type: 'None' } },
  });
  // ['$.pet: type "None"']
  // #endregion provider-safe
  return problems;
}
