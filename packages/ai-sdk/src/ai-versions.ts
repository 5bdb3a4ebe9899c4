import { MemoryError } from '@engram/core';
import type { ModelMessage } from 'ai';

/*
 * What differs between `ai` 6 and `ai` 7 for this package, in one place:
 * - ai 7 no longer accumulates `response.messages` over the steps of a call: the result's
 *   `response` (and each `step.response`) holds one step's messages, and the whole turn is in
 *   `responseMessages` (a promise on `streamText` results).
 * - ai 7 carries a `messages` override returned from `prepareStep` forward to later steps;
 *   ai 6 applied it to the one step only.
 */

type Awaitable<T> = T | PromiseLike<T>;

/**
 * What `save` accepts: a `generateText` or `streamText` result (either major), the awaited
 * `response` of an ai 6 `streamText`, or the response messages themselves.
 */
export type TurnResult =
  | { responseMessages: Awaitable<ModelMessage[]> }
  | { response: Awaitable<{ messages: ModelMessage[] }> }
  | { messages: ModelMessage[] }
  | ModelMessage[];

/** The messages a model call added to the conversation, from any `TurnResult`. */
export async function responseMessages(result: TurnResult): Promise<ModelMessage[]> {
  if (Array.isArray(result)) return result;
  if (result && typeof result === 'object') {
    // ai 7: `response` is the final step only; `responseMessages` is the whole turn.
    if ('responseMessages' in result) {
      const messages = await result.responseMessages;
      if (Array.isArray(messages)) return messages;
    } else if ('response' in result) {
      const response = await result.response;
      if (Array.isArray(response?.messages)) return response.messages;
    } else if ('messages' in result && Array.isArray(result.messages)) {
      return result.messages;
    }
  }
  throw new MemoryError(
    'INVALID_ARGUMENT',
    'save expects a generateText or streamText result, a response, or messages',
  );
}

/** The `prepareStep` options this package reads; ai 7 adds the last two. */
export interface StepMessages {
  messages: ModelMessage[];
  initialMessages?: ModelMessage[];
  responseMessages?: ModelMessage[];
}

/**
 * The messages of the current step without any earlier `prepareStep` override: on ai 7 rebuilt
 * from the call's own messages plus the responses so far, on ai 6 the step's messages as given.
 */
export function stepBaseMessages(options: StepMessages): ModelMessage[] {
  const { initialMessages, responseMessages } = options;
  if (Array.isArray(initialMessages) && Array.isArray(responseMessages)) {
    return [...initialMessages, ...responseMessages];
  }
  return options.messages;
}
