import { type OracleConnectionConfig, parseOracleUrl } from '../src/url.ts';

/**
 * Where the tests find an Oracle server: `ENGRAM_ORACLE_URL`
 * (`oracle://engram:engram@127.0.0.1:1521/FREEPDB1`, the docker-compose service `oracle`), or
 * `ENGRAM_ORACLE_USER`, `ENGRAM_ORACLE_PASSWORD` and `ENGRAM_ORACLE_CONNECT_STRING`.
 */
export function oracleConfig(env: NodeJS.ProcessEnv = process.env): OracleConnectionConfig | undefined {
  if (env.ENGRAM_ORACLE_URL) return parseOracleUrl(env.ENGRAM_ORACLE_URL);
  const {
    ENGRAM_ORACLE_USER: user,
    ENGRAM_ORACLE_PASSWORD: password,
    ENGRAM_ORACLE_CONNECT_STRING: connectString,
  } = env;
  if (user && password !== undefined && connectString) return { user, password, connectString };
  return undefined;
}

/** True when `ENGRAM_REQUIRE` lists `oracle`: a missing server is then a failure, not a skip. */
export function oracleRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.ENGRAM_REQUIRE ?? '')
    .split(',')
    .map((s) => s.trim())
    .includes('oracle');
}

/** The printed reason when no server is configured. */
export const SKIP_REASON =
  'ENGRAM_ORACLE_URL is not set: start the docker-compose service `oracle` (gvenzl/oracle-free) and set ' +
  'ENGRAM_ORACLE_URL=oracle://engram:engram@127.0.0.1:1521/FREEPDB1 (or ENGRAM_ORACLE_USER, ' +
  'ENGRAM_ORACLE_PASSWORD and ENGRAM_ORACLE_CONNECT_STRING)';
