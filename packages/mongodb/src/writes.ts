import {
  chunks,
  defineKey,
  isPlainObject,
  type JsonObject,
  type JsonValue,
  jsonEqual,
  type MemoryError,
  newVersion,
  RETRY,
  retry,
} from '@engram/core/driver';
import type {
  AnyBulkWriteOperation,
  Collection,
  Document,
  Filter,
  OptionalUnlessRequiredId,
  WithoutId,
} from 'mongodb';
import type { Connection } from './driver.ts';
import { isDuplicateKey, mongoError } from './errors.ts';
import type { MongoTx } from './locks.ts';

/**
 * Field updates (`$set` of top-level fields and `metadata.<key>` paths), stored on every server
 * or refused. FerretDB 1.x skips a `$set` of a sub-document holding the same values under other
 * keys (`{ style: 'formal' }` over `{ tone: 'formal' }`); a whole replacement is stored. So there
 * (`replace`) an update reads the document, applies the fields here and replaces it, landing only
 * on the `version` read with a fresh one (a writer whose lease ran out meanwhile matches nothing
 * and reads again). Elsewhere it is one `findOneAndUpdate`. The document written is checked: an
 * acknowledged field the server did not store is `STORAGE`, never a silent loss.
 */

type Doc = { _id: string } & Record<string, unknown>;

export interface FieldUpdate {
  /** `$set` paths: top-level fields or `<field>.<encoded key>` (encoded keys hold no `.`). */
  set: Record<string, unknown>;
  /** Fields of a document the update creates (needs `upsert`). */
  setOnInsert?: Record<string, unknown>;
  /** Create the document when it is missing. */
  upsert?: boolean;
  /** Top-level date fields raised to these values unless already later (`$max`); not checked back. */
  later?: Record<string, Date>;
}

/**
 * Applies `update` to the document `_id` and returns it as stored, or `null` when it is missing
 * (and not upserted); each write awaits `fence` first. Tried again when it lost a race.
 */
export function updateFields<D extends { _id: string }>(
  collection: Collection<D>,
  _id: string,
  update: FieldUpdate,
  replace: boolean,
  operation: string,
  fence: () => Promise<void> = async () => undefined,
): Promise<D | null> {
  const raw = collection as unknown as Collection<Doc>;
  return retry(
    async () => {
      let stored: Doc | null | typeof RETRY;
      if (replace) {
        stored = await replaceFields(raw, _id, update, operation, fence);
      } else {
        await fence();
        stored = await raw.findOneAndUpdate(
          { _id },
          {
            $set: update.set,
            ...(update.setOnInsert && { $setOnInsert: update.setOnInsert }),
            ...(update.later && { $max: update.later }),
          },
          { upsert: update.upsert ?? false, returnDocument: 'after' },
        );
      }
      if (stored && stored !== RETRY) assertStored(stored, update.set, operation);
      return stored as D | null | typeof RETRY;
    },
    { adapter: 'mongodb', what: operation, retryable: isDuplicateKey },
  );
}

/** One read and replacement; `RETRY` when another writer wrote or deleted the document in between. */
async function replaceFields(
  collection: Collection<Doc>,
  _id: string,
  update: FieldUpdate,
  operation: string,
  fence: () => Promise<void>,
): Promise<Doc | null | typeof RETRY> {
  const current = await collection.findOne({ _id });
  if (!current && !update.upsert) return null;
  const next = applySet(current ?? { _id, ...update.setOnInsert }, { version: newVersion(), ...update.set });
  for (const [field, value] of Object.entries(update.later ?? {})) {
    const stored = next[field];
    if (!(stored instanceof Date) || stored < value) next[field] = value;
  }
  await fence();
  if (!current) {
    await collection.insertOne(next);
    return next;
  }
  const { _id: _, ...replacement } = next;
  const result = await collection.replaceOne({ _id, version: current.version ?? null }, replacement);
  if (result.matchedCount === 0) return RETRY;
  // A replacement with a fresh version always modifies the document.
  if (result.modifiedCount === 0) throw notStored(operation, '(the document)');
  return next;
}

