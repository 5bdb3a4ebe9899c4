import { isMemoryError, MemoryError } from '../errors.ts';
import type { MemoryStorage } from '../storage/contract.ts';
import { jsonEqual } from '../storage/helpers.ts';
import type { ObservationRow, ObservationVersion } from '../storage/observations.ts';
import type { Message, Resource, Thread } from '../storage/records.ts';
import type { TurnRow } from '../storage/turns.ts';
import { type ParsedRecord, type ParsedVector, parseRecord, type RecordKind } from './records.ts';

/** What `importRecords` does with a record whose id (or log key) the store already holds. */
export type OnConflict = 'skip' | 'replace' | 'fail';

export interface ImportOptions {
  /** Default `'fail'`: `CONFLICT` naming the record, which is not written. */
  onConflict?: OnConflict;
  /** When given, a record of any other resource is refused (`VALIDATION`). */
  resourceId?: string;
}

/** How many records of each kind were written and skipped. */
export interface ImportCounts {
  written: Record<RecordKind, number>;
  skipped: Record<RecordKind, number>;
  /**
   * Resources whose vector records were skipped because they are in another embedding space than
   * the store's (or the store keeps no vectors): their messages need embedding (`memory.reindex`;
   * `memory.importRecords` does it when the memory has an embedder).
   */
  unembedded: string[];
}

/**
 * Runs the write of one record; when the store refuses a value of it (`INVALID_ARGUMENT`), the
 * error names the record, so the dump can be mended there and the import run again.
 */
async function refusal(
  storage: MemoryStorage,
  at: number,
  kind: RecordKind,
  id: string,
  write: () => Promise<unknown>,
): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!isMemoryError(error, 'INVALID_ARGUMENT')) throw error;
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `record ${at} (${kind} ${JSON.stringify(id)}) was refused by ${storage.name}: ${error.message}; the records before it are written, and running the import again with onConflict 'skip' after mending it goes on from there`,
      { adapter: storage.name, details: { record: at }, cause: error },
    );
  }
}

/** Messages written per `saveMessages` call. */
const BATCH = 200;

const zero = (): Record<RecordKind, number> => ({
  resource: 0,
  thread: 0,
  message: 0,
  observation: 0,
  vector: 0,
  turn: 0,
});

/**
 * Writes records of `exportResource` (or of any dump in that format) into `storage`. Each record
 * is checked before anything of it is written; a bad one stops the import with `VALIDATION`
 * naming its position (the line of a JSON Lines file), after every record before it was written
 * and with none after it. Dates, titles, metadata and content are written exactly: a thread is
 * saved again after its messages, whose save bumps its `updatedAt`. Running an import again with
 * `'skip'` or `'replace'` converges to the same store (nothing is duplicated).
 */
export async function importRecords(
  storage: MemoryStorage,
  records: AsyncIterable<unknown> | Iterable<unknown>,
  options: ImportOptions = {},
): Promise<ImportCounts> {
  const onConflict = options.onConflict ?? 'fail';
  if (onConflict !== 'skip' && onConflict !== 'replace' && onConflict !== 'fail') {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `onConflict must be 'skip', 'replace' or 'fail', got ${JSON.stringify(onConflict)}`,
    );
  }
  const importer = new Importer(storage, onConflict);
  let at = 0;
  for await (const record of flushedOnError(records, importer)) {
    at += 1;
    let parsed: ParsedRecord;
    try {
      parsed = parseRecord(record, at);
      if (options.resourceId !== undefined && parsed.resourceId !== options.resourceId) {
        throw new MemoryError(
          'VALIDATION',
          `record ${at} (${parsed.kind}) belongs to resource ${JSON.stringify(parsed.resourceId)}, not ${JSON.stringify(options.resourceId)}`,
          { details: { record: at } },
        );
      }
    } catch (error) {
      await importer.flush();
      throw error;
    }
    await importer.add(parsed, at);
  }
  await importer.flush();
  return { ...importer.counts, unembedded: [...importer.unembedded] };
}

/**
 * The records as given; when reading the next one fails (a line of a file that is not JSON, a
 * connection lost), the records before it are written first, as for a record that is not valid.
 */
