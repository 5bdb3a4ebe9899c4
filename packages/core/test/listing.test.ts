import { describe, expect, it } from 'vitest';
import { chunks, pageTotal } from '../src/driver.ts';
import type { Thread } from '../src/index.ts';
import { threadPage } from '../src/storage/listing.ts';

describe('pageTotal', () => {
  const counted = (total: number) => {
    const calls: number[] = [];
    const count = async () => {
      calls.push(1);
      return total;
    };
    return { calls, count };
  };

  it('takes the total from a partly filled page, an empty first page or perPage false', async () => {
    const { calls, count } = counted(999);
    expect(await pageTotal(3, 2, 10, count)).toBe(23);
    expect(await pageTotal(0, 0, 10, count)).toBe(0);
    expect(await pageTotal(7, 0, false, count)).toBe(7);
    expect(calls).toHaveLength(0);
  });

  it('counts behind a full page and an empty page past the first', async () => {
    const { calls, count } = counted(42);
    expect(await pageTotal(10, 0, 10, count)).toBe(42);
    expect(await pageTotal(0, 5, 10, count)).toBe(42);
    expect(await pageTotal(0, 0, 0, count)).toBe(42);
    expect(calls).toHaveLength(3);
  });
});

describe('threadPage', () => {
  const thread = (id: string, metadata: Thread['metadata']): Thread => ({
    id,
    resourceId: 'r',
    title: '',
    metadata,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  });

  it('filters candidates by metadata (JSON equality, key order ignored) and pages what matches', async () => {
    const threads = [
      thread('a', { tag: { x: 1, y: 2 } }),
      thread('b', { tag: { y: 2, x: 1 } }),
      thread('c', { tag: { x: 1 } }),
      thread('d', { tag: { x: 1, y: 2 }, other: true }),
    ];
    const page = await threadPage(
      { kind: 'candidates', threads },
      { page: 1, perPage: 2, metadata: { tag: { x: 1, y: 2 } } },
    );
    expect(page.threads.map((t) => t.id)).toEqual(['d']);
    expect(page).toMatchObject({ total: 3, page: 1, perPage: 2, hasMore: false });
  });
});

describe('chunks', () => {
  it('slices in order, the last one shorter, and never empty slices or a size below one', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([1, 2, 3], 3)).toEqual([[1, 2, 3]]);
    expect(chunks([], 4)).toEqual([]);
    expect(chunks(['a', 'b'], 0)).toEqual([['a'], ['b']]);
    expect(
      chunks(
        Array.from({ length: 10_001 }, (_, i) => i),
        10_000,
      ).map((part) => part.length),
    ).toEqual([10_000, 1]);
  });
});
