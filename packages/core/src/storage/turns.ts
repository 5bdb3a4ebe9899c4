import { MemoryError } from '../errors.ts';
import type { DomainHooks, DomainRunner, ThreadWrite } from './domains.ts';
import { compareIds } from './helpers.ts';
import { threadNotFound } from './ownership.ts';
import { assertDate, assertId, assertStoredDate, describe, isPlainObject } from './validate.ts';

/**
 * The turn-record domain a store may declare (`MemoryStorage.turns`): what each model call of a
 * conversation was given, kept when `options.turnRecords` is on. Core owns what a record says
 * (`agent/turn-record.ts`); a store keeps rows of an opaque body, one per turn, listed per thread.
 *
 * Rules every implementation keeps:
 * - A row's `id` is the id of the first message the turn saved; `put` of an existing id replaces
 *   the row (core refuses one that another resource holds before the driver is called).
 * - A row is written only into a thread that exists and belongs to its resource: core calls
 *   `put` inside a write that has read the thread's owner through `messages.places` (holding it
 *   where the backend locks), so a row never outlives its thread, and erasing a resource's
 *   threads erases its rows.
 * - `list` returns a thread's rows newest first (`createdAt`, then `id`, both descending), after
 *   the cursor when one is given.
 * - Rows go with their thread (`deleteByThread`) and with the message whose id they carry
 *   (`deleteByMessages`), in the same write.
 * - Rows are read back exactly as written (body byte for byte, `createdAt` to the millisecond).
 */

/** One stored turn record. */
export interface TurnRow {
  /** The id of the first message the turn saved (its input). */
  id: string;
  threadId: string;
  resourceId: string;
  /** When the model call was prepared (core's clock). */
  createdAt: Date;
  /** Core's serialised record (JSON, opaque to the store). */
  body: string;
}

/** Where a page of `list` starts: strictly older than this row. */
export interface TurnCursor {
  createdAt: Date;
  id: string;
}

/** The turn primitives of a store, as applications and `Memory` see them. */
export interface TurnStore {
  /**
   * Writes the row, replacing one with the same id. A thread that does not exist is `NOT_FOUND`;
   * a thread of another resource, or an id another resource holds, is `INVALID_ARGUMENT`.
   */
  put(row: TurnRow): Promise<void>;
  /** The row with this id, or `null`. */
  get(id: string): Promise<TurnRow | null>;
  /** Up to `limit` rows of the thread, newest first, older than `before` when given. */
  list(threadId: string, limit: number, before?: TurnCursor | null): Promise<TurnRow[]>;
}

/** The turn domain of a driver: `TurnStore`'s primitives without the validation, plus the cascade hooks. */
export interface TurnDriver<Tx = unknown> extends DomainHooks<Tx> {
  /** Inside a write that holds the row's thread (core has checked that it exists and its owner). */
  put(tx: Tx, row: TurnRow): Promise<void>;
  get(id: string): Promise<TurnRow | null>;
  list(threadId: string, limit: number, before: TurnCursor | null): Promise<TurnRow[]>;
}

/** Largest serialised body a row may hold (characters). */
export const MAX_TURN_BODY = 1_000_000;

/** Largest page of `list`. */
export const MAX_TURN_PAGE = 1_000;

/** The store's `turns`: validates every argument once, then calls the driver. */
export class ValidatedTurns implements TurnStore {
  constructor(
    private readonly adapter: string,
    private readonly driver: TurnDriver<unknown>,
    private readonly run: DomainRunner,
    private readonly inThread: ThreadWrite,
  ) {}

