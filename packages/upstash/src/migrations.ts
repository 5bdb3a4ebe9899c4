/**
 * The layout versions, append-only: the index + 1 is the version `init()` records at
 * `<prefix>:schema`. Each entry says what the version changed; a later entry that needs existing
 * keys rewritten carries the Lua that does it.
 */
export const MIGRATIONS: readonly { description: string; lua?: string }[] = [
  { description: 'hashes per thread, message and resource; sorted-set indexes by createdAt/updatedAt' },
];

/** The layout version this code reads and writes. */
export const LAYOUT_VERSION = MIGRATIONS.length;
