export type {
  OracleBinds,
  OracleBindValue,
  OracleConnection,
  OracleDbType,
  OracleExecuteOptions,
  OraclePool,
  OracleResult,
} from './driver.ts';
export { classify, errorCode, toMemoryError } from './errors.ts';
export { LATEST_VERSION, MIGRATIONS, type Migration, type MigrationStep } from './migrations.ts';
export type { JsonStorage } from './sql.ts';
export {
  type OracleCredentialsOptions,
  type OracleJsonType,
  type OraclePoolOptions,
  OracleStore,
  type OracleStoreBaseOptions,
  type OracleStoreOptions,
} from './store.ts';
export { type OracleConnectionConfig, parseOracleUrl } from './url.ts';
export { type OracleVectorAccess, OracleVectors } from './vectors.ts';
