import { describe, expect, it } from 'vitest';
import { converse } from '../src/agent.ts';
import { mockModel } from '../src/mock-model.ts';

describe('the example conversation, against the AI SDK mock model', () => {
  it('turn 1 stores the profile through the tool; turn 2, in a new thread, answers from it', async () => {
    const lines: string[] = [];
    const out = await converse(mockModel(), { log: (line) => lines.push(line) });
    expect(out.memory).toContain('- **Location**: Lisbon');
    expect(out.second).toBe('You live in Lisbon; this weekend you could go bouldering.');
    expect(lines).toContain('[thread-a] tool calls: updateWorkingMemory');
    expect(lines).toContain('[thread-b] tool calls: none');
  });

  it('the mock answers from memory only: with nothing stored it does not know', async () => {
    const model = mockModel();
    const { generateText } = await import('ai');
    const result = await generateText({ model, prompt: 'Where do I live?' });
    expect(result.text).toBe('I do not know where you live yet.');
  });
});
