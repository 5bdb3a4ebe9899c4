import { runConformance } from '@engram/conformance';
import { afterAll } from 'vitest';
import { descriptor } from '../src/descriptor.ts';
import type { UpstashStore } from '../src/index.ts';
import { runPrefix, upstashSkip, upstashUrl } from './env.ts';
import { breakStore, dropPrefix, keysWithValues, storesWithSecret, testStore } from './stores.ts';

const prefix = runPrefix('conformance');
process.env.ENGRAM_UPSTASH_TEST_PREFIX = prefix;

runConformance({
  name: 'upstash',
  skip: upstashSkip,
  create: async () => {
    if (!upstashUrl) throw new Error('ENGRAM_UPSTASH_URL must be set: upstash is listed in ENGRAM_REQUIRE');
    return testStore(prefix);
  },
  destroy: (store) => store.close(),
  worker: new URL('./worker.ts', import.meta.url),
  // A new key prefix per call; worker.ts opens it through ENGRAM_UPSTASH_TEST_PREFIX.
  fresh: () => {
    const freshPrefix = runPrefix('fresh');
    return {
      env: { ENGRAM_UPSTASH_TEST_PREFIX: freshPrefix },
      create: () => testStore(freshPrefix),
      createWithoutKeywords: () => testStore(freshPrefix, { keywords: false }),
      drop: () => dropPrefix(freshPrefix),
    };
  },
  processes: 4,
  // The lease a working-memory writer takes after a lost compare-and-set.
  leaseMs: descriptor.leaseMs(),
  breakConnection: (store) => breakStore(store as UpstashStore),
  storedRows: () => keysWithValues(prefix),
  withSecret: storesWithSecret,
});

afterAll(async () => {
  if (upstashUrl) await dropPrefix(prefix);
});
