/**
 * `@engram/core/adapter`: what an adapter author builds a store from, and nothing an
 * application needs. A store extends `StoreBase` (and `VectorStoreBase` for semantic recall),
 * supplies the primitives its database does well (a working-memory strategy, a read of a message
 * page with its total and include windows, a read of a thread page) and lets core compose the
 * operations, validate arguments, map errors and run the lifecycle. See the README's
 * "For adapter authors".
 */
export {
  isMemoryError,
  MemoryError,
  type MemoryErrorCode,
  type MemoryErrorOptions,
  NETWORK_ERROR_CODES,
} from './errors.ts';
export {
  assertWorkingMemoryField,
  type NormalizedAtomicUpdate,
  type NormalizedInclude,
  type NormalizedListMessages,
  type NormalizedListThreads,
  type NormalizedUpdateThread,
  StoreBase,
} from './storage/base.ts';
export {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  type ResolvedCapabilities,
  SERVER_CAPABILITIES,
  type StoreCapabilities,
} from './storage/capabilities.ts';
export { type ClientShape, checkClientShape } from './storage/client-shape.ts';
export type * from './storage/contract.ts';
export { REDACTED, redactCredentials } from './storage/credentials.ts';
export { redactDriverError } from './storage/driver-error.ts';
export {
  createErrorMapper,
  driverCode,
  driverCodes,
  driverMessage,
  type ErrorMapper,
  type ErrorMapperOptions,
  hasNetworkCode,
} from './storage/errors.ts';
export {
  compareIds,
  compareMessages,
  defineKey,
  inDateRange,
  jsonEqual,
  type MessageCountChange,
  MessageCountChanges,
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
export {
  MESSAGE_COLUMNS,
  type PrefixedTables,
  prefixedTables,
  RECORD_TABLES,
  RESOURCE_COLUMNS,
  resourceValues,
  storedMessage,
  THREAD_COLUMNS,
  threadValues,
} from './storage/layout.ts';
export { StoreLifecycle, storeClosedError } from './storage/lifecycle.ts';
export {
  type MessageRead,
  pageLimit,
  pageTotal,
  type RowCount,
  slicePage,
  type ThreadRead,
} from './storage/listing.ts';
export {
  messageOfAnotherResource,
  ownedThread,
  threadExists,
  threadNotFound,
  threadNotOwned,
  threadOfAnotherResource,
} from './storage/ownership.ts';
export type * from './storage/records.ts';
export { bumpedUpdatedAt, newestByThread } from './storage/updated-at.ts';
export {
  assertId,
  assertIds,
  assertJson,
  assertJsonObject,
  assertText,
  isPlainObject,
  MAX_ID_LENGTH,
  MAX_LISTING_COUNT,
} from './storage/validate.ts';
export {
  assertSpace,
  assertVector,
  cosine,
  MAX_DIMENSIONS,
  MAX_TOP_K,
  type VectorRunner,
  VectorStoreBase,
} from './storage/vector-base.ts';
export type * from './storage/vectors.ts';
export { compareHits } from './storage/vectors.ts';
export {
  type CompareAndSetWorkingMemory,
  type LockedWorkingMemory,
  newVersion,
  type VersionedValue,
  type WorkingMemoryApply,
  type WorkingMemoryCell,
  type WorkingMemoryStrategy,
} from './storage/working-memory-strategy.ts';
/** A deep copy of a JSON value, cheaper than `structuredClone` for records a store returns. */
export { copyJson } from './working-memory/merge.ts';
