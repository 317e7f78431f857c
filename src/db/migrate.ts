/** Applies the migrations in migrations/ with Kysely's Migrator, through the admin role. */
import { Migrator } from 'kysely';
import { migrations } from '../../migrations/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';
import { adminKysely } from './connect.js';

export async function migrateToLatest(adminUrl: string, readerRole: string, logger: Logger): Promise<void> {
  const db = adminKysely(adminUrl);
  try {
    const migrator = new Migrator({
      db,
      provider: { getMigrations: async () => migrations({ readerRole }) },
    });
    const { error, results } = await migrator.migrateToLatest();
    for (const result of results ?? []) {
      logger.info('migration', { name: result.migrationName, status: result.status });
    }
    if (error) {
      throw new ConfigError(`migration failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  } finally {
    await db.destroy();
  }
}
