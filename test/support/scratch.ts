/**
 * Databases of a test's own, in the same cluster as the shared test database: for tests that take
 * locks, need hand-made rows, or must not disturb the data the other suites compute from.
 */
import { randomBytes } from 'node:crypto';
import { Migrator } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { DEFAULT_JOBS_ROLE, DEFAULT_READER_ROLE } from '../../src/config.js';
import { adminKysely, withDatabase } from '../../src/db/connect.js';
import { ensureJobStore } from '../../src/db/job-role.js';
import { migrateToLatest, migrationTableOf } from '../../src/db/migrate.js';
import { prepareDatabase } from '../../src/db/prepare.js';
import { salesPack } from '../../pack/index.js';
import { seedDatabase } from '../../pack/seed.js';
import { silentLogger } from '../../src/lib/logger.js';
import type { Pack } from '../../src/pack.js';
import { TEST_SEED, testReaderRole } from './database.js';
import { readerUrlFor } from './packs.js';

export interface ScratchDatabase {
  readonly name: string;
  readonly adminUrl: string;
  readonly readerUrl: string;
  /** The job role's URL: the scratch database's own job store. */
  readonly jobsUrl: string;
  /** An open admin connection to it. */
  readonly admin: pg.Client;
  drop(): Promise<void>;
}

export async function createScratchDatabase(
  prefix: string,
  seed?: { orders: number; until: string },
  /** The last migration to run, for a database of an older design; every one when omitted. */
  upTo?: string,
): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const server = new pg.Client({ connectionString: inject('adminUrl') });
  await server.connect();
  await createClosedDatabase(server, name);
  const adminUrl = withDatabase(inject('adminUrl'), name);
  const kysely = adminKysely(adminUrl);
  try {
    await ensureJobStore(kysely, DEFAULT_JOBS_ROLE);
    if (upTo !== undefined) {
      const table = migrationTableOf(salesPack);
      const { error } = await new Migrator({
        db: kysely,
        provider: { getMigrations: async () => salesPack.migrations({ readerRole: DEFAULT_READER_ROLE }) },
        migrationTableName: table,
        migrationLockTableName: `${table}_lock`,
      }).migrateTo(upTo);
      if (error) throw error;
    }
  } finally {
    await kysely.destroy();
  }
  if (upTo === undefined) await migrateToLatest(adminUrl, salesPack, DEFAULT_READER_ROLE, silentLogger);
  if (seed) await seedDatabase(adminUrl, { ...seed, replace: false }, silentLogger);
  return opened(server, name, inject('readerUrl'));
}

/**
 * A database of `pack`'s own, migrated for the pack's test reader and seeded with the pack's test data
 * (as the shared database is): for a test that adds rows the pack's other suites would count.
 */
export async function createPackScratchDatabase(prefix: string, pack: Pack): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const server = new pg.Client({ connectionString: inject('adminUrl') });
  await server.connect();
  await createClosedDatabase(server, name);
  const adminUrl = withDatabase(inject('adminUrl'), name);
  await pack.seed?.createTables?.(adminUrl, silentLogger);
  await prepareDatabase(adminUrl, { readerRole: testReaderRole(pack), packs: [pack] }, silentLogger);
  if (pack.seed) {
    const count = pack.seed.testCount ?? pack.seed.defaultCount;
    await pack.seed.run(adminUrl, { count, until: TEST_SEED.until, replace: true }, silentLogger);
  }
  return opened(server, name, readerUrlFor(pack));
}

/** The scratch database `name`, made through `server`: its URLs (the reader's from `readerUrl`) and an admin connection. */
async function opened(server: pg.Client, name: string, readerUrl: string): Promise<ScratchDatabase> {
  const adminUrl = withDatabase(inject('adminUrl'), name);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  return {
    name,
    adminUrl,
    readerUrl: withDatabase(readerUrl, name),
    jobsUrl: withDatabase(inject('jobsUrl'), name),
    admin,
    drop: async () => {
      await admin.end().catch(() => undefined);
      await server.query(`drop database if exists ${server.escapeIdentifier(name)} with (force)`);
      await server.end();
    },
  };
}

/**
 * Creates a database that PUBLIC can neither connect to nor make temporary tables in, without a
 * moment when it could: `querygate doctor` fails a reader that can create temporary tables in any
 * database of the cluster, and other suites run it (at every start of serve) in parallel.
 */
export async function createClosedDatabase(server: pg.Client, name: string): Promise<void> {
  const id = server.escapeIdentifier(name);
  await server.query(`create database ${id} with allow_connections = false`);
  await server.query(`revoke connect, temporary on database ${id} from public`);
  await server.query(`alter database ${id} with allow_connections = true`);
}

/** Polls until `check` holds; fails with `what` when it has not within `timeoutMs`. Not a timing assertion. */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How many reader backends of a database wait for a lock: a report's query caught mid-way by a test's lock. */
export async function readersWaitingOnLocks(watcher: pg.Client, database: string): Promise<number> {
  const { rows } = await watcher.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = $1 and usename = 'querygate_reader' and state = 'active' and wait_event_type = 'Lock'`,
    [database],
  );
  return rows[0]!.n;
}
