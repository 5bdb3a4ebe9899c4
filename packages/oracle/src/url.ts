import { MemoryError } from '@engram/core/driver';

/** Credentials and where to connect, as an `oracle://` URL gives them or `OracleStore` takes them. */
export interface OracleConnectionConfig {
  user: string;
  password: string;
  /** Easy Connect (`host:1521/FREEPDB1`, with a URL's `?…` parameters), a TNS alias or a descriptor. */
  connectString: string;
}

/**
 * Parses `oracle://user:password@host:1521/FREEPDB1` (user and password percent-decoded, the
 * port optional, query parameters passed on as Easy Connect Plus parameters) into the options
 * `OracleStore` takes.
 */
export function parseOracleUrl(url: string): OracleConnectionConfig {
  if (!URL.canParse(url)) throw invalid('is not a URL');
  const parsed = new URL(url);
  if (parsed.protocol !== 'oracle:') throw invalid(`must start with oracle://, got ${parsed.protocol}//`);
  const service = decodeURIComponent(parsed.pathname.replace(/^\/+/, ''));
  if (!parsed.hostname) throw invalid('names no host');
  if (!service) throw invalid('names no service (oracle://user:password@host:1521/SERVICE)');
  if (!parsed.username) throw invalid('names no user');
  const port = parsed.port ? `:${parsed.port}` : '';
  return {
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    connectString: `${parsed.hostname}${port}/${service}${parsed.search}`,
  };
}

function invalid(reason: string): MemoryError {
  return new MemoryError('INVALID_ARGUMENT', `oracle: the connection URL ${reason}`, { adapter: 'oracle' });
}
