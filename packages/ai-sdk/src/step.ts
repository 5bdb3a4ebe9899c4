import {
  type AgentMessage,
  assertStateSignalConfig,
  formatRecall,
  isMemoryError,
  latestUserText,
  type Memory,
  MemoryError,
  type Message,
  messagesToSave,
  type ObservedHistory,
  observedHistory,
  type RecallResult,
  recallHistory,
  stateSignalText,
  WorkingMemory,
  type WorkingMemoryScope,
  WorkingMemoryState,
} from '@engram/core';
import { ownedThread } from '@engram/core/driver';
import type { ModelMessage, Tool, ToolSet } from 'ai';
import { responseMessages, type StepMessages, stepBaseMessages, type TurnResult } from './ai-versions.ts';
import { fromModelMessage, toModelMessages } from './messages.ts';
import { workingMemoryTools } from './tool.ts';

export interface MemoryStepOptions<TOOLS extends ToolSet = Record<never, never>> {
  memory: Memory;
  /**
   * Your own tools, offered next to the working-memory tool in `call.tools` with their types
   * intact. A name the memory tool uses (`updateWorkingMemory`, `setWorkingMemory`) is refused.
   */
  tools?: TOOLS;
  /** The conversation. Created for `resourceId` when it does not exist yet. */
  threadId: string;
  /** The user or tenant; the thread must belong to it. */
  resourceId: string;
  /** This turn's input: a user message as text, or AI SDK messages. */
  input: string | ModelMessage[];
  /** Your own system prompt; the working-memory text is appended to it. */
  instructions?: string;
  /** Show the working memory but offer no tool and write nothing to it. */
  readOnly?: boolean;
  /** How many history messages to include (default: the memory's `lastMessages`). */
  lastMessages?: number | false;
  /** Title of the thread when it is created. */
  threadTitle?: string;
}

/**
 * The working-memory tools in `MemoryCall.tools`. At run time only the one offered is there:
 * `updateWorkingMemory`, or `setWorkingMemory` under state signals, or neither when working
 * memory is disabled or read-only. Both are typed, as present, so that the AI SDK types the
 * call's tool calls with them and without `undefined` entries. (A type alias, not an interface,
 * so that it is assignable to the AI SDK's `ToolSet`.)
 */
export type WorkingMemoryToolSet = {
  updateWorkingMemory: Tool<unknown, unknown>;
  setWorkingMemory: Tool<unknown, unknown>;
};

/**
 * The `prepareStep` of a memory call. It reads only the tool names of earlier steps and the
 * messages, and returns only `messages`, so it fits `generateText` / `streamText` of `ai` 6 and
 * `ai` 7 whatever tools the call has.
 */
export type MemoryPrepareStep = (
  options: StepMessages & { steps: ReadonlyArray<{ toolCalls: ReadonlyArray<{ toolName: string }> }> },
) => Promise<{ messages: ModelMessage[] } | undefined>;

/** What to spread into `generateText` / `streamText`. */
export interface MemoryCall<TOOLS extends ToolSet = Record<never, never>> {
  /** `instructions` plus the working-memory system message (guidance, template, data). */
  system: string | undefined;
  /** Recent history, a working-memory state signal when one is due, and this turn's input. */
  messages: ModelMessage[];
  /**
   * The working-memory tool, when one is offered, and the `tools` you passed to `memoryStep`.
   * Or add your own next to it: `tools: { ...step.call.tools, getWeather }`.
   */
  tools: TOOLS & WorkingMemoryToolSet;
  /**
   * Only under state signals: once `setWorkingMemory` has run in this call, each later step gets
   * the current memory as a fresh signal at the end of its messages, so the model works with
   * the value it just wrote. (If you pass your own `prepareStep`, call this one from it.)
   */
  prepareStep?: MemoryPrepareStep;
}

