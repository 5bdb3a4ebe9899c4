import { readFileSync } from 'node:fs';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import * as guide from '../src/guide.ts';

const source = readFileSync(new URL('../src/guide.ts', import.meta.url), 'utf8');
const doc = readFileSync(new URL('../../../docs/working-memory.md', import.meta.url), 'utf8');

/** The `#region` blocks of guide.ts, dedented. */
function regions(): Map<string, string> {
  const out = new Map<string, string>();
  const pattern = /^([ \t]*)\/\/ #region (\S+)\n([\s\S]*?)^[ \t]*\/\/ #endregion \2\n/gm;
  for (const match of source.matchAll(pattern)) {
    const indent = match[1]!.length;
    const body = match[3]!
      .split('\n')
      .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
      .join('\n')
      .replace(/\n+$/, '');
    out.set(match[2]!, body);
  }
  return out;
}

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

describe('docs/working-memory.md', () => {
  it('every ts block of the guide is a region of guide.ts, and every region is in the guide', () => {
    const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
    const all = regions();
    expect(all.size).toBeGreaterThanOrEqual(12);
    for (const block of blocks) expect([...all.values()]).toContain(block);
    for (const [name, body] of all)
      expect(blocks, `region ${name} is missing from the guide`).toContain(body);
  });

  it('quick start: the model calls the tool and the notes are stored', async () => {
    let call = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () =>
        call++ === 0
          ? {
              content: [
                {
                  type: 'tool-call',
                  toolCallId: 'c',
                  toolName: 'updateWorkingMemory',
                  input: JSON.stringify({ memory: '# User\n- Name: Sam\n- City: Berlin\n' }),
                },
              ],
              finishReason: { unified: 'tool-calls', raw: undefined },
              usage,
              warnings: [],
            }
          : {
              content: [{ type: 'text', text: 'Hi Sam' }],
              finishReason: { unified: 'stop', raw: undefined },
              usage,
              warnings: [],
            },
    });
    expect(await guide.quickStart(model)).toBe('# User\n- Name: Sam\n- City: Berlin\n');
  });

  it('the other snippets do what the guide says', async () => {
    expect(await guide.scopes()).toEqual(['- Name: Sam', '- Topic: taxes']);
    expect(await guide.templates()).toContain('Allergies: Penicillin');
    expect(await guide.schemas()).toEqual({ name: 'Sam' });
    expect(await guide.mergeRules()).toEqual({ prefs: { tone: 'formal', topics: ['chess'] } });
    expect(await guide.neutralTool()).toBe('# User\n- Name: Sam\n');
    const processed = (await guide.processor()) as { role: string; source?: string; content: unknown }[];
    expect(processed[0]).toMatchObject({ role: 'system', source: 'memory' });
    expect(processed[0]!.content).toContain('- Name: Sam');
    expect(await guide.readOnly()).toEqual([null, {}]);
    expect(await guide.vnext()).toBe('- Name: Samantha');
    const signalled = (await guide.stateSignals()) as { type?: string }[];
    expect(signalled.map((m) => m.type)).toEqual(['state', undefined]);
    const recent = (await guide.history()) as { role: string; content: unknown }[];
    expect(recent.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(recent[1]!.content).toEqual([{ type: 'text', text: 'Hi Sam!' }]);
    expect(guide.providerSafe()).toEqual(['$.pet: type "None"']);
  });
});
