import { expect, it } from 'vitest';
import { runCrash } from '../src/crash.ts';
import { provision } from '../src/services.ts';

/**
 * The crash scenario must catch a store that breaks the guarantee: here every writer runs on
 * `AckBeforeCommitStore`, which answers before the write lands (1 s later), so each SIGKILL
 * drops writes its process had reported as acknowledged.
 */
it('meta: the writer-crash checker reports lost acknowledged writes when a store acknowledges before committing', async () => {
  const space = await provision('libsql', 'meta');
  try {
    const result = await runCrash({
      target: space.target,
      until: { kills: 4, acks: 20 },
      ackBeforeCommitMs: 1_000,
    });
    const v = result.verdict;
    console.log(
      `meta (ack-before-commit on libsql): ${result.kills} kills, ${result.acks} acks, checker found ${v.lost.length} acknowledged writes lost, e.g. ${v.lost[0]}`,
    );
    expect(result.kills).toBeGreaterThanOrEqual(4);
    expect(v.lost.length).toBeGreaterThan(0);
    expect(v.problems.length).toBeGreaterThanOrEqual(v.lost.length);
  } finally {
    await space.cleanup();
  }
}, 900_000);
