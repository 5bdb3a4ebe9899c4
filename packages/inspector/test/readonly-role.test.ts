import { randomBytes } from 'node:crypto';
import { describeService } from '@engram/conformance';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Inspector } from '../src/inspector.ts';
import { type OpenedStore, openStore } from '../src/open.ts';
import { ADAPTERS, type Seeded, seed, type TestStore, tempDir } from './support.ts';

const pgCase = ADAPTERS.find((a) => a.name === 'pg')!;

/** What the README recommends for production: a PostgreSQL role that may only SELECT. */
describeService(pgCase.service!, 'pg: the inspector under a SELECT-only role', (url) => {
  const role = `inspect_ro_${randomBytes(4).toString('hex')}`;
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let store: TestStore;
  let owner: OpenedStore;
  let readOnly: OpenedStore;
  let seeded: Seeded;

  async function admin(sql: string): Promise<void> {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    tmp = await tempDir();
    store = await pgCase.create(url, tmp.dir);
    owner = await openStore(store.spec, store.settings);
    seeded = await seed(owner.memory);
    const schema = store.settings.pgSchema!;
    await admin(`CREATE ROLE ${role} LOGIN`);
    await admin(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    await admin(`GRANT SELECT ON ALL TABLES IN SCHEMA ${schema} TO ${role}`);
    const asRole = new URL(url);
    asRole.username = role;
    asRole.password = '';
    readOnly = await openStore(asRole.toString(), store.settings);
  });

  afterAll(async () => {
    await readOnly?.close();
    await owner?.close();
    await store?.cleanup();
    await admin(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin(`DROP ROLE IF EXISTS ${role}`);
    await tmp?.remove();
  });

  it('shows threads, messages, working memory and the prompt', async () => {
    const inspector = new Inspector({ memory: readOnly.memory });
    const view = await inspector.thread(seeded.trip);
    expect(view.messages.map((m) => m.id)).toEqual(seeded.messageIds);
    expect(view.workingMemory?.resource.value).toBe(
      await owner.memory.getWorkingMemory({ resourceId: seeded.resourceId }),
    );
    expect('text' in view.prompt).toBe(true);
    expect((await inspector.threads({ resourceId: seeded.resourceId })).total).toBe(3);
  });

  it('cannot write even with --allow-edits: the database refuses, nothing changes', async () => {
    const inspector = new Inspector({ memory: readOnly.memory, allowEdits: true });
    const before = await owner.memory.getWorkingMemory({ resourceId: seeded.resourceId });
    const error = await inspector
      .editWorkingMemory({ scope: 'resource', resourceId: seeded.resourceId, base: before, value: '{}' })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('STORAGE');
    expect(String((error as Error).message)).toMatch(/permission denied/);
    await expect(inspector.deleteMessage(seeded.trip, seeded.messageIds[0]!)).rejects.toMatchObject({
      code: 'STORAGE',
    });
    expect(await owner.memory.getWorkingMemory({ resourceId: seeded.resourceId })).toBe(before);
    expect((await owner.memory.recall({ threadId: seeded.trip })).length).toBe(3);
  });
});
