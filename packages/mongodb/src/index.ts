export { collectionNames } from './collections.ts';
export { MongoDBDriver } from './driver.ts';
export { decodeKey, encodeKey } from './encoding.ts';
export { LATEST_VERSION } from './migrations.ts';
export { type MongoDBConnectionOptions, MongoDBStore, type MongoDBStoreOptions } from './store.ts';
