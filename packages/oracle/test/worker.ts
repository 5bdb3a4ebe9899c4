import type { MemoryStorage } from '@engram/core';
import { OracleStore } from '../src/index.ts';
import { oracleConfig } from './env.ts';

/** A store of its own, in a process of its own, for the cross-process races. */
export async function create(): Promise<MemoryStorage> {
  const config = oracleConfig();
  if (!config) throw new Error('the oracle worker needs ENGRAM_ORACLE_URL');
  return new OracleStore({ ...config, poolAttributes: { poolMax: 2 } });
}
