import type { Check } from '../types.ts';
import { cloneChecks } from './clone.ts';
import { concurrencyChecks } from './concurrency.ts';
import { differentialChecks } from './differential.ts';
import { errorsChecks } from './errors.ts';
import { isolationChecks } from './isolation.ts';
import { keywordRecallChecks } from './keyword-recall.ts';
import { lifecycleChecks } from './lifecycle.ts';
import { messagesChecks } from './messages.ts';
import { observationsChecks } from './observations.ts';
import { purgeChecks } from './purge.ts';
import { recallChecks } from './recall.ts';
import { recordsChecks } from './records.ts';
import { resourcesChecks } from './resources.ts';
import { settingsChecks } from './settings.ts';
import { threadsChecks } from './threads.ts';
import { turnsChecks } from './turns.ts';
import { workingMemoryChecks } from './working-memory.ts';

export {
  cloneChecks,
  concurrencyChecks,
  differentialChecks,
  errorsChecks,
  isolationChecks,
  keywordRecallChecks,
  lifecycleChecks,
  messagesChecks,
  observationsChecks,
  purgeChecks,
  recallChecks,
  recordsChecks,
  resourcesChecks,
  settingsChecks,
  threadsChecks,
  turnsChecks,
  workingMemoryChecks,
};

/** Every check of the suite, in area order. */
export const CHECKS: readonly Check[] = [
  ...lifecycleChecks,
  ...recordsChecks,
  ...threadsChecks,
  ...cloneChecks,
  ...messagesChecks,
  ...resourcesChecks,
  ...workingMemoryChecks,
  ...concurrencyChecks,
  ...isolationChecks,
  ...errorsChecks,
  ...differentialChecks,
  ...recallChecks,
  ...keywordRecallChecks,
  ...observationsChecks,
  ...turnsChecks,
  ...purgeChecks,
  ...settingsChecks,
];
