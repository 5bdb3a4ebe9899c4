import { describe, expect, it } from 'vitest';
import {
  type AgentMessage,
  dropOrphanToolResults,
  InMemoryStore,
  Memory,
  messagesToSave,
  recallHistory,
  stripWorkingMemoryToolParts,
} from '../src/index.ts';

async function setup(lastMessages: number | false) {
  const storage = new InMemoryStore();
  await storage.init();
  const memory = new Memory({ storage, options: { lastMessages } });
  const resourceId = `r-${Math.random().toString(36).slice(2)}`;
  const thread = await memory.createThread({ resourceId });
  const base = Date.UTC(2026, 0, 1);
  await memory.saveMessages({
    messages: Array.from({ length: 12 }, (_, i) => ({
      threadId: thread.id,
      resourceId,
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: `m${i}`,
      createdAt: new Date(base + i * 1000),
    })),
  });
  return { memory, threadId: thread.id, resourceId };
}

describe('message history', () => {
  it('recalls the lastMessages newest messages in chronological order', async () => {
    const { memory, threadId, resourceId } = await setup(5);
    const recalled = await recallHistory(memory, { threadId, resourceId });
    expect(recalled.map((m) => m.content)).toEqual(['m7', 'm8', 'm9', 'm10', 'm11']);
    const three = await recallHistory(memory, { threadId, last: 3 });
    expect(three.map((m) => m.content)).toEqual(['m9', 'm10', 'm11']);
    expect(await recallHistory(memory, { threadId, last: 0 })).toEqual([]);
    await expect(recallHistory(memory, { threadId, resourceId: 'someone-else' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('lastMessages: false recalls everything', async () => {
    const { memory, threadId } = await setup(false);
    expect((await recallHistory(memory, { threadId })).map((m) => m.content)).toHaveLength(12);
  });

  it('saving a turn drops system messages and working-memory tool calls, keeps the rest', () => {
    const turn: AgentMessage[] = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'system', content: 'WORKING MEMORY ...', source: 'memory' },
      { role: 'user', content: 'My name is Sam' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Nice to meet you, Sam.' },
          {
            type: 'tool-call',
            toolCallId: 'c1',
            toolName: 'updateWorkingMemory',
            input: { memory: '- Name: Sam' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'updateWorkingMemory',
            output: { type: 'json', value: {} },
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c2', toolName: 'getWeather', input: { city: 'Berlin' } }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'getWeather',
            output: { type: 'text', value: 'sun' },
          },
        ],
      },
      {
        role: 'assistant',
        content: {
          format: 2,
          parts: [
            { type: 'tool-invocation', toolInvocation: { toolName: 'updateWorkingMemory', args: {} } },
            { type: 'tool-setWorkingMemory', input: {} },
          ],
        },
      },
      { role: 'assistant', content: { format: 2, parts: [{ type: 'tool-updateWorkingMemory', input: {} }] } },
    ];
    const frozen = structuredClone(turn);
    const saved = messagesToSave(turn);
    expect(saved).toEqual([
      turn[2],
      { role: 'assistant', content: [{ type: 'text', text: 'Nice to meet you, Sam.' }] },
      turn[5],
      turn[6],
      { role: 'assistant', content: { format: 2, parts: [{ type: 'tool-setWorkingMemory', input: {} }] } },
    ]);
    expect(turn).toEqual(frozen);
  });

  it('leaves plain content alone', () => {
    expect(stripWorkingMemoryToolParts('text')).toBe('text');
    const parts = [{ type: 'text', text: 'x' }];
    expect(stripWorkingMemoryToolParts(parts)).toBe(parts);
  });

  describe('the window never starts with an orphan tool result', () => {
    /** A thread holding: user, a tool call, its result, an answer, a user message (one each). */
    async function toolThread(asV2: boolean) {
      const storage = new InMemoryStore();
      const memory = new Memory({ storage, options: { lastMessages: 3 } });
      const resourceId = `r-${Math.random().toString(36).slice(2)}`;
      const thread = await memory.createThread({ resourceId });
      const wrap = (parts: unknown[]) => (asV2 ? { format: 2, parts } : parts) as never;
      const base = Date.UTC(2026, 0, 1);
      const rows = [
        { role: 'user' as const, content: 'Weather in Berlin?' },
        {
          role: 'assistant' as const,
          content: wrap([
            { type: 'tool-call', toolCallId: 'call-w1', toolName: 'getWeather', input: { city: 'Berlin' } },
          ]),
        },
        {
          role: 'tool' as const,
          content: wrap([
            {
              type: 'tool-result',
              toolCallId: 'call-w1',
              toolName: 'getWeather',
              output: { type: 'text', value: 'sun' },
            },
          ]),
        },
        { role: 'assistant' as const, content: 'It is sunny.' },
        { role: 'user' as const, content: 'Thanks!' },
      ];
      await memory.saveMessages({
        messages: rows.map((row, i) => ({
          ...row,
          threadId: thread.id,
          resourceId,
          createdAt: new Date(base + i * 1000),
        })),
      });
      return { memory, threadId: thread.id, resourceId };
    }

    for (const asV2 of [false, true]) {
      it(`drops the result whose call fell out of the window (${asV2 ? '{ format: 2, parts }' : 'parts array'})`, async () => {
        const { memory, threadId, resourceId } = await toolThread(asV2);
        const raw = await memory.recall({ threadId, resourceId, last: 3 });
        expect(raw.map((m) => m.role)).toEqual(['tool', 'assistant', 'user']);
        const window = await recallHistory(memory, { threadId, resourceId, last: 3 });
        expect(window.map((m) => [m.role, m.content])).toEqual([
          ['assistant', 'It is sunny.'],
          ['user', 'Thanks!'],
        ]);
        // A window that holds the call keeps the pair.
        const wider = await recallHistory(memory, { threadId, resourceId, last: 4 });
        expect(wider.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'user']);
        expect(wider[1]).toEqual(raw[0]);
      });
    }

    it('keeps results whose call is earlier, drops only the orphans, and never mutates', () => {
      const messages: AgentMessage[] = [
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'old', toolName: 'x', output: { type: 'text', value: '1' } },
            { type: 'tool-approval-response', approvalId: 'ap-old', approved: true },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'a', toolName: 'x', input: {} },
            {
              type: 'tool-result',
              toolCallId: 'a',
              toolName: 'x',
              output: { type: 'text', value: 'same message' },
            },
            { type: 'tool-call', toolCallId: 'b', toolName: 'x', input: {} },
            { type: 'tool-approval-request', approvalId: 'ap-b', toolCallId: 'b' },
          ],
        },
        {
          role: 'tool',
          content: {
            format: 2,
            parts: [
              { type: 'tool-result', toolCallId: 'old', toolName: 'x', output: { type: 'text', value: '2' } },
              { type: 'tool-approval-response', approvalId: 'ap-b', approved: true },
              { type: 'tool-result', toolCallId: 'b', toolName: 'x', output: { type: 'text', value: '3' } },
            ],
          },
        },
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'pending', toolName: 'x', input: {} }],
        },
      ];
      const frozen = structuredClone(messages);
      const out = dropOrphanToolResults(messages);
      expect(out).toEqual([
        messages[1],
        {
          role: 'tool',
          content: {
            format: 2,
            parts: [
              { type: 'tool-approval-response', approvalId: 'ap-b', approved: true },
              { type: 'tool-result', toolCallId: 'b', toolName: 'x', output: { type: 'text', value: '3' } },
            ],
          },
        },
        messages[3],
      ]);
      expect(messages).toEqual(frozen);
      const clean = [messages[1]!, messages[3]!];
      expect(dropOrphanToolResults(clean)).toEqual(clean);
    });
  });
});
