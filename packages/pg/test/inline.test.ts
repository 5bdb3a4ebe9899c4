import { describe, expect, it } from 'vitest';
import { inline } from '../src/connection.ts';
import { PostgresStore } from '../src/index.ts';
import { createDatabase, describePg } from './env.ts';

describe('inline: values as literals in the store’s own statement texts', () => {
  it('replaces placeholders only outside quoted identifiers and string literals', () => {
    const text = `SELECT "s$1""x".t FROM "a$2" WHERE id = $1 AND k = '$2' AND v = $2`;
    expect(inline(text, ['r"; DROP TABLE t; --', "it's \\"])).toBe(
      `SELECT "s$1""x".t FROM "a$2" WHERE id = 'r"; DROP TABLE t; --' AND k = '$2' AND v = E'it''s \\\\'`,
    );
  });

  it('writes NULL for null and refuses a placeholder without a value', () => {
    expect(inline('SELECT $1', [null])).toBe('SELECT NULL');
    expect(() => inline('SELECT $2', ['a'])).toThrow('no value for $2');
  });
});

describePg('inline against the server: a schema name holding a placeholder and a quote', (url) => {
  it('racing locked updates store values with double quotes exactly, and every one survives', async () => {
    const db = await createDatabase(url);
    const schemaName = 'wm $1 "q';
    const stores = [0, 1, 2].map(() => new PostgresStore({ connectionString: db.url, schemaName }));
    try {
      for (const store of stores) await store.init();
      const resourceId = 'r$1"';
      const keys = stores.flatMap((_, s) => Array.from({ length: 10 }, (_, i) => `"${s}-${i}" $1 '`));
      // Concurrent updates lose compare-and-sets, and the losers take the locked, inlined path.
      await Promise.all(
        stores.map((store, s) =>
          (async () => {
            for (const key of keys.filter((k) => k.startsWith(`"${s}-`))) {
              await store.updateWorkingMemoryAtomically({
                scope: 'resource',
                resourceId,
                update: (current) => JSON.stringify({ ...JSON.parse(current ?? '{}'), [key]: true }),
              });
            }
          })(),
        ),
      );
      const stored = JSON.parse((await stores[0]!.getResourceById({ resourceId }))?.workingMemory ?? '{}');
      expect(Object.keys(stored).sort()).toEqual([...keys].sort());
    } finally {
      for (const store of stores) await store.close();
      await db.drop();
    }
  });
});
