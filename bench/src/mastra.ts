import type { JsonObject, Message } from '@engram/core';
import type { MastraCompositeStore } from '@mastra/core/storage';
import { Memory } from '@mastra/memory';
import { deepMerge } from './deep-merge.ts';
import type { Peer } from './target.ts';

/** The Markdown template both sides use for the replace operation. */
export const TEMPLATE = '# User\n- Name:\n- City:\n';

/**
 * Mastra 1.x on the same database, through its public API: `Memory` (`@mastra/memory`) with
 * resource-scoped working memory in template mode, and the store's memory domain for messages.
 * Mastra's `updateWorkingMemory` reads the resource, then updates it (two statements, no
 * transaction; a mutex inside this process only); its read-merge-write is `getWorkingMemory`
 * plus `updateWorkingMemory`, which writers in other processes can interleave with.
 */
export async function mastraPeer(
  store: MastraCompositeStore,
  label: string,
  saveMessages: string,
): Promise<Peer> {
  await store.init();
  const memoryStore = await store.getStore('memory');
  if (!memoryStore) throw new Error(`${label}: the store has no memory domain`);
  const memory = new Memory({
    storage: store,
    options: { workingMemory: { enabled: true, scope: 'resource', template: TEMPLATE } },
  });
  // Mastra's working-memory calls name a thread even in resource scope; this one is never read.
  const threadId = `mastra-wm-${process.pid}`;
  return {
    name: label,
    atomicity: {
      replace: 'getResourceById + UPDATE (or INSERT), no transaction; an in-process mutex',
      merge: 'getWorkingMemory + updateWorkingMemory: not atomic, other processes can interleave',
      saveMessages,
    },
    async createThread(id, resourceId) {
      const now = new Date();
      await memoryStore.saveThread({
        thread: { id, resourceId, title: id, metadata: {}, createdAt: now, updatedAt: now },
      });
    },
    async getWorkingMemory(resourceId) {
      return memory.getWorkingMemory({ threadId, resourceId });
    },
    async replaceWorkingMemory(resourceId, document) {
      await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: document });
    },
    async mergeWorkingMemory(resourceId, patch: JsonObject) {
      const stored = await memory.getWorkingMemory({ threadId, resourceId });
      await memory.updateWorkingMemory({ threadId, resourceId, workingMemory: deepMerge(stored, patch) });
    },
    async saveMessages(batch: Message[]) {
      await memoryStore.saveMessages({
        messages: batch.map((m) => ({
          id: m.id,
          threadId: m.threadId,
          resourceId: m.resourceId,
          role: m.role === 'tool' ? 'assistant' : m.role,
          type: m.type,
          createdAt: m.createdAt,
          content:
            typeof m.content === 'string'
              ? { format: 2, parts: [{ type: 'text', text: m.content }] }
              : (m.content as never),
        })),
      });
    },
    async listNewest(id, n) {
      const page = await memoryStore.listMessages({
        threadId: id,
        perPage: n,
        orderBy: { field: 'createdAt', direction: 'DESC' },
      });
      return page.messages;
    },
    async close() {
      await (store as { close?: () => Promise<void> }).close?.();
    },
  };
}
