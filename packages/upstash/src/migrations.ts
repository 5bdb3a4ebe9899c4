/**
 * The key-layout versions, append-only: entry `i` is version `i + 1`. `init()` runs, in one
 * script, the `lua` of every version newer than the one recorded at `<prefix>:schema`, then
 * records the latest, so an older layout is upgraded in place and atomically. The Lua runs
 * after the shared prelude of `scripts.ts` (key builders, `P` for the prefix).
 */
export const MIGRATIONS: readonly { description: string; lua: string }[] = [
  {
    description: 'hashes per thread, message and resource; sorted-set indexes by createdAt/updatedAt',
    lua: '',
  },
];

/** The layout version this code reads and writes. */
export const LAYOUT_VERSION = MIGRATIONS.length;
