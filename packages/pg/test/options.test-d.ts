import type { MemoryStorage } from '@engram/core';
import type pg from 'pg';
import { expectTypeOf, it } from 'vitest';
import { PostgresStore, type PostgresStoreOptions } from '../src/index.ts';

// Locks the public API types; checked by `pnpm typecheck` and by vitest's typecheck mode.

it('takes a connection string or a pool, never both, never neither', () => {
  expectTypeOf<{ connectionString: string }>().toExtend<PostgresStoreOptions>();
  expectTypeOf<{ pool: pg.Pool; schemaName: string; tablePrefix: string }>().toExtend<PostgresStoreOptions>();
  expectTypeOf<{ connectionString: string; pool: pg.Pool }>().not.toExtend<PostgresStoreOptions>();
  expectTypeOf<{ schemaName: string }>().not.toExtend<PostgresStoreOptions>();
  const pool = {} as pg.Pool;
  // @ts-expect-error: both connection sources
  new PostgresStore({ connectionString: 'postgres://x', pool });
  // @ts-expect-error: connectTimeoutMs is a number of milliseconds
  new PostgresStore({ connectionString: 'postgres://x', connectTimeoutMs: '5s' });
});

it('is a MemoryStorage that declares atomic working-memory merges', () => {
  expectTypeOf<PostgresStore>().toExtend<MemoryStorage>();
  expectTypeOf<PostgresStore['capabilities']['atomicWorkingMemory']>().toEqualTypeOf<true>();
  expectTypeOf<PostgresStore['capabilities']['transactionalBatches']>().toEqualTypeOf<true>();
  expectTypeOf<PostgresStore['name']>().toEqualTypeOf<'pg'>();
  expectTypeOf(PostgresStore).constructorParameters.toEqualTypeOf<[PostgresStoreOptions]>();
});
