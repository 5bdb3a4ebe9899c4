import type { MemoryStorage } from '@engram/core';
import type pg from 'pg';
import { expectTypeOf } from 'vitest';
import { PostgresStore, type PostgresStoreOptions } from '../src/index.ts';

declare const pool: pg.Pool;

// A connection string or a pool, never both, never neither.
expectTypeOf<{ connectionString: string }>().toExtend<PostgresStoreOptions>();
expectTypeOf<{ pool: pg.Pool; schemaName: string; tablePrefix: string }>().toExtend<PostgresStoreOptions>();
expectTypeOf<{ connectionString: string; pool: pg.Pool }>().not.toExtend<PostgresStoreOptions>();
expectTypeOf<{ schemaName: string }>().not.toExtend<PostgresStoreOptions>();

// @ts-expect-error: both connection sources
new PostgresStore({ connectionString: 'postgres://x', pool });
// @ts-expect-error: connectTimeoutMs is a number of milliseconds
new PostgresStore({ connectionString: 'postgres://x', connectTimeoutMs: '5s' });

// The store is a MemoryStorage that declares atomic working-memory merges.
expectTypeOf<PostgresStore>().toExtend<MemoryStorage>();
expectTypeOf<PostgresStore['supportsAtomicWorkingMemoryMerge']>().toEqualTypeOf<true>();
expectTypeOf<PostgresStore['name']>().toEqualTypeOf<'pg'>();