/** One prepared turn: the call arguments, and `save` for after the model answered. */
export interface MemoryStep<TOOLS extends ToolSet = Record<never, never>> {
  call: MemoryCall<TOOLS>;
  /**
   * Saves this turn to the thread: the input, any state signal, and the response messages.
   * Pass the `generateText` or `streamText` result (on `ai` 7 `result.response` holds only the
   * last step), the awaited `response` of an `ai` 6 `streamText`, or the response messages.
   * System messages and working-memory tool calls are dropped. Returns the saved messages.
   */
  save(result: TurnResult): Promise<Message[]>;
  /**
   * With `options.semanticRecall`: what was recalled for this turn (hits with their windows,
   * and the embedding tokens the query cost). `undefined` when recall is off.
   */
  recall?: RecallResult;
  /**
   * With `options.observationalMemory`: the turn's observations (generation, token counts of the
   * log and of the raw tail shown instead of the last messages). `undefined` when it is off.
   */
  observations?: Omit<ObservedHistory, 'history' | 'tail'>;
}

/**
 * Makes sure the thread exists and belongs to `resourceId`, before any model call: a thread of
 * another resource is `INVALID_ARGUMENT` (core's `ownedThread`, the rule of every call taking both ids). A missing thread is created atomically; when another
 * call creates the same id first, that is fine for the same resource and `CONFLICT` for another.
 */
async function ensureThread(options: MemoryStepOptions<ToolSet>): Promise<void> {
  const { memory, threadId, resourceId } = options;
  if (await ownedThread(memory, 'memoryStep', threadId, resourceId)) return;
  try {
    await memory.createThread({ threadId, resourceId, title: options.threadTitle });
  } catch (error) {
    if (!isMemoryError(error, 'CONFLICT')) throw error;
    const created = await memory.getThreadById({ threadId, resourceId });
    if (!created) {
      throw new MemoryError(
        'CONFLICT',
        `thread ${JSON.stringify(threadId)} was just created by another resource than ${JSON.stringify(resourceId)}; nothing was sent to the model`,
        { cause: error },
      );
    }
  }
}

const MEMORY_TOOL_NAMES = ['updateWorkingMemory', 'setWorkingMemory'];

function ownToolsOf<TOOLS extends ToolSet>(tools: TOOLS | undefined): TOOLS | undefined {
  if (tools === undefined) return undefined;
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw new MemoryError('INVALID_ARGUMENT', 'tools must be an object of AI SDK tools');
  }
  const taken = Object.keys(tools).filter((name) => MEMORY_TOOL_NAMES.includes(name));
  if (taken.length > 0) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `tools must not use the working-memory tool's name ${JSON.stringify(taken[0])}`,
    );
  }
  return tools;
}

function inputMessages(input: string | ModelMessage[]): ModelMessage[] {
  if (typeof input === 'string') {
    if (input.trim() === '') throw new MemoryError('INVALID_ARGUMENT', 'input must not be empty');
    return [{ role: 'user', content: input }];
  }
  if (!Array.isArray(input) || input.length === 0) {
    throw new MemoryError('INVALID_ARGUMENT', 'input must be a string or a non-empty array of messages');
  }
  return input;
}

/**
 * Prepares one turn of a conversation with memory for the AI SDK:
 *
 * ```ts
 * const step = await memoryStep({ memory, threadId, resourceId, input: 'Hi, I am Sam' });
 * const result = await generateText({ model, ...step.call, stopWhen: stepCountIs(5) });
 * await step.save(result);
 * ```
 *
 * It creates the thread when missing, recalls the newest `lastMessages` messages, adds
 * semantically recalled messages to `system` when `options.semanticRecall` is on (hits from other
 * threads labelled with their thread), adds the working memory (as part of `system`, or as a state signal under `useStateSignals`) and offers
 * the working-memory tool unless read-only.
 */
