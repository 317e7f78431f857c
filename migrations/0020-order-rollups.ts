/**
 * The rollups of the orders themselves, order_hours, region_days and region_hours, move to the
 * engine's one trigger design: their hand-written triggers, functions, views and tables (0005, 0008,
 * 0014, reworked by 0006, 0009 and 0010) are dropped, and the engine makes each again from its
 * declaration (pack/rollups.ts, ORDER_ROLLUPS), filled from the orders already there; and the facts'
 * trigger of the rollups 0015 made fires, as the engine makes it now, only on the columns a rollup
 * reads (orders are facts here, and every item written touches its order). The migrator
 * runs it in one transaction: no reader sees a rollup missing or empty, and the figures are the
 * base rows', as they were.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { ORDER_ROLLUPS, REGION_ROLLUPS } from '../pack/rollups.js';
import { rollupMigration, rollupSumsTriggerMigration } from '../src/db/rollups/index.js';

/** What 0005, 0008 and 0014 made by hand, as they stand after 0006, 0009 and 0010. */
async function dropHandWritten(db: Kysely<unknown>): Promise<void> {
  for (const [table, trigger] of [
    ['orders', 'orders_order_hours'],
    ['orders', 'orders_order_hours_truncate'],
    ['orders', 'orders_region_days'],
    ['orders', 'orders_region_days_truncate'],
    ['customers', 'customers_region_days'],
    ['customers', 'customers_region_days_truncate'],
    ['orders', 'orders_region_hours'],
    ['orders', 'orders_region_hours_truncate'],
    ['customers', 'customers_region_hours'],
    ['customers', 'customers_region_hours_truncate'],
  ] as const) {
    await sql`drop trigger ${sql.id(trigger)} on ${sql.id('sales', table)}`.execute(db);
  }
  for (const name of ['order_hours', 'region_days', 'region_hours']) {
    await sql`drop view ${sql.id('reporting', name)}`.execute(db);
    await sql`drop table ${sql.id('sales', name)}`.execute(db);
  }
  await sql`
    drop function sales.order_hours_apply(), sales.order_hours_rebuild(), sales.order_hours_truncate(),
      sales.region_days_orders(), sales.region_days_customers(), sales.region_days_truncate(),
      sales.region_days_rebuild(), sales.region_days_add(timestamptz, text, text, text, bigint, numeric),
      sales.region_hours_orders(), sales.region_hours_customers(), sales.region_hours_truncate(),
      sales.region_hours_rebuild(), sales.region_hours_add(timestamptz, text, text, text, bigint, numeric)`.execute(db);
}

/**
 * The down of a migration that replaced hand-written rollups: it refuses, in one line, since the
 * hand-written design it would have to make again is what the move was for.
 */
export function cannotUndo(name: string): () => Promise<void> {
  return async () => {
    throw new Error(
      `${name} cannot be undone: it replaced hand-written rollup triggers with the engine's; restore a backup taken before it`,
    );
  };
}

export function orderRollups(role: string): Migration {
  const generated = rollupMigration(ORDER_ROLLUPS, role);
  const narrowed = rollupSumsTriggerMigration(REGION_ROLLUPS);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await dropHandWritten(db);
      await generated.up(db);
      // The rollups 0015 made get the facts' trigger as the engine makes it now: on the columns read.
      await narrowed.up(db);
    },
    down: cannotUndo('0020-order-rollups'),
  };
}
