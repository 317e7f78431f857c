/**
 * sales.product_days moves to the engine's one trigger design, as 0020 moved the rollups of the
 * orders: what 0007 made by hand (as 0009 and 0010 left it) is dropped, and the engine makes it again
 * from its declaration (pack/rollups.ts, PRODUCT_ROLLUPS), with a count of item lines as its size,
 * filled from the items already there, in the migrator's one transaction.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { PRODUCT_ROLLUPS } from '../pack/rollups.js';
import { cannotUndo } from './0020-order-rollups.js';
import { rollupMigration } from '../src/db/rollups/index.js';

async function dropHandWritten(db: Kysely<unknown>): Promise<void> {
  for (const [table, trigger] of [
    ['order_items', 'order_items_product_days'],
    ['order_items', 'order_items_product_days_truncate'],
    ['orders', 'orders_product_days'],
    ['orders', 'orders_product_days_delete'],
    ['orders', 'orders_product_days_truncate'],
  ] as const) {
    await sql`drop trigger ${sql.id(trigger)} on ${sql.id('sales', table)}`.execute(db);
  }
  await sql`drop view reporting.product_days`.execute(db);
  await sql`drop table sales.product_days`.execute(db);
  await sql`
    drop function sales.product_days_items(), sales.product_days_orders(), sales.product_days_order_deleted(),
      sales.product_days_truncate(), sales.product_days_rebuild(),
      sales.product_days_add(timestamptz, bigint, text, text, bigint, numeric),
      sales.product_days_order(bigint, timestamptz, text, text, integer)`.execute(db);
}

export function productDaysGenerated(role: string): Migration {
  const generated = rollupMigration(PRODUCT_ROLLUPS, role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await dropHandWritten(db);
      await generated.up(db);
    },
    down: cannotUndo('0021-product-days'),
  };
}
