import { request } from 'node:http';
import type { InspectorServer } from '../src/server.ts';

/** A raw HTTP request, so Host, Origin and the token can be set (or left out) freely. */
export function call(
  server: InspectorServer,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: unknown;
    /** A body sent as is (JSON content type unless headers say otherwise). */
    raw?: string;
    token?: string | null;
  } = {},
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: the tests read answers of many shapes loosely
  json: () => any;
}> {
  const headers: Record<string, string> = { host: `127.0.0.1:${server.port}`, ...options.headers };
  const token = options.token === undefined ? server.token : options.token;
  if (token !== null) headers['x-engram-token'] = token;
  let body: string | undefined;
  if (options.body !== undefined || options.raw !== undefined) {
    body = options.raw ?? JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method: options.method ?? 'GET',
        headers,
        setHost: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
