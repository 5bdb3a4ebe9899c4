export {
  type DocumentView,
  Inspector,
  type MemoryInfo,
  type PromptView,
  RESOURCE_SCAN_PAGE,
  type ResourceScanStep,
  type ResourceSummary,
  SEARCH_LIMIT,
  type ThreadView,
  type ToolView,
  type WorkingMemoryEditRequest,
} from './inspector.ts';
export type {
  MessageMark,
  ObservationChunkView,
  ObservationEntryView,
  ObservationGenerationView,
  ObservationLogView,
  ObservationsRead,
  ObservationsScope,
  ObservationsView,
} from './observations.ts';
export {
  isStoreUrl,
  loadAdapter,
  type OpenedStore,
  openStore,
  redactUrl,
  StoreError,
  type StoreSettings,
} from './open.ts';
export {
  MAX_QUERY,
  type RecallHitView,
  type RecallRequest,
  type RecallSettings,
  type RecallStatus,
  type RecallView,
  type TurnRecall,
} from './recall.ts';
export {
  checkRequest,
  LOOPBACK,
  newToken,
  type Refusal,
  SECURITY_HEADERS,
  TOKEN_HEADER,
} from './security.ts';
export { type InspectorServer, type ServerOptions, startServer } from './server.ts';
