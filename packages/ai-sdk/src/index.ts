export type { TurnResult } from './ai-versions.ts';
export { fromModelMessage, PARTS_MESSAGE_TYPE, toModelMessages } from './messages.ts';
export {
  type MemoryCall,
  type MemoryPrepareStep,
  type MemoryStep,
  type MemoryStepOptions,
  memoryStep,
  type WorkingMemoryToolSet,
} from './step.ts';
export { toAISDKTool, workingMemoryTools } from './tool.ts';
