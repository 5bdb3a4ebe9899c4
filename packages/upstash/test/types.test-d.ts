import type { MemoryStorage } from '@engram/core';
import type { Redis } from '@upstash/redis';
import { expectTypeOf } from 'vitest';
import type { Bridge, BridgeOptions } from '../src/bridge/index.ts';
import { UpstashStore, type UpstashStoreOptions } from '../src/index.ts';

// Locks the public API types; checked by `pnpm typecheck`.
expectTypeOf<UpstashStore>().toMatchTypeOf<MemoryStorage>();
expectTypeOf<{ url: string; token: string }>().toMatchTypeOf<UpstashStoreOptions>();
expectTypeOf<{
  url: string;
  token: string;
  prefix: string;
  retry: false;
}>().toMatchTypeOf<UpstashStoreOptions>();
expectTypeOf<{
  client: Redis;
  prefix: string;
  vectorScanLimit: number;
}>().toMatchTypeOf<UpstashStoreOptions>();
expectTypeOf<{ url: string }>().not.toMatchTypeOf<UpstashStoreOptions>();
expectTypeOf<{ client: Redis; url: string; token: string }>().not.toMatchTypeOf<UpstashStoreOptions>();
expectTypeOf<UpstashStore['capabilities']['atomicWorkingMemory']>().toEqualTypeOf<true>();
expectTypeOf<UpstashStore['capabilities']['transactionalBatches']>().toEqualTypeOf<true>();
expectTypeOf<BridgeOptions>().toMatchTypeOf<{ redisUrl: string; token: string; port?: number }>();
expectTypeOf<Bridge['close']>().toEqualTypeOf<() => Promise<void>>();
expectTypeOf(UpstashStore).constructorParameters.toEqualTypeOf<[UpstashStoreOptions]>();