async function* flushedOnError(
  records: AsyncIterable<unknown> | Iterable<unknown>,
  importer: Importer,
): AsyncGenerator<unknown> {
  const iterator =
    Symbol.asyncIterator in records
      ? records[Symbol.asyncIterator]()
      : (records as Iterable<unknown>)[Symbol.iterator]();
  for (;;) {
    let step: IteratorResult<unknown>;
    try {
      step = await iterator.next();
    } catch (error) {
      await importer.flush();
      throw error;
    }
    if (step.done) return;
    yield await step.value;
  }
}

class Importer {
  readonly counts = { written: zero(), skipped: zero() };
  /** See `ImportCounts.unembedded`. */
  readonly unembedded = new Set<string>();
  private messages: { message: Message; at: number }[] = [];
  private vectors: { value: ParsedVector; resourceId: string; at: number }[] = [];
  /** Threads written whose messages may still come (saved again once they have). */
  private threads = new Map<string, Thread>();
  private log: { key: string; rows: ObservationRow[]; at: number } | null = null;

  constructor(
    private readonly storage: MemoryStorage,
    private readonly onConflict: OnConflict,
  ) {}

  async add(record: ParsedRecord, at: number): Promise<void> {
    if (record.kind !== 'message') await this.flushMessages();
    if (record.kind !== 'vector') await this.flushVectors();
    if (record.kind !== 'observation' || (this.log && this.log.key !== record.value.key))
      await this.flushLog();
    switch (record.kind) {
      case 'resource':
        return this.resource(record.value, at);
      case 'thread':
        await this.flushThreads();
        return this.thread(record.value, at);
      case 'message':
        this.messages.push({ message: record.value, at });
        if (this.messages.length >= BATCH) await this.flushMessages();
        return;
      case 'observation':
        this.log ??= { key: record.value.key, rows: [], at };
        this.log.rows.push(record.value);
        return;
      case 'vector':
        this.vectors.push({ value: record.value, resourceId: record.resourceId, at });
        if (this.vectors.length >= BATCH) await this.flushVectors();
        return;
      case 'turn':
        return this.turn(record.value, at);
    }
  }

  async flush(): Promise<void> {
    await this.flushMessages();
    await this.flushVectors();
    await this.flushLog();
    await this.flushThreads();
  }

  /** `true` when the record is to be written: no conflict, or `'replace'`. */
  private proceed(kind: RecordKind, exists: boolean, at: number, name: string): boolean {
    if (!exists) return true;
    if (this.onConflict === 'replace') return true;
    if (this.onConflict === 'skip') {
      this.counts.skipped[kind] += 1;
      return false;
    }
    throw new MemoryError(
      'CONFLICT',
      `record ${at} (${kind} ${JSON.stringify(name)}) already exists in ${this.storage.name}`,
      {
        adapter: this.storage.name,
        details: { record: at },
      },
    );
  }

