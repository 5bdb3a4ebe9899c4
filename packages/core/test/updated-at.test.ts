import { describe, expect, it } from 'vitest';
import { bumpedUpdatedAt, newestByThread } from '../src/driver.ts';

const d = (ms: number) => new Date(ms);

describe('bumpedUpdatedAt', () => {
  it('is the latest of the stored updatedAt, the write time and the saved messages', () => {
    expect(bumpedUpdatedAt(d(10), d(20))).toEqual(d(20));
    expect(bumpedUpdatedAt(d(30), d(20))).toEqual(d(30));
    expect(bumpedUpdatedAt(d(10), d(20), [d(5), d(40), d(15)])).toEqual(d(40));
  });
});

describe('newestByThread', () => {
  it('keeps the newest createdAt of each thread', () => {
    const newest = newestByThread([
      { threadId: 'a', createdAt: d(3) },
      { threadId: 'b', createdAt: d(1) },
      { threadId: 'a', createdAt: d(7) },
      { threadId: 'a', createdAt: d(5) },
    ]);
    expect([...newest]).toEqual([
      ['a', d(7)],
      ['b', d(1)],
    ]);
  });
});
