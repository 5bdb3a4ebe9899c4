import { mergeConfig } from 'vitest/config';
import { shared } from '../vitest.shared.ts';

/**
 * The shared settings, with test files run one at a time: the scenarios time kills, restarts
 * and lock waits, and two of them competing for the same two cores would blur those bounds.
 */
export default mergeConfig(shared, { test: { fileParallelism: false, testTimeout: 180_000 } });
