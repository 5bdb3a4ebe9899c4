/**
 * `@engram/core`: what an application uses — `Memory`, the records and the storage contract, the
 * error type, the agent-facing processors and tools, embedders, and the in-memory reference
 * store. Adapter authors build drivers from `@engram/core/driver`.
 */

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
  OBSERVATIONS_SOURCE,
  Observations,
  type ObservedHistory,
  observedHistory,
} from './agent/observations.ts';
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
export { type PreparedTurn, type TurnRecord, turnRecord } from './agent/turn-record.ts';
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
export { MEMORY_CONFIG_KEY, type MemoryConfigRecord } from './configuration.ts';
export { isMemoryError, MemoryError, type MemoryErrorCode, type MemoryErrorOptions } from './errors.ts';
export {
  CLONE_PAGE,
  CLONED_FROM_KEY,
  type ClonedFrom,
  type CloneThreadArgs,
  type CloneThreadResult,
} from './lifecycle/clone.ts';
export type { ImportCounts, ImportOptions, OnConflict } from './lifecycle/import.ts';
export {
  type MemoryRecord,
  type MessageRecord,
  type ObservationRecord,
  parseRecord,
  RECORD_VERSION,
  type RecordKind,
  type ResourceRecord,
  type ThreadRecord,
  type TurnRecordLine,
  type VectorRecord,
} from './lifecycle/records.ts';
export {
  type AddMessageInput,
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
export { renderObservationBlock } from './observations/block.ts';
export {
  ObservationalMemory,
  type ObservationHost,
  type ObservationIssue,
  type ObservationTarget,
  type PreparedObservations,
  readRawTail,
} from './observations/engine.ts';
export {
  type Boundary,
  boundaryOf,
  type Chunk,
  compareBoundaries,
  type Entry,
  isObserved,
  type LogState,
  logTokens as observationLogTokens,
  parse as parseObservationLog,
  progressOf,
  type ThreadProgress,
} from './observations/log.ts';
export type { LanguageModelLike } from './observations/model.ts';
export {
  OBSERVATIONAL_DEFAULTS,
  type ObservationalMemoryOptions,
  type ObservationOptions,
  type ReflectionOptions,
  type ResolvedObservationalMemory,
} from './observations/options.ts';
export { TokenCounter, tokensOf } from './observations/tokens.ts';
export {
  createKeywordAnalyzer,
  DEFAULT_STOP_WORDS,
  foldText,
  type KeywordAnalyzer,
  type KeywordAnalyzerOptions,
} from './recall/analyzer.ts';
export {
  assertEmbedder,
  describeSpace,
  type EmbeddingModelLike,
  type EmbeddingUsage,
  embedderId,
  normalize,
} from './recall/embedder.ts';
export {
  DEFAULT_FUSION,
  defaultFusion,
  LEXICAL_FUSION,
  type RecallFusion,
  type RecallHit,
  type RecallMode,
  type RecallResult,
  type RecallThreshold,
  type ReindexProgress,
  type ResolvedSemanticRecall,
  RRF_K,
} from './recall/engine.ts';
export { formatRecall } from './recall/format.ts';
export {
  createLexicalEmbedder,
  type LexicalEmbedder,
  type LexicalEmbedderOptions,
} from './recall/lexical-embedder.ts';
export { messageText, textHash } from './recall/text.ts';
export type { BackfillListener, BackfillProgress } from './storage/backfill.ts';
export {
  capabilitiesOf,
  DEFAULT_CAPABILITIES,
  type ResolvedCapabilities,
  type StoreCapabilities,
} from './storage/capabilities.ts';
export type * from './storage/contract.ts';
export { requireDomain, type StoreDomains } from './storage/domains.ts';
export { InMemoryStore } from './storage/in-memory.ts';
export type { KeywordHit, KeywordSearch, KeywordStore } from './storage/keywords.ts';
export { RESOURCE_BM25 } from './storage/keywords.ts';
export type {
  ObservationRow,
  ObservationStore,
  ObservationVersion,
  SwapOptions,
} from './storage/observations.ts';
export type { ResourceDeletion } from './storage/purge.ts';
export type * from './storage/records.ts';
export { MAX_SETTING_KEY, MAX_SETTING_VALUE, type SettingsStore } from './storage/settings.ts';
export type { TurnCursor, TurnRow, TurnStore } from './storage/turns.ts';
export type * from './storage/vectors.ts';
export {
  DEFAULT_TITLE_INSTRUCTIONS,
  type ResolvedThreadTitle,
  type ThreadTitleOptions,
} from './threads/title-options.ts';
export { cleanTitle, type GeneratedTitle } from './threads/titles.ts';
export { ENGRAM_VERSION } from './version.ts';
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
export type { InvalidStoredPolicy, WorkingMemoryEdit } from './working-memory/update.ts';
