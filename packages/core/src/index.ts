export { readMemoryIds } from './agent/context.ts';
export {
  dropOrphanToolResults,
  type HistoryHost,
  messagesToSave,
  recallHistory,
  STRIPPED_TOOL_NAMES,
  stripWorkingMemoryToolParts,
} from './agent/history.ts';
export {
  escapeData,
  type InstructionOptions,
  renderData,
  renderTemplate,
  type WorkingMemoryToolName,
  workingMemoryInstructions,
} from './agent/instructions.ts';
export {
  assertObjectSchema,
  type JsonSchemaObject,
  PROVIDER_SAFE_RULES,
  providerSafetyViolations,
  toMergePatchSchema,
  toProviderSafeSchema,
} from './agent/json-schema-rules.ts';
export {
  insertSystemMessage,
  MEMORY_SOURCE,
  type ProcessInputArgs,
  WorkingMemory,
  type WorkingMemoryProcessorOptions,
} from './agent/processor.ts';
export { latestUserText, RECALL_SOURCE, SemanticRecall } from './agent/semantic-recall.ts';
export {
  assertStateSignalConfig,
  createStateSignal,
  latestStateSignal,
  readStateSignal,
  STATE_MESSAGE_TYPE,
  shouldEmitStateSignal,
  stateSignalMessage,
  stateSignalText,
  WORKING_MEMORY_STATE_ID,
  WorkingMemoryState,
  type WorkingMemoryStateOptions,
  type WorkingMemoryStateSignal,
  workingMemoryCacheKey,
} from './agent/state-signal.ts';
export { emptyShape } from './agent/template.ts';
export {
  createWorkingMemoryTool,
  getWorkingMemoryTools,
  type WorkingMemoryTool,
  type WorkingMemoryToolCallContext,
  type WorkingMemoryToolMode,
  type WorkingMemoryToolOptions,
  type WorkingMemoryToolResult,
  workingMemoryToolMode,
} from './agent/tool.ts';
export type {
  AgentLogger,
  AgentMessage,
  MemoryIds,
  MessageListLike,
  RequestContextLike,
  WorkingMemoryFormat,
  WorkingMemoryHost,
  WorkingMemoryTemplateProvider,
} from './agent/types.ts';
export {
  applyVNextEdit,
  isDuplicateEntry,
  normalizeEntry,
  normalizeText,
  parseVNextInput,
  VNEXT_UPDATE_REASONS,
  type VNextInput,
  type VNextOutcome,
  type VNextUpdateReason,
} from './agent/vnext.ts';
export {
  isMemoryError,
  MemoryError,
  type MemoryErrorCode,
  type MemoryErrorOptions,
  NETWORK_ERROR_CODES,
} from './errors.ts';
export {
  type HistoryArgs,
  Memory,
  type MemoryConfig,
  type MessageInput,
  type SemanticRecallArgs,
  type WorkingMemoryTarget,
  type WorkingMemoryTemplate,
  type WriteControl,
} from './memory.ts';
export {
  type MemoryOptions,
  type ResolvedMemoryOptions,
  resolveMemoryOptions,
  SEMANTIC_RECALL_DEFAULTS,
  type SemanticRecallOptions,
  type WorkingMemoryOptions,
} from './memory-options.ts';
export {
  assertEmbedder,
  describeSpace,
  type EmbeddingModelLike,
  type EmbeddingUsage,
  embedderId,
  normalize,
} from './recall/embedder.ts';
export type { RecallHit, RecallResult, ReindexProgress, ResolvedSemanticRecall } from './recall/engine.ts';
export { formatRecall } from './recall/format.ts';
export {
  createLexicalEmbedder,
  type LexicalEmbedder,
  type LexicalEmbedderOptions,
} from './recall/lexical-embedder.ts';
export { messageText, textHash } from './recall/text.ts';
export {
  type NormalizedAtomicUpdate,
  type NormalizedInclude,
  type NormalizedListMessages,
  type NormalizedListThreads,
  StoreBase,
} from './storage/base.ts';
export {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  type ResolvedCapabilities,
  type StoreCapabilities,
} from './storage/capabilities.ts';
export { type ClientShape, checkClientShape } from './storage/client-shape.ts';
export type * from './storage/contract.ts';
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
export { InMemoryStore } from './storage/in-memory.ts';
export { InMemoryVectors } from './storage/in-memory-vectors.ts';
export { StoreLifecycle, storeClosedError } from './storage/lifecycle.ts';
export { messageOfAnotherResource, threadExists, threadOfAnotherResource } from './storage/ownership.ts';
export type * from './storage/records.ts';
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
export { FallbackLock, fallbackLockFor } from './working-memory/fallback-lock.ts';
export {
  compileJsonSchema,
  type JsonSchema,
  type JsonSchemaValidator,
} from './working-memory/json-schema.ts';
export type { WorkingMemoryEdit } from './working-memory/location.ts';
export { copyJson, mergeWorkingMemory, parsePatch, parseStored } from './working-memory/merge.ts';
export {
  isStandardSchema,
  type ResolvedSchema,
  resolveSchema,
  type SchemaCheck,
  type SchemaSource,
} from './working-memory/schema.ts';
export { defaultWorkingMemoryTemplate } from './working-memory/template.ts';
