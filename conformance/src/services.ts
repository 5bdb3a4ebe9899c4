/**
 * Which database services a test run has, read from the environment: each adapter's URL
 * variable, and `ENGRAM_REQUIRE` (a comma list such as `libsql,pg,upstash,mongodb`) naming the
 * services whose absence is a failure rather than a skip.
 */

/** A database service that some tests need. */
export interface Service {
  /** The name `ENGRAM_REQUIRE` uses for it (`'pg'`, `'mongodb'`, …). */
  name: string;
  /** The environment variable holding its URL (`'ENGRAM_PG_URL'`). */
  urlVar: string;
  /** How to get one (`'start a server with scripts/pg.sh'`). */
  hint: string;
  /** The URL from its environment variable, when set. */
  url: string | undefined;
  /** True when `ENGRAM_REQUIRE` lists it: a missing URL is then a failure. */
  required: boolean;
  /** Why tests that need it are skipped; `undefined` when they run (or must). */
  skipReason: string | undefined;
}

/** The services `ENGRAM_REQUIRE` lists. */
export function requiredServices(env: NodeJS.ProcessEnv = process.env): Set<string> {
  return new Set(
    (env.ENGRAM_REQUIRE ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

/**
 * Reads one service: `urlVar` holds its URL, `hint` says how to get one (e.g. "start a server
 * with scripts/pg.sh").
 */
export function service(
  name: string,
  urlVar: string,
  hint: string,
  env: NodeJS.ProcessEnv = process.env,
): Service {
  const url = env[urlVar] || undefined;
  const required = requiredServices(env).has(name);
  return {
    name,
    urlVar,
    hint,
    url,
    required,
    skipReason: url || required ? undefined : `${urlVar} is not set; ${hint}`,
  };
}

/** The message a required service without a URL fails with. */
export function missingService(s: Service): string {
  return `ENGRAM_REQUIRE lists ${s.name} but ${s.urlVar} is not set; ${s.hint}`;
}
