import { MessageCountChanges } from '@engram/core';

/**
 * Net changes to the kept message counts (`engram_message_counts`) made by one write, as the
 * parallel arrays the save and delete statements take.
 */
export class CountChanges extends MessageCountChanges {
  /** The non-zero changes as parallel arrays (threads, resources, deltas), in key order. */
  arrays(): [string[], string[], number[]] {
    const changed = this.changes();
    return [changed.map((e) => e.threadId), changed.map((e) => e.resourceId), changed.map((e) => e.delta)];
  }
}
