import type { TestDatabase } from './env.ts';

/** Tables, indexes, sequences, views, types, functions and triggers in `schema` named with `prefix`. */
export async function objectsIn(db: TestDatabase, schema: string, prefix: string): Promise<string[]> {
  const like = `${prefix.replaceAll('_', '\\_')}%`;
  const rows = await db.query<{ kind: string; name: string }>(
    `SELECT 'relation ' || c.relkind::text AS kind, c.relname AS name
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname LIKE $2
     UNION ALL
     SELECT 'type', t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = $1 AND t.typname LIKE $2
     UNION ALL
     SELECT 'function', p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE n.nspname = $1
     UNION ALL
     SELECT 'trigger', tg.tgname FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND NOT tg.tgisinternal`,
    [schema, like],
  );
  return rows.map((r) => `${r.kind} ${r.name}`).sort();
}
