/**
 * A stand-in for a real model, built on the AI SDK's own mock (`ai/test`), so the example runs
 * without an API key: when the user introduces themselves and the working memory (in its system
 * prompt) is still empty, it calls `updateWorkingMemory` with what they said; otherwise it
 * answers from the working memory it was shown.
 */
import * as aiTest from 'ai/test';

type Mock = aiTest.MockLanguageModelV3;
/** What the mock answers for one model call. */
export type GenerateResult = Awaited<ReturnType<Mock['doGenerate']>>;
/** The prompt of one model call. */
export type Prompt = Mock['doGenerateCalls'][number]['prompt'];

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 0, text: 0, reasoning: undefined },
};

function textOf(message: Prompt[number] | undefined): string {
  if (!message) return '';
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => ('text' in part ? part.text : '')).join('');
}

/** A text answer that ends the call. */
export function answer(text: string): GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}

function reply(prompt: Prompt): GenerateResult {
  const system = prompt
    .filter((m) => m.role === 'system')
    .map(textOf)
    .join('\n');
  const last = prompt.at(-1);
  if (last?.role === 'tool') return answer('Nice to meet you, Sam! I will remember that.');
  const said = textOf(last);
  const name = /I'm (\w+)/.exec(said)?.[1];
  const city = /live in (\w+)/.exec(said)?.[1];
  const hobby = /weekends (\w+)/.exec(said)?.[1];
  const known = /\*\*Location\*\*: (\w+)/.exec(system)?.[1];
  if (name && city && !known) {
    const memory = `# User Profile\n- **Name**: ${name}\n- **Location**: ${city}\n- **Interests**: ${hobby ?? ''}\n- **Preferences**:\n`;
    return {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'call-1',
          toolName: 'updateWorkingMemory',
          input: JSON.stringify({ memory }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  }
  if (!known) return answer('I do not know where you live yet.');
  const interests = /\*\*Interests\*\*: (\w+)/.exec(system)?.[1];
  return answer(`You live in ${known}${interests ? `; this weekend you could go ${interests}` : ''}.`);
}

/**
 * The mock model: ai 7's `MockLanguageModelV4` when present, else ai 6's `MockLanguageModelV3`,
 * answering each call with `respond` (default: the remembering assistant above).
 */
export function mockModel(respond: (prompt: Prompt) => GenerateResult = reply): Mock {
  const exports: Record<string, unknown> = aiTest;
  const Model = (exports.MockLanguageModelV4 ??
    aiTest.MockLanguageModelV3) as typeof aiTest.MockLanguageModelV3;
  return new Model({
    modelId: 'engram-example-mock',
    doGenerate: async (options) => respond(options.prompt),
  });
}
