/**
 * Top products and sales by category per customer region, for callers held to regions: the rollups
 * pack/rollups.ts declares, made by the engine (src/db/rollups/) with its one trigger design, filled
 * from the rows already there.
 */
import type { Migration } from 'kysely';
import { REGION_ROLLUPS } from '../pack/rollups.js';
import { rollupMigration } from '../src/db/rollups/index.js';

export function regionRollups(role: string): Migration {
  return rollupMigration(REGION_ROLLUPS, role);
}
