import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Bridge, startBridge } from '@engram/upstash/bridge';
import { sleep } from './spawn.ts';

const run = promisify(execFile);

/** Last-resort stops for servers still running when the test process exits (a timeout, a crash). */
const onExit = new Set<() => void>();
process.once('exit', () => {
  for (const stop of onExit) {
    try {
      stop();
    } catch {
      // Best effort: the process is going away.
    }
  }
});

/**
 * A server started for one test only, never one of the machine's shared servers: its own data
 * directory and a free port. `stop` kills it abruptly (as a crash would), `start` brings it back
 * on the same port and data.
 */
export interface DedicatedServer {
  readonly url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it for good and removes its data. */
  destroy(): Promise<void>;
}

/** A TCP port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on the port; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await sleep(100);
  }
}

function which(name: string, extra: string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(':'), ...extra]) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** A spawned server process that can be killed and started again with the same arguments. */
function processServer(
  url: string,
  port: number,
  command: string,
  args: string[],
  dir: string,
): DedicatedServer {
  let child: ChildProcess | undefined;
  const killNow = () => child?.kill('SIGKILL');
  const start = async () => {
    child = spawn(command, args, { stdio: 'ignore' });
    onExit.add(killNow);
    await waitForPort(port);
  };
  const stop = async () => {
    const current = child;
    child = undefined;
    if (!current || current.exitCode !== null) return;
    const exited = new Promise((resolve) => current.once('exit', resolve));
    current.kill('SIGKILL');
    await exited;
  };
  return {
    url,
    start,
    stop,
    destroy: async () => {
      await stop();
      onExit.delete(killNow);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A throwaway PostgreSQL cluster (initdb + pg_ctl, as user `postgres` when running as root) on a
 * free port. `stop` is `pg_ctl stop -m immediate`: the server dies without a checkpoint, as in a
 * crash, and recovers from its WAL on `start`.
 */
export async function startPostgres(): Promise<DedicatedServer> {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort() : [];
  const extra = versions.reverse().map((v) => `/usr/lib/postgresql/${v}/bin`);
  const initdb = which('initdb', extra);
  const pgCtl = which('pg_ctl', extra);
  if (!initdb || !pgCtl) throw new Error('initdb/pg_ctl not found (install postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'engram-faults-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const asPostgres = (command: string, args: string[]) => {
    const line = [command, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
    return asRoot ? run('su', ['postgres', '-s', '/bin/bash', '-c', line]) : run(command, args);
  };
  await asPostgres(initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '-N']);
  const port = await freePort();
  const options = `-p ${port} -k ${data} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  const start = async () => {
    await asPostgres(pgCtl, [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      options,
      'start',
    ]);
  };
  const stop = async () => {
    await asPostgres(pgCtl, ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
  };
  const stopNow = () => {
    const args = [pgCtl, '-D', data, '-m', 'immediate', 'stop'];
    if (asRoot)
      execFileSync('su', ['postgres', '-s', '/bin/bash', '-c', args.join(' ')], { stdio: 'ignore' });
    else execFileSync(pgCtl, args.slice(1), { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  onExit.add(stopNow);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop,
    destroy: async () => {
      await stop();
      onExit.delete(stopNow);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A Redis of its own with an append-only file synced on every write (`appendfsync always`), so
 * a write it answered survives being killed. `stop` is SIGKILL.
 */
export async function startRedis(): Promise<DedicatedServer> {
  const bin = which('redis-server');
  if (!bin) throw new Error('redis-server not found (install redis-server)');
  const dir = mkdtempSync(join(tmpdir(), 'engram-faults-redis-'));
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes'];
  const server = processServer(
    `redis://127.0.0.1:${port}`,
    port,
    bin,
    [...args, '--appendfsync', 'always', '--dir', dir],
    dir,
  );
  await server.start();
  return server;
}

/** The local Upstash-REST bridge on a port of its own; `stop` closes it, `start` listens again. */
export async function startDedicatedBridge(redisUrl: string, token: string): Promise<DedicatedServer> {
  const port = await freePort();
  let bridge: Bridge | undefined = await startBridge({ redisUrl, token, port });
  const stop = async () => {
    const current = bridge;
    bridge = undefined;
    await current?.close();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    stop,
    start: async () => {
      bridge = await startBridge({ redisUrl, token, port });
    },
    destroy: stop,
  };
}

/** The FerretDB binary `scripts/mongodb.sh` uses (or built), or `undefined`. */
function ferretdbBinary(): string | undefined {
  const candidates = [
    process.env.ENGRAM_FERRETDB_BIN,
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'engram/ferretdb-v1.24.2/ferretdb'),
    which('ferretdb'),
  ];
  return candidates.find((c): c is string => typeof c === 'string' && existsSync(c));
}

/** A FerretDB process of its own (SQLite backend in its own directory) on a free port. `stop` is SIGKILL. */
export async function startFerretDb(): Promise<DedicatedServer> {
  const bin = ferretdbBinary();
  if (!bin) throw new Error('no FerretDB binary; run scripts/mongodb.sh once to build it');
  const dir = mkdtempSync(join(tmpdir(), 'engram-faults-ferretdb-'));
  mkdirSync(join(dir, 'data'));
  const port = await freePort();
  const server = processServer(
    `mongodb://127.0.0.1:${port}/`,
    port,
    bin,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${join(dir, 'data')}/`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${dir}`,
      '--telemetry=disable',
      '--debug-addr=-',
      '--log-level=warn',
    ],
    dir,
  );
  await server.start();
  return server;
}

/** A dedicated server as a restart scenario uses it: what its outage is called. */
export interface NamedServer extends DedicatedServer {
  /** How the outage reads in the report (`'postgres killed (pg_ctl stop -m immediate)'`). */
  readonly outage: string;
}

/**
 * The dedicated servers an adapter's restart scenario can start, by the names adapters.json lists
 * in an adapter's `dedicatedServers` (in start order): each gets the URL of the one started
 * before it (the bridge needs its Redis) and the REST token.
 */
export const DEDICATED_SERVERS: Record<
  string,
  (previous: string | undefined, token: string) => Promise<NamedServer>
> = {
  postgres: async () => ({
    ...(await startPostgres()),
    outage: 'postgres killed (pg_ctl stop -m immediate)',
  }),
  redis: async () => ({ ...(await startRedis()), outage: 'redis killed (SIGKILL, AOF fsync always)' }),
  bridge: async (redis, token) => {
    if (!redis) throw new Error('the bridge needs a Redis started before it');
    return { ...(await startDedicatedBridge(redis, token)), outage: 'bridge closed' };
  },
  ferretdb: async () => ({ ...(await startFerretDb()), outage: 'ferretdb killed (SIGKILL)' }),
};
