export { LibSQLDriver } from './driver.ts';
export { isBusyError } from './errors.ts';
export { MIGRATIONS, type Migration, SCHEMA_VERSION } from './migrations.ts';
export { TABLES } from './sql.ts';
export { DEFAULT_BUSY_TIMEOUT_MS, LibSQLStore, type LibSQLStoreOptions } from './store.ts';
export { DEFAULT_OVER_FETCH, type LibSQLVectorOptions } from './vectors.ts';