/** A copy of `doc` with each `$set` path of `set` applied, as the server would. */
export function applySet<D extends Record<string, unknown>>(doc: D, set: Record<string, unknown>): D {
  const out = { ...doc } as JsonObject;
  for (const [path, value] of Object.entries(set)) {
    const keys = path.split('.');
    const last = keys.pop() as string;
    let target = out;
    for (const key of keys) {
      const child = Object.hasOwn(target, key) ? target[key] : undefined;
      const copy = isPlainObject(child) ? { ...(child as JsonObject) } : {};
      defineKey(target, key, copy);
      target = copy;
    }
    defineKey(target, last, value as JsonValue);
  }
  return out as D;
}

/** Throws `STORAGE` unless every field of `set` holds its value (as JSON) in the document `stored`. */
export function assertStored(
  stored: Record<string, unknown>,
  set: Record<string, unknown>,
  operation: string,
): void {
  for (const [path, value] of Object.entries(set)) {
    let at: unknown = stored;
    for (const key of path.split('.')) at = isPlainObject(at) && Object.hasOwn(at, key) ? at[key] : undefined;
    if (!jsonEqual(at as JsonValue, value as JsonValue)) throw notStored(operation, path);
  }
}

/** Throws `STORAGE` when a replacement (always with a fresh `version`) matched and did not modify. */
export function assertReplaced(
  result: { matchedCount: number; modifiedCount: number; upsertedCount: number },
  operation: string,
): void {
  if (result.matchedCount > 0 && result.modifiedCount === 0 && result.upsertedCount === 0) {
    throw notStored(operation, 'the replacement');
  }
}

function notStored(operation: string, what: string): MemoryError {
  const message = `${operation}: the server acknowledged the update but did not store ${what}; refusing to report it as saved`;
  return mongoError('STORAGE', message);
}

/** `ops` in ordered bulk writes, each after `tx.fence()`; 20 a command on FerretDB 1.x (`c.ferretdb1`). */
export async function bulkWrite<D extends Document>(
  c: Connection,
  collection: Collection<D>,
  ops: AnyBulkWriteOperation<D>[],
  tx?: MongoTx,
): Promise<number> {
  let matched = 0;
  // FerretDB 1.x holds a connection per update that matched till its command ends (100 a database).
  for (const part of chunks(ops, c.ferretdb1 ? 20 : ops.length)) {
    await tx?.fence();
    matched += (await collection.bulkWrite(part, { session: tx?.session })).matchedCount;
  }
  return matched;
}

/**
 * Writes each of `docs` whole under its `_id`, inserted or replaced, after `tx.fence()`. On FerretDB
 * 1.x a replacement by `_id` reads the whole collection (40 ms each for 8,000 documents here) while
 * an insert does not, so there the documents whose ids are in `absent` go in one ordered
 * `insertMany` first; when one of them was written meanwhile (a duplicate key), they are replaced
 * with the rest. Elsewhere every document is one `replaceOne` with `upsert`.
 */
export async function putWhole<D extends { _id: string }>(
  c: Connection,
  collection: Collection<D>,
  docs: readonly D[],
  absent: ReadonlySet<string>,
  tx?: MongoTx,
): Promise<void> {
  const fresh = c.ferretdb1 ? docs.filter((d) => absent.has(d._id)) : [];
  let replaced = fresh.length === 0 ? docs : docs.filter((d) => !absent.has(d._id));
  if (fresh.length > 0) {
    await tx?.fence();
    try {
      await collection.insertMany(fresh as OptionalUnlessRequiredId<D>[], { session: tx?.session });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      replaced = docs;
    }
  }
  const ops = replaced.map(({ _id, ...replacement }): AnyBulkWriteOperation<D> => {
    const filter = { _id } as Filter<D>;
    return { replaceOne: { filter, replacement: replacement as WithoutId<D>, upsert: true } };
  });
  await bulkWrite(c, collection, ops, tx);
}

/** Inserts `doc` unless its `_id` is taken (an atomic insert-if-absent on every server); `false` then. */
export async function insertNew<D extends { _id: unknown }>(
  collection: Collection<D>,
  doc: OptionalUnlessRequiredId<D>,
): Promise<boolean> {
  try {
    await collection.insertOne(doc);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}
