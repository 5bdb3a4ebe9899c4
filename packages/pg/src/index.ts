export { LATEST_VERSION } from './migrations.ts';
export { type PostgresConnectionOptions, PostgresStore, type PostgresStoreOptions } from './store.ts';
