import { encodeId, layoutKey } from './layout.ts';

export { encodeId };

/** Builds the keys of one store (one prefix), from the layout in `layout.ts`. */
export class Keys {
  constructor(readonly prefix: string) {}

  schema(): string {
    return layoutKey(this.prefix, 'schema');
  }

  thread(id: string): string {
    return layoutKey(this.prefix, 'thread', id);
  }

  message(id: string): string {
    return layoutKey(this.prefix, 'message', id);
  }

  resource(id: string): string {
    return layoutKey(this.prefix, 'resource', id);
  }

  threads(order: 'createdAt' | 'updatedAt'): string {
    return layoutKey(this.prefix, order === 'createdAt' ? 'threadsCreated' : 'threadsUpdated');
  }

  resourceThreads(resourceId: string, order: 'createdAt' | 'updatedAt'): string {
    const name = order === 'createdAt' ? 'resourceThreadsCreated' : 'resourceThreadsUpdated';
    return layoutKey(this.prefix, name, resourceId);
  }

  threadMessages(threadId: string, resourceId?: string): string {
    return resourceId === undefined
      ? layoutKey(this.prefix, 'threadMessages', threadId)
      : layoutKey(this.prefix, 'threadResourceMessages', threadId, resourceId);
  }

  threadResources(threadId: string): string {
    return layoutKey(this.prefix, 'threadResources', threadId);
  }
}

/** Hash field prefix of metadata keys; record fields never start with it. */
export const META = '.';
