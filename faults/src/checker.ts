import type { JsonObject, MemoryStorage, Message } from '@engram/core';
import { compareMessages } from '@engram/core/driver';
import { type Ack, batchOf, messageContent, statedSize } from './workload.ts';

/** Every write some process was told succeeded, as reported to the parent. */
export class Ledger {
  /** resourceId → key → value merged into its working memory. */
  readonly keys = new Map<string, Map<string, number>>();
  /** threadId → batch → size. */
  readonly batches = new Map<string, Map<string, number>>();
  /** threadId → batches deleted after they were saved. */
  readonly deleted = new Map<string, Set<string>>();
  /** threadId → key → value merged into the thread's metadata. */
  readonly threadMeta = new Map<string, Map<string, number>>();
  /** resourceId → key → value merged into the resource's metadata. */
  readonly resourceMeta = new Map<string, Map<string, number>>();
  /** How many acknowledgements were recorded. */
  count = 0;

  /** Distinct facts to verify: keys, live batches and deleted batches (a batch saved then deleted is one). */
  facts(): number {
    let n = 0;
    for (const map of [this.keys, this.batches, this.threadMeta, this.resourceMeta]) {
      for (const inner of map.values()) n += inner.size;
    }
    for (const set of this.deleted.values()) n += set.size;
    return n;
  }

  add(ack: Ack): void {
    this.count += 1;
    switch (ack.kind) {
      case 'key':
        entry(this.keys, ack.resourceId).set(ack.key, ack.value);
        break;
      case 'batch':
        entry(this.batches, ack.threadId).set(ack.batch, ack.size);
        break;
      case 'deleted':
        entry(this.batches, ack.threadId).delete(ack.batch);
        setEntry(this.deleted, ack.threadId).add(ack.batch);
        break;
      case 'threadMeta':
        entry(this.threadMeta, ack.threadId).set(ack.key, ack.value);
        break;
      case 'resourceMeta':
        entry(this.resourceMeta, ack.resourceId).set(ack.key, ack.value);
        break;
    }
  }
}

function entry<V>(map: Map<string, Map<string, V>>, id: string): Map<string, V> {
  let inner = map.get(id);
  if (!inner) {
    inner = new Map();
    map.set(id, inner);
  }
  return inner;
}

function setEntry(map: Map<string, Set<string>>, id: string): Set<string> {
  let inner = map.get(id);
  if (!inner) {
    inner = new Set();
    map.set(id, inner);
  }
  return inner;
}

/** What the checker found. `problems` is empty when every invariant held. */
export interface Verdict {
  /** Acknowledged keys (working memory and metadata) found with their value. */
  verifiedKeys: number;
  /** Acknowledged batches found whole (and deleted batches found absent). */
  verifiedBatches: number;
  /** Batches found in storage in all (acknowledged or not, all of them whole or absent). */
  batchesSeen: number;
  /** Individual invariants checked. */
  invariants: number;
  /** Acknowledged writes that are missing or wrong, half-saved batches, order or isolation breaks. */
  problems: string[];
  /** The subset of `problems` that are acknowledged writes not found. */
  lost: string[];
  /**
   * Half-saved batches that were never acknowledged, when `allowPartialUnacknowledged` let them
   * pass (threadId and batch). Otherwise they are in `problems`.
   */
  partial: Array<{ threadId: string; batch: string }>;
}

/** Options of `verify`. */
export interface VerifyOptions {
  /**
   * threadId → resourceId for threads whose exact contents are known: every batch in them must
   * be acknowledged (no unacknowledged writers) and the totals must match. Without it, batches
   * that were never acknowledged may be present (a writer killed after the commit), but whole.
   */
  exact?: boolean;
  /** Resource owning each thread, to check that every message carries its thread's resource. */
  owners?: Map<string, string>;
  /**
   * For backends without multi-document transactions (MongoDB standalone, FerretDB), whose
   * documented contract is that a failed `saveMessages` may leave part of its batch written:
   * list such batches in `partial` instead of `problems`, as long as the call was never
   * acknowledged. An acknowledged batch must always be whole.
   */
  allowPartialUnacknowledged?: boolean;
}

/**
 * Reads everything the ledger names through a store and checks: every acknowledged key is
 * present with its value, every acknowledged batch is present whole and in order, no batch in
 * storage is half-saved, deleted batches are gone, messages are ordered by `(createdAt, id)`
 * and carry their thread's resource.
 */
