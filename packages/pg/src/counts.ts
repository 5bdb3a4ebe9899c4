/**
 * Net changes to the kept message counts (`engram_message_counts`) made by one write: +1 for
 * each message saved into a (thread, resource), −1 for each one it replaces.
 */
export class CountChanges {
  private readonly deltas = new Map<string, { threadId: string; resourceId: string; delta: number }>();

  /** Adds `delta` to the count of (`threadId`, `resourceId`). */
  add(threadId: string, resourceId: string, delta: number): void {
    const key = JSON.stringify([threadId, resourceId]);
    const entry = this.deltas.get(key) ?? { threadId, resourceId, delta: 0 };
    entry.delta += delta;
    this.deltas.set(key, entry);
  }

  /** The non-zero changes as parallel arrays (threads, resources, deltas), in key order. */
  arrays(): [string[], string[], number[]] {
    const changed = [...this.deltas.entries()]
      .filter(([, entry]) => entry.delta !== 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, entry]) => entry);
    return [changed.map((e) => e.threadId), changed.map((e) => e.resourceId), changed.map((e) => e.delta)];
  }
}
