import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { OracleDbType } from '../src/oracledb.ts';
import { executeOptions } from '../src/session.ts';
import { oracledb } from './fixtures.ts';

const require = createRequire(import.meta.url);
const raw = require('oracledb') as Record<string, OracleDbType & { name: string }>;
const ResultSetImpl = require('oracledb/lib/impl/resultset.js') as new () => {
  _determineFetchType(
    metadata: { name: string; dbType: object; fetchType?: { name: string } },
    options: object,
  ): void;
};

/** The fetch type the driver settles on for a column of `dbType` with our execute options. */
function fetchTypeOf(dbType: OracleDbType): string | undefined {
  const metadata: { name: string; dbType: object; fetchType?: { name: string } } = { name: 'C', dbType };
  new ResultSetImpl()._determineFetchType(metadata, executeOptions(oracledb));
  return metadata.fetchType?.name;
}

describe('execute options', () => {
  it('returns rows as objects and never auto-commits', () => {
    const options = executeOptions(oracledb);
    expect(options.outFormat).toBe(raw.OUT_FORMAT_OBJECT);
    expect(options.autoCommit).toBe(false);
  });

  it('fetches CLOB and NCLOB columns as whole strings (a LONG fetch), not as Lob streams', () => {
    expect(fetchTypeOf(raw.DB_TYPE_CLOB!)).toBe('DB_TYPE_LONG');
    expect(fetchTypeOf(raw.DB_TYPE_NCLOB!)).toBe('DB_TYPE_LONG_NVARCHAR');
  });

  it('leaves every other column to the driver defaults', () => {
    expect(fetchTypeOf(raw.DB_TYPE_VARCHAR!)).toBe('DB_TYPE_VARCHAR');
    expect(fetchTypeOf(raw.DB_TYPE_NUMBER!)).toBe('DB_TYPE_NUMBER');
    expect(fetchTypeOf(raw.DB_TYPE_BLOB!)).toBe('DB_TYPE_BLOB');
  });
});
