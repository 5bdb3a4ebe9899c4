export { OracleDriver } from './driver.ts';
export { LATEST_VERSION, MIGRATIONS, type Migration, type MigrationStep } from './migrations.ts';
export type * from './oracledb.ts';
export type { JsonStorage } from './sql.ts';
export * from './store.ts';
export * from './url.ts';
