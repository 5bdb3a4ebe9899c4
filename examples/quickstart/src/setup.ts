import { createLexicalEmbedder, Memory } from '@engram/core';
import { LibSQLStore } from '@engram/libsql';
import { z } from 'zod';

/** The database file: `./.engram/quickstart.db`, or ENGRAM_QUICKSTART_DB. */
export const DB_PATH = process.env.ENGRAM_QUICKSTART_DB ?? './.engram/quickstart.db';

/** The user every run talks about. */
export const USER_ID = 'user-ada';

/** The topics the worker processes learn about, ten facts each. */
export const TOPICS = {
  food: ['pasta', 'ramen', 'tacos', 'curry', 'dumplings', 'paella', 'pho', 'falafel', 'risotto', 'sushi'],
  music: ['jazz', 'bach', 'bossa nova', 'synthpop', 'fado', 'blues', 'techno', 'opera', 'ska', 'folk'],
  travel: ['lisbon', 'kyoto', 'oaxaca', 'oslo', 'tbilisi', 'hanoi', 'cusco', 'porto', 'tallinn', 'fez'],
  books: [
    'dune',
    'middlemarch',
    'piranesi',
    'beloved',
    'solaris',
    'emma',
    'ulysses',
    'kindred',
    'ubik',
    'stoner',
  ],
} as const;

export type Topic = keyof typeof TOPICS;

/** Schema-mode working memory: what the agent keeps about Ada, as validated JSON. */
export const UserMemory = z.object({
  name: z.string(),
  runs: z.number().int().nonnegative(),
  firstSeen: z.string(),
  lastSeen: z.string(),
  /** What the workers learned in the latest run: topic → item → the order it was learned in. */
  facts: z.record(z.string(), z.record(z.string(), z.number().int().positive())).optional(),
});

export type UserMemory = z.infer<typeof UserMemory>;

/**
 * A store on the quickstart database and a `Memory` with schema-mode working memory and
 * semantic recall on it. The embedder is engram's offline lexical one (shared words, not
 * meaning); in an application pass a provider's model, e.g. `openai.embedding('text-embedding-3-small')`.
 */
export function openMemory(): { store: LibSQLStore; memory: Memory } {
  const store = new LibSQLStore({ url: `file:${DB_PATH}` });
  const memory = new Memory({
    storage: store,
    embedder: createLexicalEmbedder(),
    options: {
      workingMemory: { enabled: true, schema: UserMemory },
      semanticRecall: { topK: 1, messageRange: 1, scope: 'resource' },
    },
  });
  return { store, memory };
}
