#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startBridge } from './server.ts';

/**
 * `engram-upstash-bridge`: serves the Upstash REST protocol on a local port and forwards to a
 * real Redis. For tests and local development only.
 *
 *   engram-upstash-bridge --port 8079 --redis-url redis://127.0.0.1:6379 --token dev-token
 *
 * Flags fall back to ENGRAM_BRIDGE_PORT, ENGRAM_REDIS_URL and ENGRAM_UPSTASH_TOKEN.
 */
const USAGE = `usage: engram-upstash-bridge [--port N] [--host H] [--redis-url URL] [--token T]
  --port       port to listen on (env ENGRAM_BRIDGE_PORT, default 8079)
  --host       interface to listen on (default 127.0.0.1)
  --redis-url  the real Redis (env ENGRAM_REDIS_URL, default redis://127.0.0.1:6379)
  --token      bearer token clients must send (env ENGRAM_UPSTASH_TOKEN, required)`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'redis-url': { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const token = values.token ?? process.env.ENGRAM_UPSTASH_TOKEN;
  if (!token) {
    console.error(`engram-upstash-bridge: a token is required\n${USAGE}`);
    process.exit(2);
  }
  const port = Number(values.port ?? process.env.ENGRAM_BRIDGE_PORT ?? 8079);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    console.error(`engram-upstash-bridge: bad port ${JSON.stringify(values.port)}`);
    process.exit(2);
  }
  const redisUrl = values['redis-url'] ?? process.env.ENGRAM_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const bridge = await startBridge({ redisUrl, token, port, host: values.host });
  console.error(`engram-upstash-bridge: ${bridge.url} -> ${redisUrl}`);
  const stop = () => {
    bridge.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`engram-upstash-bridge: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
