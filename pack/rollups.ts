/**
 * The sales pack's declared rollups: the engine makes their tables, triggers, rebuilds, reader views
 * and checks (src/db/rollups/), and migration 0015 runs it. Both are keyed region first, for the
 * callers that read by customer region: a caller scoped to some regions, or a region asked for, reads
 * its top products and its sales by category from them as an unscoped caller reads product_days and
 * category_days (the rollups 0007 and 0013 wrote by hand, which have no region).
 *
 * region_category_days sums sales.order_categories, each order's items per category, which 0013's
 * triggers keep: a row of it is one order holding the category, so a count of them counts orders
 * once per category however many items they hold. Those triggers take an order's rows out while the
 * order is still there, before it is deleted, as the engine needs of facts with no foreign key.
 */
import type { RollupDeclaration } from '../src/db/rollups/index.js';

const ORDER_AND_CUSTOMER = [
  { table: 'orders', key: 'id', link: 'order_id' },
  { table: 'customers', key: 'id', link: 'customer_id' },
] as const;

const REGION_DAY = [
  { name: 'region', from: 'customers', column: 'region' },
  { name: 'day', from: 'orders', column: 'ordered_at', truncate: 'day' },
] as const;

const STATUS_CURRENCY = [
  { name: 'status', from: 'orders', column: 'status' },
  { name: 'currency', from: 'orders', column: 'currency' },
] as const;

export const REGION_ROLLUPS: readonly RollupDeclaration[] = [
  {
    name: 'region_product_days',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'order_items',
    parents: ORDER_AND_CUSTOMER,
    keys: [...REGION_DAY, { name: 'product_id', from: 'facts', column: 'product_id' }, ...STATUS_CURRENCY],
    measures: [
      // The size count: no template reads it, so the reader is not granted it (migration 0016).
      { name: 'lines', count: true, unread: true },
      { name: 'units', sum: ['quantity'] },
      { name: 'revenue', sum: ['quantity', 'unit_price'], scale: 2 },
    ],
  },
  {
    name: 'region_category_days',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'order_categories',
    parents: ORDER_AND_CUSTOMER,
    keys: [...REGION_DAY, { name: 'category', from: 'facts', column: 'category' }, ...STATUS_CURRENCY],
    measures: [
      { name: 'order_count', count: true },
      { name: 'revenue', sum: ['revenue'], scale: 2 },
    ],
  },
];
