import { runConformance } from '@engram/conformance';
import { expect, it } from 'vitest';
import { conformanceRun } from './conformance-setup.ts';
import { PG_URL, randomName, SKIP_REASON } from './env.ts';
import { objectsIn } from './objects.ts';

// The whole suite again with every table in a fresh schema of a fresh database, its name holding a
// space, quotes of both kinds, a dollar quote and a placeholder: each must reach SQL quoted.
const schemaName = `Conformance $$ "q" 'a' $1 ${randomName('engram')}`;
const { init, run } = conformanceRun(`pg (schemaName ${schemaName})`, { schemaName });
runConformance(init);

const publicCheck = 'leaves public without engram objects (tables, indexes, types, functions, triggers)';
it.skipIf(!PG_URL)(
  PG_URL ? publicCheck : `${publicCheck} (skipped: ${SKIP_REASON ?? 'ENGRAM_PG_URL is not set'})`,
  async () => {
    const db = run.db!;
    expect(await objectsIn(db, schemaName, 'engram_')).toContain('relation r engram_messages');
    expect(await objectsIn(db, 'public', 'engram_')).toEqual([]);
    expect(await objectsIn(db, 'public', '')).toEqual([]);
  },
);
