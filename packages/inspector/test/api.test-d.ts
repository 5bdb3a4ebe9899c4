import type { Memory } from '@engram/core';
import { expectTypeOf, it } from 'vitest';
import {
  Inspector,
  type InspectorServer,
  type ObservationsView,
  type OpenedStore,
  openStore,
  type RecallSettings,
  type RecallView,
  type StoreSettings,
  startServer,
  type ThreadView,
} from '../src/index.ts';

// Locks the public API types; checked by `pnpm typecheck` and by vitest's typecheck mode.

it('opens a store from a URL or a module, with optional settings', () => {
  expectTypeOf(openStore).parameters.toEqualTypeOf<[spec: string, settings?: StoreSettings]>();
  expectTypeOf(openStore).returns.resolves.toEqualTypeOf<OpenedStore>();
  expectTypeOf<OpenedStore['memory']>().toEqualTypeOf<Memory>();
  expectTypeOf<{ scope: 'thread' }>().toExtend<StoreSettings>();
  expectTypeOf<{ scope: 'tenant' }>().not.toExtend<StoreSettings>();
});

it('inspects a Memory, read-only unless edits are allowed, and serves it', () => {
  const memory = {} as Memory;
  const inspector = new Inspector({ memory });
  new Inspector({ memory, allowEdits: true, lastMessages: 20, label: 'prod' });
  // @ts-expect-error: a Memory is required
  new Inspector({ allowEdits: true });
  expectTypeOf(inspector.thread).returns.resolves.toEqualTypeOf<ThreadView>();
  expectTypeOf(startServer).returns.resolves.toEqualTypeOf<InspectorServer>();
  expectTypeOf<ThreadView['recall']>().toEqualTypeOf<{
    configured: boolean;
    reason: string;
    settings?: RecallSettings;
  }>();
  expectTypeOf(inspector.recall).parameters.toEqualTypeOf<[threadId: string, request: unknown]>();
  expectTypeOf(inspector.recall).returns.resolves.toEqualTypeOf<RecallView>();
  expectTypeOf<RecallView['hits'][number]['score']>().toEqualTypeOf<number>();
});

it("reads a thread's observation log, scoped by option", () => {
  const inspector = new Inspector({ memory: {} as Memory, observationsScope: 'resource' });
  // @ts-expect-error: a log scope is 'thread' or 'resource'
  new Inspector({ memory: {} as Memory, observationsScope: 'tenant' });
  expectTypeOf(inspector.observations).returns.resolves.toEqualTypeOf<ObservationsView>();
  expectTypeOf<ThreadView['observations']>().toEqualTypeOf<ObservationsView>();
  expectTypeOf<ObservationsView['status']>().toEqualTypeOf<'unsupported' | 'none' | 'log'>();
});