  private async resource(value: Resource, at: number): Promise<void> {
    const exists = (await this.storage.getResourceById({ resourceId: value.id })) !== null;
    if (!this.proceed('resource', exists, at, value.id)) return;
    if (!this.storage.restoreResource) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${this.storage.name}: importing a resource needs restoreResource`,
        {
          adapter: this.storage.name,
        },
      );
    }
    const restore = this.storage.restoreResource.bind(this.storage);
    await refusal(this.storage, at, 'resource', value.id, () => restore(value));
    this.counts.written.resource += 1;
  }

  private async thread(value: Thread, at: number): Promise<void> {
    const stored = await this.storage.getThreadById({ threadId: value.id });
    if (!this.proceed('thread', stored !== null, at, value.id)) {
      // The same thread but for `updatedAt`: an earlier import of this dump that stopped before
      // its messages were all written (their save bumped it). Its dates are made exact again.
      if (stored && sameThread(stored, value)) this.threads.set(value.id, value);
      return;
    }
    await refusal(this.storage, at, 'thread', value.id, () => this.storage.saveThread(value));
    this.threads.set(value.id, value);
    this.counts.written.thread += 1;
  }

  /**
   * Writes a turn record as stored, into its thread (which must be stored, under the record's
   * resource: `VALIDATION` otherwise). A store without the turns domain skips it (counted in
   * `skipped.turn`): turn records describe past model calls, and the conversation moves without them.
   */
  private async turn(value: TurnRow, at: number): Promise<void> {
    const turns = this.storage.turns;
    if (!turns) {
      this.counts.skipped.turn += 1;
      return;
    }
    // A row is reached (listed, purged) through its thread: one without it would outlive every erase.
    const thread =
      this.threads.get(value.threadId) ?? (await this.storage.getThreadById({ threadId: value.threadId }));
    if (!thread || thread.resourceId !== value.resourceId) {
      throw new MemoryError(
        'VALIDATION',
        `record ${at} (turn ${JSON.stringify(value.id)}): thread ${JSON.stringify(value.threadId)} of resource ${JSON.stringify(value.resourceId)} is not in ${this.storage.name}; a turn record comes after its thread's record`,
        { adapter: this.storage.name, details: { record: at } },
      );
    }
    if (!this.proceed('turn', (await turns.get(value.id)) !== null, at, value.id)) return;
    await refusal(this.storage, at, 'turn', value.id, () => turns.put(value));
    this.counts.written.turn += 1;
  }

  private async flushMessages(): Promise<void> {
    const batch = this.messages;
    if (batch.length === 0) return;
    this.messages = [];
    const stored = new Set(
      (await this.storage.listMessagesById({ ids: batch.map((b) => b.message.id) })).map((m) => m.id),
    );
    const write = batch.filter((b) => this.proceed('message', stored.has(b.message.id), b.at, b.message.id));
    if (write.length === 0) return;
    try {
      await this.storage.saveMessages(write.map((b) => b.message));
    } catch (error) {
      if (!isMemoryError(error, 'INVALID_ARGUMENT')) throw error;
      // The store refused a value (PostgreSQL holds no NUL in JSON, for one): find which message,
      // writing those before it, as for a record that is not valid.
      for (const b of write) {
        await refusal(this.storage, b.at, 'message', b.message.id, () =>
          this.storage.saveMessages([b.message]),
        );
        this.counts.written.message += 1;
      }
      return;
    }
    this.counts.written.message += write.length;
  }

  /**
   * Writes vectors of the store's embedding space (recording the dump's space when the store has
   * none yet); vectors of another space, or for a store without vectors, are skipped and their
   * resources listed in `unembedded`. A vector whose message is not stored is not written.
   */
  private async flushVectors(): Promise<void> {
    const batch = this.vectors;
    if (batch.length === 0) return;
    this.vectors = [];
    const store = this.storage.vectors;
    const first = (batch[0] as (typeof batch)[number]).value.space;
    const space = store ? ((await store.getSpace()) ?? (await store.claimSpace(first))) : null;
    const same = (b: (typeof batch)[number]) =>
      space !== null && b.value.space.id === space.id && b.value.space.dimensions === space.dimensions;
    for (const b of batch.filter((b) => !same(b))) {
      this.counts.skipped.vector += 1;
      this.unembedded.add(b.resourceId);
    }
    const inSpace = batch.filter(same);
    if (!store || !space || inSpace.length === 0) return;
    const stored = new Set(
      (
        await store.getVectors(
          space,
          inSpace.map((b) => b.value.vector.messageId),
        )
      ).map((v) => v.messageId),
    );
    const write = inSpace.filter((b) =>
      this.proceed('vector', stored.has(b.value.vector.messageId), b.at, b.value.vector.messageId),
    );
    if (write.length === 0) return;
    await store.upsertVectors(
      space,
      write.map((b) => b.value.vector),
    );
    this.counts.written.vector += write.length;
  }

  /** Saves each thread written again, as given: its messages' save bumped its `updatedAt`. */
  private async flushThreads(): Promise<void> {
    await this.flushMessages();
    for (const thread of this.threads.values()) await this.storage.saveThread(thread);
    this.threads.clear();
  }

  /**
   * Writes one log exactly (generations, versions, bodies, dates) through the store's swaps: each
   * generation is created at the version its predecessor was sealed with and replaced until it
   * reaches its own. A stored log that equals it is left alone; one this import (or another of the
   * same dump, running at once or stopped part-way) has begun is completed from where it stands;
   * another one is a conflict unless `'skip'` (a log is never replaced: swaps only move forward).
   */
  private async flushLog(): Promise<void> {
    const log = this.log;
    if (!log) return;
    this.log = null;
    const store = this.storage.observations;
    if (!store) {
      throw new MemoryError(
        'UNSUPPORTED',
        `${this.storage.name} declares no observations; record ${log.at} is an observation`,
        {
          adapter: this.storage.name,
          details: { record: log.at },
        },
      );
    }
    const rows = [...log.rows].sort((a, b) => a.generation - b.generation);
    assertLog(rows, log.at);
    const conflict = (why: string) =>
      new MemoryError('CONFLICT', `record ${log.at} (observation ${JSON.stringify(log.key)}): ${why}`, {
        adapter: this.storage.name,
        details: { record: log.at },
      });
    // Each lost swap means another writer moved the log forward: read it again and go on from
    // there while it is still this dump's log in the making. A log that did not move is a
    // store refusing the swap, which no reading again mends.
    let before: string | null = null;
    for (;;) {
      const existing = await store.generations(log.key);
      const read = JSON.stringify(existing.map(plain));
      if (read === before) throw conflict(`${this.storage.name} refused a swap of a log that did not change`);
      before = read;
      if (existing.length > 0 && jsonEqual(existing.map(plain), rows.map(plain))) {
        this.counts.skipped.observation += rows.length;
        return;
      }
      const from = begun(existing, rows);
      if (from === null) {
        if (this.onConflict === 'skip') {
          this.counts.skipped.observation += rows.length;
          return;
        }
        throw conflict(`${this.storage.name} holds another log under this key`);
      }
      if (await swapUpTo(store, rows, from)) break;
    }
    this.counts.written.observation += rows.length;
  }
}

