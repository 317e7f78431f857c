/**
 * Brings a database to a servable state: the reader role, the job store and its role, each pack
 * migrated, demo data where a pack is empty.
 */
import { DEFAULT_JOBS_ROLE } from '../config.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';
import { adminKysely, connectAdmin } from './connect.js';
import { migrateToLatest } from './migrate.js';
import { ensureJobStore } from './job-role.js';
import { setRolePassword } from './reader-password.js';
import { ensureReaderRole } from './reader-role.js';

/** Demo data for packs whose tables are still empty. */
export interface SeedIfEmpty {
  /** The last day with data (YYYY-MM-DD, UTC). */
  readonly until: string;
  /** How many main rows each pack gets, by pack name; a pack's own default otherwise. */
  readonly counts?: Readonly<Record<string, number>>;
}

export interface PrepareOptions {
  readonly readerRole: string;
  /** Sets the reader's password when given. */
  readonly readerPassword?: string;
  /** The role that reads and writes the job store; DEFAULT_JOBS_ROLE when omitted. */
  readonly jobsRole?: string;
  /** Sets the job role's password when given. */
  readonly jobsPassword?: string;
  readonly packs: readonly Pack[];
  readonly seedIfEmpty?: SeedIfEmpty;
}

export async function prepareDatabase(adminUrl: string, options: PrepareOptions, logger: Logger): Promise<void> {
  const jobsRole = options.jobsRole ?? DEFAULT_JOBS_ROLE;
  const db = adminKysely(adminUrl);
  try {
    await ensureReaderRole(db, options.readerRole);
    await ensureJobStore(db, jobsRole);
  } finally {
    await db.destroy();
  }
  for (const pack of options.packs) await migrateToLatest(adminUrl, pack, options.readerRole, logger);
  const admin = await connectAdmin(adminUrl);
  const empty: Pack[] = [];
  try {
    if (options.readerPassword !== undefined) {
      await setRolePassword(admin, options.readerRole, options.readerPassword);
    }
    if (options.jobsPassword !== undefined) await setRolePassword(admin, jobsRole, options.jobsPassword);
    if (options.seedIfEmpty) {
      for (const pack of options.packs) if (pack.seed && (await pack.seed.isEmpty(admin))) empty.push(pack);
    }
  } finally {
    await admin.end();
  }
  for (const pack of empty) {
    const count = options.seedIfEmpty!.counts?.[pack.name] ?? pack.seed!.defaultCount;
    logger.info('seeding demo data into an empty database', { pack: pack.name, [pack.seed!.unit]: count });
    await pack.seed!.run(adminUrl, { count, until: options.seedIfEmpty!.until, replace: false }, logger);
  }
}
