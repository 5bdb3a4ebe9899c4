import { sha256 as digest } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

/**
 * The SHA-256 of `text` (UTF-8) as hex, the same on Node and edge runtimes. Synchronous: for the
 * short texts hashed here it takes a few microseconds where Web Crypto's asynchronous digest
 * took ~85 µs (a round trip through the thread pool), several times per recall.
 */
export function sha256(text: string): string {
  return bytesToHex(digest(utf8ToBytes(text)));
}
