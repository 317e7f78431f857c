/** Brings a database to a servable state: migrated, reader password set, demo data when empty. */
import type { Logger } from '../logger.js';
import { connectAdmin } from './connect.js';
import { migrateToLatest } from './migrate.js';
import { setReaderPassword } from './reader-password.js';
import { seedDatabase, type SeedOptions } from './seed.js';

export interface PrepareOptions {
  readonly readerRole: string;
  /** Sets the reader's password when given. */
  readonly readerPassword?: string;
  /** Seeds demo data when given and the database holds no orders yet. */
  readonly seedIfEmpty?: Omit<SeedOptions, 'replace'>;
}

export async function prepareDatabase(adminUrl: string, options: PrepareOptions, logger: Logger): Promise<void> {
  await migrateToLatest(adminUrl, options.readerRole, logger);
  const admin = await connectAdmin(adminUrl);
  let empty: boolean;
  try {
    if (options.readerPassword !== undefined)
      await setReaderPassword(admin, options.readerRole, options.readerPassword);
    const { rows } = await admin.query<{ empty: boolean }>('select not exists (select 1 from sales.orders) as empty');
    empty = rows[0]!.empty;
  } finally {
    await admin.end();
  }
  if (empty && options.seedIfEmpty) {
    logger.info('seeding demo data into an empty database', { orders: options.seedIfEmpty.orders });
    await seedDatabase(adminUrl, { ...options.seedIfEmpty, replace: false }, logger);
  }
}
