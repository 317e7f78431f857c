/**
 * The declared rollups of databases migrated before the range rebuild gain it: a month of
 * sales.region_product_days or sales.region_category_days is made again from its own base rows,
 * `select sales.region_product_days_rebuild_range('2025-03-01', '2025-04-01')`, without the other months.
 */
import type { Migration } from 'kysely';
import { REGION_ROLLUPS } from '../pack/rollups.js';
import { rollupRangeRebuildMigration } from '../src/db/rollups/index.js';

export const rollupRangeRebuild: Migration = rollupRangeRebuildMigration(REGION_ROLLUPS);
