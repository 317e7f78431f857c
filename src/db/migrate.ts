/** Applies a pack's migrations with Kysely's Migrator, through the admin role, each pack in its own history table. */
import { Migrator } from 'kysely';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';
import { adminKysely } from './connect.js';

/** Where a pack's applied migrations are recorded. */
export function migrationTableOf(pack: Pack): string {
  return pack.migrationTable ?? `querygate_${pack.name}_migrations`;
}

export async function migrateToLatest(adminUrl: string, pack: Pack, readerRole: string, logger: Logger): Promise<void> {
  const db = adminKysely(adminUrl);
  try {
    const migrationTableName = migrationTableOf(pack);
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => pack.migrations({ readerRole }) },
      migrationTableName,
      migrationLockTableName: `${migrationTableName}_lock`,
    });
    const { error, results } = await migrator.migrateToLatest();
    for (const result of results ?? []) {
      logger.info('migration', { pack: pack.name, name: result.migrationName, status: result.status });
    }
    if (error) {
      throw new ConfigError(
        `migration of pack ${pack.name} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  } finally {
    await db.destroy();
  }
}
