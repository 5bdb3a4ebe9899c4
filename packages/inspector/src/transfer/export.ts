import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Memory } from '@engram/core';
import type { Progress } from './progress.ts';

/** Bytes gathered before one write to the output. */
const CHUNK = 64 * 1024;

/**
 * Writes a dump as JSON Lines to `out`: one record per line, of one resource (`resourceId`) or of
 * the whole store (`memory.exportStore`). Waits when `out` is full, so memory stays bounded
 * however slowly it is read. Resolves once everything is handed to `out`.
 */
export async function writeDump(
  memory: Memory,
  out: Writable,
  progress: Progress,
  resourceId?: string,
): Promise<void> {
  const records = resourceId === undefined ? memory.exportStore() : memory.exportResource({ resourceId });
  let failed: Error | undefined;
  const onError = (error: Error) => {
    failed = error;
  };
  out.on('error', onError);
  try {
    let chunk = '';
    const flush = async () => {
      if (failed) throw failed;
      const text = chunk;
      chunk = '';
      if (text !== '' && !out.write(text)) await Promise.race([once(out, 'drain'), once(out, 'close')]);
      if (failed) throw failed;
    };
    for await (const record of progress.counted(records)) {
      chunk += `${JSON.stringify(record)}\n`;
      if (chunk.length >= CHUNK) await flush();
    }
    await flush();
  } finally {
    out.off('error', onError);
  }
}