  /**
   * Writes the row, replacing one with the same id of the same resource, in a write that holds
   * the row's thread: a thread that does not exist (or is deleted meanwhile) is `NOT_FOUND`, one
   * of another resource `INVALID_ARGUMENT`, and nothing is written. An id another resource holds
   * is `INVALID_ARGUMENT` too, as a message id is: a row never moves to another tenant. (That
   * check reads before the write: the id is a message id, which only its own resource's saves
   * can take.)
   */
  async put(row: TurnRow): Promise<void> {
    assertRow(row);
    const { id, threadId, resourceId } = row;
    await this.run('turns.put', async () => {
      const stored = await this.driver.get(id);
      if (stored && stored.resourceId !== resourceId) {
        throw invalid(
          `turn id ${JSON.stringify(id)} is taken by a turn record of another resource; nothing was written`,
        );
      }
      await this.inThread(threadId, async (tx, owner) => {
        if (owner === undefined) throw threadNotFound(this.adapter, threadId);
        if (owner !== resourceId) {
          throw invalid(
            `turn ${JSON.stringify(id)} names resource ${JSON.stringify(resourceId)}, but thread ${JSON.stringify(threadId)} belongs to another; nothing was written`,
          );
        }
        await this.driver.put(tx, copyRow(row));
      });
    });
  }

  async get(id: string): Promise<TurnRow | null> {
    assertId(id, 'id');
    const row = await this.run('turns.get', () => this.driver.get(id));
    return row ? copyRow(row) : null;
  }

  async list(threadId: string, limit: number, before: TurnCursor | null = null): Promise<TurnRow[]> {
    assertId(threadId, 'threadId');
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TURN_PAGE)
      throw invalid(`limit must be an integer from 1 to ${MAX_TURN_PAGE}, got ${describe(limit)}`);
    if (before !== null) {
      if (!isPlainObject(before))
        throw invalid(`before must be { createdAt, id } or null, got ${describe(before)}`);
      assertId(before.id, 'before.id');
      assertDate(before.createdAt, 'before.createdAt');
    }
    const cursor = before && { createdAt: new Date(before.createdAt.getTime()), id: before.id };
    const rows = await this.run('turns.list', () => this.driver.list(threadId, limit, cursor));
    return rows.map(copyRow);
  }
}

/** Every row of the thread, newest first, read a page at a time. */
export async function* threadTurns(turns: TurnStore, threadId: string): AsyncGenerator<TurnRow> {
  for (let before: TurnCursor | null = null; ; ) {
    const rows = await turns.list(threadId, MAX_TURN_PAGE, before);
    yield* rows;
    if (rows.length < MAX_TURN_PAGE) return;
    before = rows[rows.length - 1] as TurnRow;
  }
}

/** Orders rows newest first, as `list` returns them (ids by their UTF-8 bytes, as databases sort them). */
export function compareTurnRows(a: TurnCursor, b: TurnCursor): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || compareIds(b.id, a.id);
}

/** Whether `row` comes after `cursor` in `list` order (is strictly older). */
export function isOlderThan(row: TurnCursor, cursor: TurnCursor | null): boolean {
  return cursor === null || compareTurnRows(cursor, row) < 0;
}

function copyRow(row: TurnRow): TurnRow {
  return {
    id: row.id,
    threadId: row.threadId,
    resourceId: row.resourceId,
    createdAt: new Date(row.createdAt.getTime()),
    body: row.body,
  };
}

function assertRow(row: unknown): asserts row is TurnRow {
  if (!isPlainObject(row)) throw invalid(`a turn row must be an object, got ${describe(row)}`);
  const r = row as unknown as TurnRow;
  assertId(r.id, 'id');
  assertId(r.threadId, 'threadId');
  assertId(r.resourceId, 'resourceId');
  assertStoredDate(r.createdAt, 'createdAt');
  if (typeof r.body !== 'string') throw invalid(`body must be a string, got ${describe(r.body)}`);
  if (/\p{Surrogate}/u.test(r.body))
    throw invalid('body must be well-formed Unicode (it holds an unpaired surrogate)');
  if (r.body.length > MAX_TURN_BODY)
    throw invalid(`body is ${r.body.length} characters; at most ${MAX_TURN_BODY}`);
}

function invalid(message: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', message);
}
