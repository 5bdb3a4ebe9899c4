import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/index.ts';
import { describePg, randomName } from './env.ts';

describePg('opening a database that does not exist', (url) => {
  it('is CONNECTION, naming the database', async () => {
    const database = randomName('engram_missing');
    const target = new URL(url);
    target.pathname = `/${database}`;
    const store = new PostgresStore({ connectionString: target.href });
    try {
      const error = await store.init().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: 'CONNECTION', adapter: 'pg' });
      expect((error as Error).message).toContain(`"${database}"`);
    } finally {
      await store.close();
    }
  });
});

describe('a connection string that is not a URL', () => {
  it('is INVALID_ARGUMENT saying so, before any connection', () => {
    let error: unknown;
    try {
      new PostgresStore({ connectionString: 'not a url' });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((error as Error).message).toMatch(/not a url/);
    expect((error as Error).message).not.toMatch(/ENOTFOUND/);
  });
});
