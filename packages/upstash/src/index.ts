export { UpstashDriver, type UpstashTx } from './driver.ts';
export type { UpstashKeywords } from './keywords.ts';
export { encodeId, Keys, LAYOUT_VERSION } from './layout.ts';
export type { UpstashObservations } from './observations.ts';
export { UpstashStore, type UpstashStoreOptions } from './store.ts';
export type { UpstashTurns } from './turns.ts';
export { DEFAULT_VECTOR_SCAN_LIMIT, type UpstashVectors } from './vectors.ts';
