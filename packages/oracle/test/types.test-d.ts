import type { MemoryStorage } from '@engram/core';
import { expectTypeOf } from 'vitest';
import {
  type OracleConnectionConfig,
  type OraclePool,
  OracleStore,
  type OracleStoreOptions,
  parseOracleUrl,
} from '../src/index.ts';

// Locks the public API types; checked by `pnpm typecheck`.
expectTypeOf<OracleStore>().toMatchTypeOf<MemoryStorage>();
expectTypeOf<OracleStore['capabilities']['atomicWorkingMemory']>().toEqualTypeOf<true>();
expectTypeOf<OracleStore['capabilities']['transactionalBatches']>().toEqualTypeOf<true>();
expectTypeOf<{ user: string; password: string; connectString: string }>().toMatchTypeOf<OracleStoreOptions>();
expectTypeOf<{
  user: string;
  password: string;
  connectString: string;
  tablePrefix: string;
  jsonType: 'clob';
  poolAttributes: { poolMax: number };
}>().toMatchTypeOf<OracleStoreOptions>();
expectTypeOf<{ pool: OraclePool; jsonType: 'auto' }>().toMatchTypeOf<OracleStoreOptions>();
expectTypeOf<{ user: string; password: string }>().not.toMatchTypeOf<OracleStoreOptions>();
expectTypeOf<{ pool: OraclePool; jsonType: 'blob' }>().not.toMatchTypeOf<OracleStoreOptions>();
expectTypeOf(parseOracleUrl).returns.toEqualTypeOf<OracleConnectionConfig>();
expectTypeOf<OracleConnectionConfig>().toMatchTypeOf<OracleStoreOptions>();
expectTypeOf(OracleStore).constructorParameters.toEqualTypeOf<[OracleStoreOptions]>();
