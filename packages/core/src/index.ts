export { isMemoryError, MemoryError, type MemoryErrorCode, type MemoryErrorOptions } from './errors.ts';
export {
  type NormalizedAtomicUpdate,
  type NormalizedInclude,
  type NormalizedListMessages,
  type NormalizedListThreads,
  StoreBase,
} from './storage/base.ts';
export type * from './storage/contract.ts';
export {
  compareIds,
  compareMessages,
  defineKey,
  inDateRange,
  jsonEqual,
  matchesMetadata,
  mergeMessageLists,
  pageInfo,
  pageOffset,
  RETRY,
  type RetryOptions,
  retryOptimistic,
  shallowMerge,
  sortMessages,
} from './storage/helpers.ts';
export { InMemoryStore } from './storage/in-memory.ts';
export type * from './storage/records.ts';
export {
  assertId,
  assertIds,
  assertJson,
  assertJsonObject,
  isPlainObject,
  MAX_ID_LENGTH,
} from './storage/validate.ts';
