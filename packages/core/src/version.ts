/** The version of `@engram/core` (kept equal to `package.json` by a test). */
export const ENGRAM_VERSION = '0.1.0';
