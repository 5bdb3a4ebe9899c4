/**
 * `@engram/core/driver`: what an adapter author builds a store from, and nothing an application
 * needs. A driver supplies `open`/`close`, a unit of work, small primitives per record kind, one
 * working-memory strategy and optional domains; `createStore(driver)` (or a subclass of `Store`)
 * turns it into a `MemoryStorage`, with validation, the lifecycle, error mapping and every
 * cross-cutting rule of the contract in core, once. See the core README, "The driver contract".
 */
export {
  isMemoryError,
  MemoryError,
  type MemoryErrorCode,
  type MemoryErrorOptions,
  NETWORK_ERROR_CODES,
} from './errors.ts';
export { assertStoreOptions, keysOf } from './known-keys.ts';
export {
  createKeywordAnalyzer,
  DEFAULT_STOP_WORDS,
  defaultKeywordAnalyzer,
  type KeywordAnalyzer,
  type KeywordAnalyzerOptions,
  NO_KEYWORD_INDEX,
} from './recall/analyzer.ts';
export { assertWorkingMemoryField } from './storage/arguments.ts';
export {
  type BackfillListener,
  type BackfillProgress,
  type BackfillStep,
  backfillListener,
  KEYWORD_BACKFILL,
  KEYWORD_BACKFILL_BATCH,
  runBackfill,
} from './storage/backfill.ts';
export {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  type ResolvedCapabilities,
  SERVER_CAPABILITIES,
  type StoreCapabilities,
} from './storage/capabilities.ts';
export { type ClientShape, checkClientShape } from './storage/client-shape.ts';
export type * from './storage/contract.ts';
export { copyMessage, copyResource, copyThread } from './storage/copy.ts';
export { REDACTED, redactCredentials } from './storage/credentials.ts';
export {
  type AdapterDescriptor,
  type DescriptorOptions,
  ownOptions,
  type ProvisionedStore,
} from './storage/descriptor.ts';
export {
  CASCADE_DOMAINS,
  DOMAIN_NAMES,
  DOMAINS,
  type DomainHooks,
  type DomainName,
  type DomainRunner,
  type DriverDomains,
  requireDomain,
  type StoreDomains,
} from './storage/domains.ts';
export type * from './storage/driver.ts';
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
  chunks,
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
  shallowMerge,
  sortMessages,
} from './storage/helpers.ts';
export { InMemoryStore, MemoryDriver, type MemoryTx, memoryDescriptor } from './storage/in-memory.ts';
export type * from './storage/keywords.ts';
export {
  BM25,
  bm25Score,
  compareKeywordHits,
  keywordTerms,
  MAX_QUERY_TERMS,
  queryTerms,
  RESOURCE_BM25,
  rankIndexed,
  searchIndexed,
  termCounts,
  ValidatedKeywords,
} from './storage/keywords.ts';
export {
  MESSAGE_COLUMNS,
  type PrefixedTables,
  prefixedTables,
  RECORD_TABLES,
  RESOURCE_COLUMNS,
  resourceValues,
  THREAD_COLUMNS,
  threadValues,
} from './storage/layout.ts';
export {
  type MessageRead,
  pageLimit,
  pageTotal,
  type RowCount,
  slicePage,
  type ThreadRead,
} from './storage/listing.ts';
export {
  MAX_OBSERVATION_BODY,
  type ObservationDriver,
  type ObservationRow,
  type ObservationStore,
  type ObservationVersion,
  observationKey,
  swapRows,
  ValidatedObservations,
} from './storage/observations.ts';
export {
  messageOfAnotherResource,
  ownedThread,
  threadExists,
  threadNotFound,
  threadNotOwned,
  threadOfAnotherResource,
} from './storage/ownership.ts';
export type { ResourceDeletion } from './storage/purge.ts';
export type * from './storage/records.ts';
export { backOff, RETRY, RETRY_POLICY, type RetryOptions, retry } from './storage/retry.ts';
export {
  MAX_SETTING_KEY,
  MAX_SETTING_VALUE,
  type SettingsDriver,
  type SettingsStore,
} from './storage/settings.ts';
export { createStore, Store } from './storage/store.ts';
export {
  compareTurnRows,
  isOlderThan,
  MAX_TURN_BODY,
  MAX_TURN_PAGE,
  type TurnCursor,
  type TurnDriver,
  type TurnRow,
  type TurnStore,
  ValidatedTurns,
} from './storage/turns.ts';
export { bumpedUpdatedAt, newestByThread } from './storage/updated-at.ts';
export {
  assertId,
  assertIds,
  assertJson,
  assertJsonObject,
  assertText,
  isPlainObject,
  MAX_ID_LENGTH,
  MAX_JSON_DEPTH,
  MAX_LISTING_COUNT,
  MAX_TYPE_LENGTH,
  STORED_DATES,
} from './storage/validate.ts';
export { type MatrixQuery, type MatrixRow, VectorMatrix } from './storage/vector-matrix.ts';
export {
  assertSpace,
  assertVector,
  cosine,
  MAX_DIMENSIONS,
  MAX_TOP_K,
  ValidatedVectors,
} from './storage/vector-store.ts';
export type * from './storage/vectors.ts';
export { compareHits } from './storage/vectors.ts';
export {
  type CompareAndSetWorkingMemory,
  type LeasedWorkingMemory,
  type LockedWorkingMemory,
  newVersion,
  type VersionedValue,
  type WorkingMemoryApply,
  type WorkingMemoryCell,
  type WorkingMemoryStrategy,
} from './storage/working-memory.ts';
/** A deep copy of a JSON value, cheaper than `structuredClone` for records a store returns. */
export { copyJson } from './working-memory/merge.ts';
