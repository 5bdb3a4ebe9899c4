export { PostgresDriver, type PostgresTx } from './driver.ts';
export { LATEST_VERSION } from './migrations.ts';
export type { PostgresConnectionOptions, PostgresStoreOptions } from './options.ts';
export { PostgresStore } from './store.ts';
export { type PostgresVectorOptions, PostgresVectors, type VectorBackend } from './vectors.ts';