export async function verify(
  store: MemoryStorage,
  ledger: Ledger,
  options: VerifyOptions = {},
): Promise<Verdict> {
  const verdict: Verdict = {
    verifiedKeys: 0,
    verifiedBatches: 0,
    batchesSeen: 0,
    invariants: 0,
    problems: [],
    lost: [],
    partial: [],
  };
  const lost = (what: string) => {
    verdict.problems.push(what);
    verdict.lost.push(what);
  };

  for (const [resourceId, keys] of ledger.keys) {
    const resource = await store.getResourceById({ resourceId });
    const document = parseDocument(resource?.workingMemory ?? null);
    for (const [key, value] of keys) {
      verdict.invariants += 1;
      if (document[key] === value) verdict.verifiedKeys += 1;
      else
        lost(`working memory of ${resourceId}: acknowledged key ${key}=${value} is ${show(document[key])}`);
    }
  }
  for (const [resourceId, keys] of ledger.resourceMeta) {
    const metadata = (await store.getResourceById({ resourceId }))?.metadata ?? {};
    for (const [key, value] of keys) {
      verdict.invariants += 1;
      if (metadata[key] === value) verdict.verifiedKeys += 1;
      else
        lost(
          `metadata of resource ${resourceId}: acknowledged key ${key}=${value} is ${show(metadata[key])}`,
        );
    }
  }
  for (const [threadId, keys] of ledger.threadMeta) {
    const metadata = (await store.getThreadById({ threadId }))?.metadata ?? {};
    for (const [key, value] of keys) {
      verdict.invariants += 1;
      if (metadata[key] === value) verdict.verifiedKeys += 1;
      else lost(`metadata of thread ${threadId}: acknowledged key ${key}=${value} is ${show(metadata[key])}`);
    }
  }

  const threads = new Set([...ledger.batches.keys(), ...ledger.deleted.keys()]);
  for (const threadId of threads) {
    const page = await store.listMessages({ threadId, perPage: false });
    const messages = page.messages;
    verdict.invariants += 1;
    if (page.total !== messages.length) {
      verdict.problems.push(`thread ${threadId}: total ${page.total} but ${messages.length} messages listed`);
    }
    checkOrder(threadId, messages, verdict);
    const owner = options.owners?.get(threadId);
    if (owner !== undefined) {
      for (const message of messages) {
        verdict.invariants += 1;
        if (message.resourceId !== owner) {
          verdict.problems.push(
            `thread ${threadId}: message ${message.id} carries resource ${message.resourceId}`,
          );
        }
      }
    }
    const acked = ledger.batches.get(threadId) ?? new Map<string, number>();
    const tolerated = (batch: string) => options.allowPartialUnacknowledged === true && !acked.has(batch);
    const found = groupBatches(threadId, messages, verdict, tolerated);
    verdict.batchesSeen += found.size;
    for (const [batch, size] of acked) {
      verdict.invariants += 1;
      const got = found.get(batch)?.length ?? 0;
      if (got === size) verdict.verifiedBatches += 1;
      else lost(`thread ${threadId}: acknowledged batch ${batch} has ${got} of ${size} messages`);
    }
    for (const batch of ledger.deleted.get(threadId) ?? []) {
      verdict.invariants += 1;
      if (found.has(batch))
        verdict.problems.push(`thread ${threadId}: deleted batch ${batch} is still there`);
      else verdict.verifiedBatches += 1;
    }
    if (options.exact) {
      for (const batch of found.keys()) {
        verdict.invariants += 1;
        if (!acked.has(batch))
          verdict.problems.push(`thread ${threadId}: batch ${batch} was never acknowledged`);
      }
    }
  }
  return verdict;
}

/** Groups a thread's messages by batch and checks each batch is whole, in order and intact. */
function groupBatches(
  threadId: string,
  messages: Message[],
  verdict: Verdict,
  tolerated: (batch: string) => boolean,
): Map<string, Message[]> {
  const found = new Map<string, Message[]>();
  for (const message of messages) {
    const batch = batchOf(message.id);
    const list = found.get(batch) ?? [];
    list.push(message);
    found.set(batch, list);
  }
  for (const [batch, list] of found) {
    verdict.invariants += 1;
    const size = statedSize(list[0] as Message);
    if (size !== undefined && list.length !== size && tolerated(batch)) {
      verdict.partial.push({ threadId, batch });
      continue;
    }
    if (size === undefined || list.length !== size) {
      verdict.problems.push(
        `thread ${threadId}: batch ${batch} is half-saved (${list.length} of ${size ?? '?'})`,
      );
      continue;
    }
    list.forEach((message, i) => {
      verdict.invariants += 1;
      if (message.content !== messageContent(batch, i, size)) {
        verdict.problems.push(
          `thread ${threadId}: message ${message.id} out of order or changed (${show(message.content)})`,
        );
      }
    });
  }
  return found;
}

function checkOrder(threadId: string, messages: Message[], verdict: Verdict): void {
  for (let i = 1; i < messages.length; i += 1) {
    verdict.invariants += 1;
    if (compareMessages(messages[i - 1] as Message, messages[i] as Message) > 0) {
      verdict.problems.push(
        `thread ${threadId}: messages ${messages[i - 1]?.id} and ${messages[i]?.id} out of order`,
      );
    }
  }
}

function parseDocument(text: string | null): JsonObject {
  if (text === null) return {};
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

function show(value: unknown): string {
  return value === undefined ? 'missing' : JSON.stringify(value);
}
