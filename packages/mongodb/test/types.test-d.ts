import type { MemoryStorage, StoreCapabilities } from '@engram/core';
import type { MongoClient } from 'mongodb';
import { expectTypeOf } from 'vitest';
import { MongoDBStore, type MongoDBStoreOptions } from '../src/index.ts';

// Locks the public API types; checked by `pnpm typecheck`.
expectTypeOf<MongoDBStore>().toMatchTypeOf<MemoryStorage>();
expectTypeOf<{ url: string; dbName: string }>().toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<{
  client: MongoClient;
  dbName: string;
  collectionPrefix: string;
}>().toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<{
  url: string;
  dbName: string;
  serverSelectionTimeoutMS: number;
  transactions: 'never';
  writeLocks: 'always';
  lockLeaseMs: number;
}>().toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<{ url: string }>().not.toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<{ client: MongoClient; url: string; dbName: string }>().not.toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<{
  url: string;
  dbName: string;
  writeLocks: 'sometimes';
}>().not.toMatchTypeOf<MongoDBStoreOptions>();
expectTypeOf<MongoDBStore['capabilities']>().toEqualTypeOf<StoreCapabilities>();
expectTypeOf<MongoDBStore['client']>().toEqualTypeOf<MongoClient>();
expectTypeOf(MongoDBStore).constructorParameters.toEqualTypeOf<[MongoDBStoreOptions]>();
