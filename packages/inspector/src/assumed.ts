import type { WorkingMemoryScope } from '@engram/core';

/** A stored working-memory document, as the assumed-configuration check reads it. */
export interface StoredDocument {
  scope: WorkingMemoryScope;
  value: string | null;
}

/**
 * Why a prompt composed under an assumed configuration would misrepresent the agent's: a stored
 * document (of the thread's resource or of the thread) is a JSON object while the prompt is in
 * Markdown mode, or is text that is not a JSON object while it is in JSON mode. `null` when no
 * stored document contradicts the mode. `hint` says how to give the real configuration.
 */
export function contradiction(
  format: 'markdown' | 'json',
  documents: readonly StoredDocument[],
  hint: string,
): string | null {
  for (const { scope, value } of documents) {
    if (value === null || value.trim() === '') continue;
    const object = isJsonObject(value);
    if (object === (format === 'json')) continue;
    const stored = object ? 'a JSON object' : 'not a JSON object';
    const mode = format === 'json' ? 'JSON' : 'Markdown';
    return `the ${scope}'s stored working memory is ${stored}, but the prompt would be composed in ${mode} mode, which was assumed (no schema or template given); refusing to print a prompt the agent does not get: ${hint}`;
  }
  return null;
}

/** The warning shown with a prompt whose mode and template were assumed. */
export function assumedWarning(format: 'markdown' | 'json', hint: string): string {
  const what = format === 'json' ? 'JSON mode' : "Markdown mode with core's default template";
  return `the working-memory mode and template were assumed (${what}), so the agent's prompt may differ: ${hint}`;
}

function isJsonObject(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}
