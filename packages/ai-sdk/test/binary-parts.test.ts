import { InMemoryStore, Memory } from '@engram/core';
import { generateText, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { fromModelMessage, memoryStep, toModelMessages } from '../src/index.ts';

type CallOptions = MockLanguageModelV3['doGenerateCalls'][number];
type PromptPart = Exclude<CallOptions['prompt'][number]['content'], string>[number];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A mock model that answers "ok" and accepts every URL as is (so nothing is downloaded). */
function model(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    supportedUrls: { '*/*': [/.*/] },
    doGenerate: async () => ({
      content: [{ type: 'text', text: 'ok' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    }),
  });
}

/** Every byte value, twice, in an odd order, so base64 padding and high bytes are exercised. */
const BYTES = Uint8Array.from({ length: 511 }, (_, i) => (i * 97 + 13) % 256);

function setup() {
  const memory = new Memory({ storage: new InMemoryStore(), options: { lastMessages: 10 } });
  const n = Math.random().toString(36).slice(2);
  return { memory, threadId: `t-${n}`, resourceId: `r-${n}` };
}

/** The file parts of the user messages the model received, in order. */
function fileParts(call: CallOptions): PromptPart[] {
  return call.prompt
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) => m.content as PromptPart[])
    .filter((p) => p.type === 'file');
}

/** The bytes a file part carries, whether the SDK passed them as bytes or as base64. */
function bytesOf(part: PromptPart): Uint8Array {
  if (part.type !== 'file') throw new Error(`not a file part: ${part.type}`);
  const data = part.data;
  if (data instanceof Uint8Array) return new Uint8Array(data);
  if (typeof data === 'string') return new Uint8Array(Buffer.from(data, 'base64'));
  throw new Error(`the file part holds a URL, not bytes: ${String(data)}`);
}

/** True when `value` holds only JSON values (no Buffer, typed array, URL, Date, …). */
function isPlainJson(value: unknown): boolean {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return true;
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.values(value as object).every(isPlainJson);
  }
  return false;
}

/** A pooled Buffer: a view at a non-zero offset of a larger shared ArrayBuffer. */
function pooledBuffer(bytes: Uint8Array): Buffer {
  Buffer.from('pad the pool so the next Buffer does not start at offset 0');
  const buffer = Buffer.from(bytes);
  return buffer;
}

/** A Uint8Array view in the middle of a larger ArrayBuffer. */
function offsetView(bytes: Uint8Array): Uint8Array {
  const backing = new Uint8Array(bytes.length + 20).fill(0xee);
  backing.set(bytes, 7);
  return backing.subarray(7, 7 + bytes.length);
}

const EVEN = BYTES.slice(0, 510); // an even length, for 16-bit views

const binaryCases: [string, () => unknown, Uint8Array][] = [
  ['Buffer (pooled, non-zero offset)', () => pooledBuffer(BYTES), BYTES],
  ['ArrayBuffer', () => BYTES.slice().buffer, BYTES],
  ['Uint8Array', () => BYTES.slice(), BYTES],
  ['Uint8Array view at an offset of a larger buffer', () => offsetView(BYTES), BYTES],
  ['Uint16Array', () => new Uint16Array(EVEN.slice().buffer), EVEN],
  ['DataView', () => new DataView(offsetView(BYTES).buffer, 7, BYTES.length), BYTES],
  ['base64 string', () => Buffer.from(BYTES).toString('base64'), BYTES],
  [
    'data URL string',
    () => `data:application/octet-stream;base64,${Buffer.from(BYTES).toString('base64')}`,
    BYTES,
  ],
];

function userTurn(data: unknown, kind: 'file' | 'image'): ModelMessage[] {
  const part =
    kind === 'file'
      ? { type: 'file', data, mediaType: 'application/octet-stream', filename: 'blob.bin' }
      : { type: 'image', image: data, mediaType: 'image/png' };
  return [{ role: 'user', content: [{ type: 'text', text: 'Look at this.' }, part] } as ModelMessage];
}

describe('memoryStep: binary file and image parts', () => {
  for (const [name, make, expected] of binaryCases) {
    for (const kind of ['file', 'image'] as const) {
      it(`${kind} part from a ${name}: the model receives the same bytes, now and after a reload`, async () => {
        const { memory, threadId, resourceId } = setup();
        const first = model();
        const step = await memoryStep({ memory, threadId, resourceId, input: userTurn(make(), kind) });
        const result = await generateText({ model: first, ...step.call });
        const [sent] = fileParts(first.doGenerateCalls[0]!);
        expect(bytesOf(sent!)).toEqual(expected);

        const [saved] = await step.save(result);
        expect(isPlainJson(saved!.content)).toBe(true);
        const stored = (await memory.recall({ threadId, last: false }))[0]!;
        expect(JSON.parse(JSON.stringify(stored.content))).toEqual(stored.content);

        // Next turn: the saved part comes back from storage in the history.
        const second = model();
        const step2 = await memoryStep({ memory, threadId, resourceId, input: 'And now?' });
        await generateText({ model: second, ...step2.call });
        const [recalled] = fileParts(second.doGenerateCalls[0]!);
        expect(bytesOf(recalled!)).toEqual(expected);
        expect(recalled).toMatchObject({ mediaType: (sent as { mediaType: string }).mediaType });
      });
    }
  }

  it('URLs (a URL object and a URL string) stay URLs, now and after a reload', async () => {
    const { memory, threadId, resourceId } = setup();
    const input: ModelMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'image', image: new URL('https://example.com/cat.png') },
          { type: 'file', data: 'https://example.com/report.pdf', mediaType: 'application/pdf' },
        ],
      },
    ];
    const first = model();
    const step = await memoryStep({ memory, threadId, resourceId, input });
    await step.save(await generateText({ model: first, ...step.call }));
    const second = model();
    const step2 = await memoryStep({ memory, threadId, resourceId, input: 'And now?' });
    await generateText({ model: second, ...step2.call });
    for (const call of [first.doGenerateCalls[0]!, second.doGenerateCalls[0]!]) {
      const urls = fileParts(call).map((p) => (p.type === 'file' ? String(p.data) : ''));
      expect(urls).toEqual(['https://example.com/cat.png', 'https://example.com/report.pdf']);
      expect(fileParts(call).every((p) => p.type === 'file' && p.data instanceof URL)).toBe(true);
    }
  });

  it('fromModelMessage stores binary data as base64 in the same field, next to its media type', () => {
    const ids = { threadId: 't', resourceId: 'r' };
    const saved = fromModelMessage(
      {
        role: 'user',
        content: [
          { type: 'file', data: Buffer.from('hi'), mediaType: 'text/plain' },
          { type: 'image', image: new Uint8Array([1, 2, 3]).buffer, mediaType: 'image/png' },
        ],
      },
      ids,
    );
    expect(saved.content).toEqual({
      format: 2,
      parts: [
        { type: 'file', data: 'aGk=', mediaType: 'text/plain' },
        { type: 'image', image: 'AQID', mediaType: 'image/png' },
      ],
    });
    // What comes back is a prompt the AI SDK accepts as is: base64 is a valid `DataContent`.
    expect(toModelMessages([{ ...ids, ...saved, id: 'm', createdAt: new Date(), type: 'v2' }])).toEqual([
      { role: 'user', content: (saved.content as { parts: unknown }).parts },
    ]);
  });
});
