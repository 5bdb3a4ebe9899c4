import { InMemoryStore } from '@engram/core';
import { runConformance } from '../src/index.ts';
import { referenceInit } from './support/stores.ts';

// The whole suite against the reference store, with a backend the errors area can break.
runConformance(referenceInit);

// The plain reference store: no breakConnection, so those checks skip with the reason in the name.
runConformance({ name: 'memory (no breakConnection)', create: () => new InMemoryStore() });

// The JSON-file store, shared by OS processes, runs the whole suite in json-store.test.ts.
