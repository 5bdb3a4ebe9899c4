import { MemoryError, RETRY, retryOptimistic } from '@engram/core/adapter';
import { type Collection, ObjectId } from 'mongodb';
import { isDuplicateKey } from './errors.ts';
import type { Fence } from './locks.ts';
import { newVersion } from './mapping.ts';

/**
 * Field updates (`$set` of top-level fields and `metadata.<key>` paths) that are stored on every
 * server, or refused loudly.
 *
 * FerretDB 1.x skips a `$set` whose new value it finds "identical" to the stored one, and its
 * identity test compares two documents value by value, position by position, without their keys.
 * So `$set: { 'metadata.prefs': { style: 'formal' } }` over `{ tone: 'formal' }` matches the
 * document, reports `modifiedCount: 0` and changes nothing; other fields of the same update are
 * written. A whole replacement document is compared with its keys, and is stored.
 *
 * On such servers (`replace: true`), a field update reads the document, applies the fields here
 * and writes it back as a replacement. Threads and resources are written under their write lock
 * there (see `locks.ts`), so nothing changes in between while the lock holds; the replacement is
 * still filtered on the `version` read and carries a new one, so a writer whose lease ran out
 * while it stood still is fenced out and starts again from a new read. A document deleted in
 * between is then reported missing, never re-created. Elsewhere the update is one atomic
 * `findOneAndUpdate`. Either way the document written back is checked: a server that acknowledged
 * a field and did not store it gets `STORAGE`, never a silent loss.
 */

/**
 * Attempts of a replacement that lost a race: a concurrent insert of the same new `_id`, or a
 * write by another writer after the read (only possible once a lock holder's lease ran out).
 */
const REPLACE_ATTEMPTS = 5;

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
 * Applies `update` to the document `_id` of `collection` and returns the document as stored
 * afterwards, or `null` when it is missing (and not upserted). With `replace` (FerretDB 1.x), as
 * a read and a replacement; given the `fence` of a write lock held (threads and resources, see
 * `locks.ts`), each write awaits it first and the replacement is a compare-and-set on `version`.
 * Otherwise as one `findOneAndUpdate`.
 */
export async function updateFields<D extends { _id: string }>(
  collection: Collection<D>,
  _id: string,
  update: FieldUpdate,
  replace: boolean,
  operation: string,
  fence?: Fence,
): Promise<D | null> {
  const raw = collection as unknown as Collection<Doc>;
  const stored = replace
    ? await replaceFields(raw, _id, update, operation, fence)
    : await raw.findOneAndUpdate(
        { _id },
        {
          $set: update.set,
          ...(update.setOnInsert && { $setOnInsert: update.setOnInsert }),
          ...(update.later && { $max: update.later }),
        },
        { upsert: update.upsert ?? false, returnDocument: 'after' },
      );
  if (stored) assertStored(stored, update.set, operation);
  return stored as D | null;
}

async function replaceFields(
  collection: Collection<Doc>,
  _id: string,
  update: FieldUpdate,
  operation: string,
  fence: Fence | undefined,
): Promise<Doc | null> {
  return retryOptimistic(
    async () => {
      const current = await collection.findOne({ _id });
      if (!current) {
        if (!update.upsert) return null;
        const created = applyLater(applySet({ _id, ...update.setOnInsert }, update.set), update.later);
        await fence?.();
        try {
          await collection.insertOne(created);
          return created;
        } catch (error) {
          if (isDuplicateKey(error)) return RETRY;
          throw error;
        }
      }
      // Under a lock, fenced: the replacement carries a fresh version and lands only on the
      // version read. A writer whose lock was broken while it stood still (its lease ran out)
      // matches nothing once another writer has written, and reads and applies again.
      const next = applyLater(
        applySet(current, fence ? { version: newVersion(), ...update.set } : update.set),
        update.later,
      );
      const { _id: _, ...replacement } = next;
      await fence?.();
      const result = await collection.replaceOne(
        fence ? { _id, version: current.version ?? null } : { _id },
        replacement,
      );
      // Written by another writer, or deleted, in between: the next attempt reads again.
      if (result.matchedCount === 0) return RETRY;
      if (result.modifiedCount === 0 && (fence || !sameValue(current, next))) {
        throw notStored(operation, '(the document)');
      }
      return next;
    },
    { adapter: 'mongodb', attempts: REPLACE_ATTEMPTS },
  );
}

/** A copy of `doc` with each `$set` path of `set` applied, as the server would. */
export function applySet<D extends Record<string, unknown>>(doc: D, set: Record<string, unknown>): D {
  const out = { ...doc } as Record<string, unknown>;
  for (const [path, value] of Object.entries(set)) {
    const keys = path.split('.');
    const last = keys.pop() as string;
    let target = out;
    for (const key of keys) {
      const child = Object.hasOwn(target, key) ? target[key] : undefined;
      const copy = isDocument(child) ? { ...child } : {};
      define(target, key, copy);
      target = copy;
    }
    define(target, last, value);
  }
  return out as D;
}

/** A copy of `doc` with each field of `later` raised to its value, as `$max` would. */
function applyLater<D extends Record<string, unknown>>(doc: D, later: Record<string, Date> = {}): D {
  const out = { ...doc } as Record<string, unknown>;
  for (const [field, value] of Object.entries(later)) {
    const stored = out[field];
    if (!(stored instanceof Date) || stored < value) define(out, field, value);
  }
  return out as D;
}

/** Sets an own property, even `__proto__`, which a plain assignment would turn into a prototype. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** The value at a `$set` path of a stored document (`undefined` when absent). */
function valueAt(doc: Record<string, unknown>, path: string): unknown {
  let value: unknown = doc;
  for (const key of path.split('.')) {
    if (!isDocument(value) || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

/**
 * Throws `STORAGE` unless every field of `set` holds its value in `stored`, the document the
 * server returned after the update (compared with keys, unlike FerretDB 1.x).
 */
export function assertStored(
  stored: Record<string, unknown>,
  set: Record<string, unknown>,
  operation: string,
): void {
  for (const [path, value] of Object.entries(set)) {
    if (!sameValue(valueAt(stored, path), value)) throw notStored(operation, path);
  }
}

/**
 * Throws `STORAGE` when a replacement that matched its document reports it unmodified. Callers
 * replace with a fresh `version`, so a stored replacement always modifies.
 */
export function assertReplaced(
  result: { matchedCount: number; modifiedCount: number; upsertedCount: number },
  operation: string,
): void {
  if (result.matchedCount > 0 && result.modifiedCount === 0 && result.upsertedCount === 0) {
    throw notStored(operation, 'the replacement');
  }
}

function notStored(operation: string, what: string): MemoryError {
  return new MemoryError(
    'STORAGE',
    `mongodb: ${operation}: the server acknowledged the update but did not store ${what}; refusing to report it as saved`,
    { adapter: 'mongodb' },
  );
}

function isDocument(value: unknown): value is Record<string, unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    !(value instanceof Date) &&
    !(value instanceof ObjectId)
  );
}

/**
 * Equality of BSON values as JSON sees them: keys compared as names (their order ignored), dates
 * and object ids by value, numbers by value (so `-0`, which FerretDB stores as `0`, equals `0`).
 */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  }
  if (a instanceof ObjectId || b instanceof ObjectId) {
    return a instanceof ObjectId && b instanceof ObjectId && a.equals(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => sameValue(item, b[i]))
    );
  }
  if (isDocument(a) && isDocument(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && sameValue(a[key], b[key]))
    );
  }
  return false;
}
