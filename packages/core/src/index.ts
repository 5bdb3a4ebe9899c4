export { isMemoryError, MemoryError, type MemoryErrorCode, type MemoryErrorOptions } from './errors.ts';
export {
  Memory,
  type MemoryConfig,
  type MessageInput,
  type WorkingMemoryTarget,
  type WorkingMemoryTemplate,
  type WriteControl,
} from './memory.ts';
export {
  type MemoryOptions,
  type ResolvedMemoryOptions,
  resolveMemoryOptions,
  type SemanticRecallOptions,
  type WorkingMemoryOptions,
} from './memory-options.ts';
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
export { FallbackLock, fallbackLockFor } from './working-memory/fallback-lock.ts';
export {
  compileJsonSchema,
  type JsonSchema,
  type JsonSchemaValidator,
} from './working-memory/json-schema.ts';
export { mergeWorkingMemory, parsePatch, parseStored } from './working-memory/merge.ts';
export {
  isStandardSchema,
  type ResolvedSchema,
  resolveSchema,
  type SchemaCheck,
  type SchemaSource,
} from './working-memory/schema.ts';
export { defaultWorkingMemoryTemplate } from './working-memory/template.ts';