export async function memoryStep<TOOLS extends ToolSet = Record<never, never>>(
  options: MemoryStepOptions<TOOLS>,
): Promise<MemoryStep<TOOLS>> {
  const { memory, threadId, resourceId } = options;
  assertStateSignalConfig(memory);
  const ownTools = ownToolsOf(options.tools);
  const input = inputMessages(options.input);
  await ensureThread(options);
  const config = memory.options.workingMemory;
  const om = memory.options.observationalMemory;
  // Under observational memory with manageWorkingMemory the Observer keeps the working memory:
  // the model reads it and gets no tool.
  const readOnly =
    options.readOnly === true || memory.options.readOnly || (om !== false && om.manageWorkingMemory);
  const requestContext = { threadId, resourceId };
  const preparedAt = new Date();

  const observed = await observedHistory(memory, requestContext);
  const history =
    observed?.history ?? (await recallHistory(memory, { threadId, resourceId, last: options.lastMessages }));
  const inputAsAgent: AgentMessage[] = input.map((m) => ({ ...fromModelMessage(m, requestContext) }));
  let conversation: AgentMessage[] = [...history, ...inputAsAgent];
  let system = [options.instructions?.trim(), observed?.block].filter(Boolean).join('\n\n') || undefined;

  let recall: RecallResult | undefined;
  if (memory.options.semanticRecall) {
    const query = latestUserText(input.map((m) => ({ role: m.role, content: m.content as never })));
    if (query !== '') {
      recall = await memory.recall({ threadId, resourceId, query, last: options.lastMessages });
      system = [system, formatRecall(recall.hits, threadId)].filter(Boolean).join('\n\n') || undefined;
    }
  }

  let prepareStep: MemoryPrepareStep | undefined;
  let shownMemory: { scope: WorkingMemoryScope; text: string | null } | undefined;
  if (config.enabled) {
    const processor = WorkingMemory.fromMemory(memory, { readOnly });
    const memoryMessage = await processor.buildMessage(requestContext);
    if (memory.options.turnRecords) {
      shownMemory = { scope: config.scope, text: await memory.getWorkingMemory({ threadId, resourceId }) };
    }
    system = [system, memoryMessage.content as string].filter(Boolean).join('\n\n');
    if (config.useStateSignals && !readOnly) {
      const state = new WorkingMemoryState({
        storage: memory.storage,
        scope: config.scope,
        templateProvider: memory,
      });
      conversation = await state.processInput({ messages: conversation, requestContext });
      prepareStep = async (step) => {
        const wrote = step.steps.some((s) =>
          s.toolCalls.some((call) => call.toolName === 'setWorkingMemory'),
        );
        if (!wrote) return undefined;
        const signal = await state.snapshot(requestContext);
        return { messages: [...stepBaseMessages(step), { role: 'user', content: stateSignalText(signal) }] };
      };
    }
  }
  const turnStart = history.length;
  const turn = conversation.slice(turnStart);
  const tools = { ...ownTools, ...(await workingMemoryTools(memory, { threadId, resourceId, readOnly })) };

  // A turn record failing to write leaves the saved messages as they are: reported, not thrown.
  const turnRecord = async (saved: Message[]): Promise<void> => {
    if (!memory.options.turnRecords) return;
    const mode = memory.recallMode;
    await memory
      .recordTurn(
        {
          threadId,
          resourceId,
          createdAt: preparedAt,
          system,
          history,
          input: turn,
          recall: recall && mode ? { mode, result: recall } : undefined,
          workingMemory: shownMemory,
          observations: observed,
        },
        saved,
      )
      .catch((error: unknown) =>
        console.warn('engram: the turn record was not written; the turn is saved', error),
      );
  };

  const save: MemoryStep<TOOLS>['save'] = async (result) => {
    const response = await responseMessages(result);
    const responseAsAgent = response.map((m) => fromModelMessage(m, requestContext));
    const toSave = messagesToSave([...turn, ...responseAsAgent]).map((m) => ({
      threadId,
      resourceId,
      role: m.role,
      content: m.content,
      type: m.type,
    }));
    if (toSave.length === 0) return [];
    const saved = await memory.saveMessages({ messages: toSave });
    await turnRecord(saved);
    return saved;
  };

  const call: MemoryCall<TOOLS> = {
    system,
    messages: toModelMessages(conversation),
    tools: tools as TOOLS & WorkingMemoryToolSet,
  };
  if (prepareStep) call.prepareStep = prepareStep;
  const step: MemoryStep<TOOLS> = { call, save };
  if (recall) step.recall = recall;
  if (observed) {
    const { history: _history, tail: _tail, ...summary } = observed;
    step.observations = summary;
  }
  return step;
}
