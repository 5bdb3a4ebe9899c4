import type { MemoryStorage } from '@engram/core';
import { expectTypeOf } from 'vitest';
import {
  type AreaName,
  type CheckResult,
  type ConformanceInit,
  concurrencySuite,
  type FreshStore,
  runChecks,
  runConformance,
} from '../src/index.ts';

// The initializer adapters code against.
expectTypeOf<ConformanceInit>().toEqualTypeOf<{
  name: string;
  create: () => MemoryStorage | Promise<MemoryStorage>;
  destroy?: (store: MemoryStorage) => void | Promise<void>;
  worker?: URL | string;
  fresh?: () => FreshStore | Promise<FreshStore>;
  breakConnection?: (store: MemoryStorage) => void | Promise<void>;
  leaseMs?: number;
  withSecret?: (secret: string) => Record<string, () => MemoryStorage | Promise<MemoryStorage>>;
  storedRows?: (store: MemoryStorage) => Promise<string[]>;
  processes?: number;
  skip?: string | boolean;
}>();

expectTypeOf<FreshStore>().toEqualTypeOf<{
  env: Record<string, string>;
  create: () => MemoryStorage | Promise<MemoryStorage>;
  drop?: () => void | Promise<void>;
  createWithoutKeywords?: () => MemoryStorage | Promise<MemoryStorage>;
}>();

expectTypeOf(runConformance).parameters.toEqualTypeOf<[ConformanceInit]>();
expectTypeOf(runConformance).returns.toBeVoid();
expectTypeOf(concurrencySuite).parameters.toEqualTypeOf<[ConformanceInit]>();
expectTypeOf(runChecks).returns.resolves.toEqualTypeOf<CheckResult[]>();
expectTypeOf<CheckResult['status']>().toEqualTypeOf<'pass' | 'fail' | 'skip'>();
expectTypeOf<AreaName>().toEqualTypeOf<
  | 'lifecycle'
  | 'records'
  | 'threads'
  | 'clone'
  | 'messages'
  | 'resources'
  | 'working-memory'
  | 'concurrency'
  | 'isolation'
  | 'errors'
  | 'differential'
  | 'recall'
  | 'observations'
  | 'turns'
  | 'purge'
  | 'settings'
>();
