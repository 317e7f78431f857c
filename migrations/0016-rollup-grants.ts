/**
 * The reader reads only the rollup columns the templates read: databases migrated before the
 * declarations said which (0015 granted every column) lose reporting.region_product_days.lines.
 */
import type { Migration } from 'kysely';
import { REGION_ROLLUPS } from '../pack/rollups.js';
import { rollupGrantsMigration } from '../src/db/rollups/index.js';

export function rollupGrants(role: string): Migration {
  return rollupGrantsMigration(REGION_ROLLUPS, role);
}
