import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { rolldown } from 'rolldown';
import { describe, expect, it } from 'vitest';

/**
 * Edge runtimes (Cloudflare Workers, Vercel Edge) refuse code generation from strings. Core is
 * bundled with its dependencies, as a deployment would bundle it, and run in a context where
 * `eval` and `new Function` throw; a schema-mode merge must still validate there.
 */

async function bundle(entry: string, name: string): Promise<string> {
  const build = await rolldown({ input: entry, platform: 'browser', logLevel: 'silent' });
  const { output } = await build.generate({ format: 'iife', name });
  await build.close();
  return output[0].code;
}

/** A context like an edge isolate: web globals, no code generation from strings. */
function edgeContext(): vm.Context {
  const context = vm.createContext(
    { URL, TextEncoder, TextDecoder, crypto, structuredClone, queueMicrotask, setTimeout, clearTimeout },
    { codeGeneration: { strings: false, wasm: false } },
  );
  const probe = JSON.parse(
    vm.runInContext(
      `JSON.stringify([() => eval('1'), () => new Function('return 1')].map((f) => {
        try { f(); return 'allowed'; } catch (e) { return e.constructor.name; }
      }))`,
      context,
    ),
  );
  // the context must really forbid code generation, or this test proves nothing
  expect(probe).toStrictEqual(['EvalError', 'EvalError']);
  return context;
}

const core = fileURLToPath(new URL('../src/index.ts', import.meta.url));

describe('@engram/core on an edge-like runtime (no eval, no new Function)', () => {
  it('validates a schema-mode merge through Memory with the InMemoryStore', async () => {
    const context = edgeContext();
    vm.runInContext(await bundle(core, 'engram'), context);
    const outcome = await vm.runInContext(
      `(async () => {
        const { Memory, InMemoryStore, isMemoryError } = engram;
        const schema = {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1 },
            tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' }, uniqueItems: true },
            contact: { $ref: '#/$defs/contact' },
          },
          $defs: { contact: { oneOf: [{ type: 'string' }, { type: 'object', required: ['phone'] }] } },
          additionalProperties: false,
        };
        const memory = new Memory({
          storage: new InMemoryStore(),
          options: { workingMemory: { scope: 'resource', schema } },
        });
        const thread = await memory.createThread({ resourceId: 'user-1' });
        const target = { threadId: thread.id, resourceId: 'user-1' };
        const merged = await memory.mergeWorkingMemory({ ...target, workingMemory: { name: 'Sam', tags: ['a'] } });
        let refused;
        try {
          await memory.mergeWorkingMemory({ ...target, workingMemory: { tags: ['a', 'B'], extra: 1 } });
        } catch (error) {
          refused = isMemoryError(error, 'VALIDATION') ? error.details.issues : String(error);
        }
        return JSON.stringify({ merged, refused, stored: await memory.getWorkingMemory(target) });
      })()`,
      context,
    );
    expect(JSON.parse(outcome)).toStrictEqual({
      merged: { name: 'Sam', tags: ['a'] },
      refused: ['tags[1]: must match the pattern ^[a-z]+$', 'the document: unexpected property "extra"'],
      stored: JSON.stringify({ name: 'Sam', tags: ['a'] }),
    });
  }, 120_000);

  it('refuses a validator that generates code (Ajv), so the first test would catch one', async () => {
    const context = edgeContext();
    const entry = fileURLToPath(new URL('./fixtures/ajv-entry.ts', import.meta.url));
    vm.runInContext(await bundle(entry, 'codegen'), context);
    const outcome = vm.runInContext(
      `(() => { try { codegen.compile({ type: 'string' }); return 'compiled'; } catch (e) { return e.constructor.name; } })()`,
      context,
    );
    expect(outcome).toBe('EvalError');
  }, 120_000);
});
