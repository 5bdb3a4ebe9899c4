import { MemoryError } from '../errors.ts';
import { isPlainObject } from '../storage/validate.ts';

/** Why the model is editing its memory (vnext tool). */
export type VNextUpdateReason = 'append-new-memory' | 'clarify-existing-memory' | 'replace-irrelevant-memory';

export const VNEXT_UPDATE_REASONS: readonly VNextUpdateReason[] = [
  'append-new-memory',
  'clarify-existing-memory',
  'replace-irrelevant-memory',
];

/** The vnext tool's input. */
export interface VNextInput {
  /** The new text: a fact to append, or the replacement for `searchString`. */
  newMemory: string;
  /** Exact text of the current memory to replace (clarify / replace). */
  searchString?: string;
  updateReason: VNextUpdateReason;
}

/** What a vnext edit did. */
export type VNextOutcome =
  /** `newMemory` was added at the end. */
  | 'appended'
  /** `searchString` was replaced by `newMemory`. */
  | 'replaced'
  /** `searchString` was not found, so `newMemory` was appended instead. */
  | 'appended-search-not-found'
  /** Every line of `newMemory` is already a whole line of the memory; nothing changed. */
  | 'duplicate'
  /** `newMemory` is the template itself; nothing changed. */
  | 'template'
  /** `newMemory` is empty; nothing changed. */
  | 'empty';

/** Collapses runs of whitespace, for template comparison. */
export function normalizeText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** A leading list marker: `-`, `*`, `+`, `•`, or `1.` / `1)`, followed by whitespace. */
const LIST_MARKER = /^(?:[-*+•]|\d+[.)])\s+/;

/**
 * One line as compared for duplicates: whitespace collapsed and trimmed, a leading list marker
 * removed, lower case. `'  -   City:  Berlin '` and `'city: berlin'` compare equal;
 * `'Name: Sam'` and `'Name: Samantha'` do not.
 */
export function normalizeEntry(line: string): string {
  return normalizeText(line).replace(LIST_MARKER, '').toLowerCase();
}

function entries(text: string): string[] {
  return text
    .split(/\r\n|\r|\n/)
    .map(normalizeEntry)
    .filter((entry) => entry !== '');
}

/**
 * True when every non-empty line of `text` is already a whole line of `memory` (compared with
 * `normalizeEntry`). Only a whole-line match counts: `- Budget: 150` is not a duplicate of
 * `- Budget: 1500 EUR`, nor `vegetarian` of `- Not vegetarian`. When any line is new, the text
 * is not a duplicate and is appended whole.
 */
export function isDuplicateEntry(memory: string, text: string): boolean {
  const wanted = entries(text);
  if (wanted.length === 0) return false;
  const stored = new Set(entries(memory));
  return wanted.every((entry) => stored.has(entry));
}

/** Validates the vnext tool input; throws `INVALID_ARGUMENT` with a message the model can act on. */
export function parseVNextInput(input: unknown): VNextInput {
  if (!isPlainObject(input)) throw new MemoryError('INVALID_ARGUMENT', 'the input must be an object');
  const { newMemory, searchString, updateReason } = input;
  if (typeof newMemory !== 'string') throw new MemoryError('INVALID_ARGUMENT', 'newMemory must be a string');
  if (!VNEXT_UPDATE_REASONS.includes(updateReason as VNextUpdateReason)) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `updateReason must be one of ${VNEXT_UPDATE_REASONS.join(', ')}`,
    );
  }
  if (searchString !== undefined && searchString !== null && typeof searchString !== 'string') {
    throw new MemoryError('INVALID_ARGUMENT', 'searchString must be a string');
  }
  const reason = updateReason as VNextUpdateReason;
  const search = typeof searchString === 'string' && searchString.trim() !== '' ? searchString : undefined;
  if (reason !== 'append-new-memory' && search === undefined) {
    throw new MemoryError(
      'INVALID_ARGUMENT',
      `updateReason "${reason}" needs searchString: the exact text of the current memory to replace`,
    );
  }
  return { newMemory, searchString: search, updateReason: reason };
}

function append(base: string, text: string): string {
  const head = base.trimEnd();
  return head === '' ? text.trim() : `${head}\n${text.trim()}`;
}

/**
 * Applies one vnext edit to the current memory. Pure: the same arguments always give the same
 * result, so it can run inside an atomic read-modify-write that may be retried.
 *
 * - Text equal to the template (whitespace-insensitive) changes nothing; so does text whose every
 *   line is already a whole line of the memory (`isDuplicateEntry`: whitespace, a leading list
 *   marker and case are ignored; a line that only contains or starts with the text is no match).
 * - `append-new-memory` adds the text at the end.
 * - `clarify-existing-memory` / `replace-irrelevant-memory` replace the first occurrence of
 *   `searchString` (an empty `newMemory` deletes it); when it is not found, the text is appended.
 */
export function applyVNextEdit(
  current: string | null,
  input: VNextInput,
  template: string,
): { next: string | null; outcome: VNextOutcome } {
  const base = current ?? '';
  const text = normalizeText(input.newMemory);
  const unchanged = (outcome: VNextOutcome) => ({ next: current, outcome });
  if (text !== '' && text === normalizeText(template)) return unchanged('template');
  if (isDuplicateEntry(base, input.newMemory)) return unchanged('duplicate');

  if (input.updateReason !== 'append-new-memory' && input.searchString !== undefined) {
    const search = base.includes(input.searchString) ? input.searchString : input.searchString.trim();
    const at = search === '' ? -1 : base.indexOf(search);
    if (at >= 0) {
      return {
        next: base.slice(0, at) + input.newMemory + base.slice(at + search.length),
        outcome: 'replaced',
      };
    }
    if (text === '') return unchanged('empty');
    return { next: append(base, input.newMemory), outcome: 'appended-search-not-found' };
  }
  if (text === '') return unchanged('empty');
  return { next: append(base, input.newMemory), outcome: 'appended' };
}
