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
  /** `newMemory` is already in the memory; nothing changed. */
  | 'duplicate'
  /** `newMemory` is the template itself; nothing changed. */
  | 'template'
  /** `newMemory` is empty; nothing changed. */
  | 'empty';

/** Collapses runs of whitespace, for duplicate and template comparison. */
export function normalizeText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
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
 * - Text equal to the template, or already present (whitespace-insensitive), changes nothing.
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
  if (text !== '' && normalizeText(base).includes(text)) return unchanged('duplicate');

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
