export { NEEDS_KEYWORDS } from './areas/keyword-recall.ts';
export { NEEDS_OBSERVATIONS } from './areas/observations.ts';
export { NEEDS_VECTORS } from './areas/recall.ts';
export { NEEDS_SETTINGS } from './areas/settings.ts';
export { NEEDS_TURNS } from './areas/turns.ts';
export { observingMemory } from './concurrency/tasks.ts';
export { conformanceModel, expectObservedOrInTail, observedContent, observedIds } from './observer.ts';
export { type AreaResult, formatTable, summarize } from './report.ts';
export { checksOf, type RunOptions, runCheck, runChecks, suiteSkipReason } from './run.ts';
export { missingService, requiredServices, type Service, service } from './services.ts';
export { SkipCheck, skipCheck } from './skip.ts';
export {
  AREA_TITLES,
  AREAS,
  type AreaName,
  type Check,
  type CheckContext,
  type CheckResult,
  type ConformanceInit,
  type FreshStore,
} from './types.ts';
export { conformanceEmbedder, SPACE as CONFORMANCE_SPACE } from './vectors.ts';
export {
  areasSuite,
  cloneSuite,
  concurrencySuite,
  describeService,
  differentialSuite,
  errorsSuite,
  isolationSuite,
  lifecycleSuite,
  messagesSuite,
  purgeSuite,
  recallSuite,
  recordsSuite,
  resourcesSuite,
  runConformance,
  settingsSuite,
  threadsSuite,
  workingMemorySuite,
} from './vitest.ts';
