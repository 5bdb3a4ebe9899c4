export { encodeId, Keys } from './keys.ts';
export { LAYOUT_VERSION } from './migrations.ts';
export { UpstashStore, type UpstashStoreOptions } from './store.ts';
export { DEFAULT_VECTOR_SCAN_LIMIT, UpstashVectors } from './vectors.ts';