/**
 * Where writing `rows` stands in the stored log `existing`: the index of its newest generation
 * and that generation's version, or `null` when `existing` is not a stage of writing them (every
 * generation but the newest exactly a row, the newest a row at an earlier version). Nothing
 * stored: the start.
 */
function begun(existing: readonly ObservationRow[], rows: readonly ObservationRow[]): Resume | null {
  if (existing.length === 0) return { index: 0, expected: null };
  const index = existing.length - 1;
  const newest = existing[index] as ObservationRow;
  const row = rows[index];
  if (!row || newest.version > sealedAt(rows, index)) return null;
  const done = existing.slice(0, index).map(plain);
  if (!jsonEqual(done, rows.slice(0, index).map(plain))) return null;
  if (!jsonEqual(plain({ ...newest, version: 0 }), plain({ ...row, version: 0 }))) return null;
  return { index, expected: { generation: newest.generation, version: newest.version } };
}

/** Where a log's writing resumes: the index of the generation and what the store holds of it. */
interface Resume {
  index: number;
  expected: ObservationVersion | null;
}

/** The version generation `index` is swapped up to: its own when newest, else one before it (the next one's start seals it). */
const sealedAt = (rows: readonly ObservationRow[], index: number) =>
  (rows[index] as ObservationRow).version - (index === rows.length - 1 ? 0 : 1);

/** Swaps the log forward from `from` until it holds `rows`; `false` when another writer's swap won. */
async function swapUpTo(
  store: NonNullable<MemoryStorage['observations']>,
  rows: readonly ObservationRow[],
  from: Resume,
): Promise<boolean> {
  let expected = from.expected;
  for (let index = from.index; index < rows.length; index++) {
    const row = rows[index] as ObservationRow;
    while (expected?.generation !== row.generation || expected.version < sealedAt(rows, index)) {
      const next = { ...row, version: expected === null ? 1 : expected.version + 1 };
      if (!(await store.swap(expected, next))) return false;
      expected = { generation: row.generation, version: next.version };
    }
  }
  return true;
}

/** Equal in everything but `updatedAt`. */
function sameThread(a: Thread, b: Thread): boolean {
  return (
    a.resourceId === b.resourceId &&
    a.title === b.title &&
    a.createdAt.getTime() === b.createdAt.getTime() &&
    jsonEqual(a.metadata, b.metadata)
  );
}

const plain = (r: ObservationRow) => ({ ...r, updatedAt: r.updatedAt.toISOString() });

/** Generations 1…n, each created at the version its predecessor was sealed with. */
function assertLog(rows: readonly ObservationRow[], at: number): void {
  let created = 1;
  for (const [i, row] of rows.entries()) {
    const last = i === rows.length - 1;
    const fail = (why: string) =>
      new MemoryError('VALIDATION', `record ${at} (observation ${JSON.stringify(row.key)}): ${why}`, {
        details: { record: at },
      });
    if (row.generation !== i + 1) throw fail(`generations must be 1…${rows.length}, one row each`);
    if (row.version < (last ? created : created + 1))
      throw fail(`generation ${row.generation} has an impossible version`);
    created = row.version;
  }
}
