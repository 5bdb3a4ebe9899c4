import { describe, expectTypeOf, it } from 'vitest';
import type { Store } from '../src/driver.ts';
import type {
  AddMessageInput,
  JsonObject,
  Memory,
  MemoryStorage,
  Message,
  RecallResult,
  ResolvedMemoryOptions,
  ResolvedSchema,
  SchemaCheck,
  StoreCapabilities,
  Thread,
  WorkingMemoryTemplate,
} from '../src/index.ts';
import {
  type capabilitiesOf,
  mergeWorkingMemory,
  type ResolvedCapabilities,
  type resolveSchema,
} from '../src/index.ts';

// Locks the public types other parts of engram build on; checked by `tsc` (pnpm typecheck).
describe('public API types', () => {
  it('capabilities', () => {
    expectTypeOf<MemoryStorage['capabilities']>().toEqualTypeOf<Partial<StoreCapabilities> | undefined>();
    expectTypeOf<Store['capabilities']>().toEqualTypeOf<StoreCapabilities>();
    expectTypeOf<ReturnType<typeof capabilitiesOf>>().toEqualTypeOf<ResolvedCapabilities>();
    expectTypeOf<ResolvedCapabilities['vectors']>().toEqualTypeOf<boolean>();
  });

  it('Memory', () => {
    expectTypeOf<Memory['storage']>().toEqualTypeOf<MemoryStorage>();
    expectTypeOf<Memory['options']>().toEqualTypeOf<ResolvedMemoryOptions>();
    expectTypeOf<ReturnType<Memory['createThread']>>().toEqualTypeOf<Promise<Thread>>();
    expectTypeOf<ReturnType<Memory['saveMessages']>>().toEqualTypeOf<Promise<Message[]>>();
    expectTypeOf<ReturnType<Memory['addMessage']>>().toEqualTypeOf<Promise<Message>>();
    expectTypeOf<Parameters<Memory['addMessage']>[0]>().toEqualTypeOf<AddMessageInput>();
    expectTypeOf<AddMessageInput['resourceId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<AddMessageInput['threadId']>().toEqualTypeOf<string>();
    expectTypeOf<ReturnType<Memory['recall']>>().toEqualTypeOf<Promise<Message[]>>();
    expectTypeOf<ReturnType<Memory['semanticRecall']>>().toEqualTypeOf<Promise<RecallResult>>();
    expectTypeOf<ReturnType<Memory['getMessages']>>().toEqualTypeOf<Promise<Message[]>>();
    expectTypeOf<ReturnType<Memory['getWorkingMemory']>>().toEqualTypeOf<Promise<string | null>>();
    expectTypeOf<ReturnType<Memory['updateWorkingMemory']>>().toEqualTypeOf<Promise<void>>();
    expectTypeOf<ReturnType<Memory['mergeWorkingMemory']>>().toEqualTypeOf<Promise<JsonObject>>();
    expectTypeOf<ReturnType<Memory['applyWorkingMemoryPatch']>>().toEqualTypeOf<Promise<JsonObject>>();
    expectTypeOf<ReturnType<Memory['editWorkingMemory']>>().toEqualTypeOf<Promise<string | null>>();
    expectTypeOf<ReturnType<Memory['supportsAtomicWorkingMemoryMerge']>>().toEqualTypeOf<Promise<boolean>>();
    expectTypeOf<ReturnType<Memory['getWorkingMemoryTemplate']>>().toEqualTypeOf<
      Promise<WorkingMemoryTemplate>
    >();
    expectTypeOf<ReturnType<Memory['getWorkingMemorySchema']>>().toEqualTypeOf<ResolvedSchema | null>();
    expectTypeOf<Parameters<Memory['editWorkingMemory']>[0]['edit']>().toEqualTypeOf<
      (current: string | null) => string | null
    >();
  });

  it('options and helpers', () => {
    expectTypeOf<ResolvedMemoryOptions['lastMessages']>().toEqualTypeOf<number | false>();
    expectTypeOf<ResolvedMemoryOptions['workingMemory']['scope']>().toEqualTypeOf<'resource' | 'thread'>();
    expectTypeOf<ResolvedMemoryOptions['workingMemory']['format']>().toEqualTypeOf<'markdown' | 'json'>();
    expectTypeOf(mergeWorkingMemory).returns.toEqualTypeOf<JsonObject>();
    expectTypeOf<ReturnType<typeof resolveSchema>['jsonSchema']>().toEqualTypeOf<JsonObject>();
    expectTypeOf<ReturnType<ResolvedSchema['validate']>>().toEqualTypeOf<
      SchemaCheck | Promise<SchemaCheck>
    >();
  });
});
