/**
 * The sales pack's declared rollups: the engine makes their tables, triggers, rebuilds, reader views
 * and checks (src/db/rollups/). Migration 0015 made the two keyed region first, for the callers that
 * read by customer region: a caller scoped to some regions, or a region asked for, reads its top
 * products and its sales by category from them as an unscoped caller reads product_days and
 * category_days. Migrations 0020 and 0021 moved order_hours, region_days, region_hours and
 * product_days from the triggers older migrations wrote by hand to the engine's; order_categories and
 * category_days (0013) are the hand-written ones left.
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

/** An order's own status and currency, for rollups of the orders themselves. */
const FACT_STATUS_CURRENCY = [
  { name: 'status', from: 'facts', column: 'status' },
  { name: 'currency', from: 'facts', column: 'currency' },
] as const;

const ORDER_MEASURES = [
  { name: 'order_count', count: true },
  { name: 'total_amount', sum: ['total_amount'], scale: 2 },
] as const;

/** The orders per customer region, UTC day or hour, status and currency. */
function regionOrders(name: string, truncate: 'day' | 'hour'): RollupDeclaration {
  return {
    name,
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'orders',
    parents: [{ table: 'customers', key: 'id', link: 'customer_id' }],
    keys: [
      { name: truncate, from: 'facts', column: 'ordered_at', truncate },
      { name: 'region', from: 'customers', column: 'region' },
      ...FACT_STATUS_CURRENCY,
    ],
    measures: ORDER_MEASURES,
  };
}

/**
 * The rollups older migrations keep with triggers written by hand, declared so that check-rollups
 * compares each with its base rows: derived facts first. sales.order_categories (each order's items per
 * category) is summed by category_days and region_category_days; checked against the items and their
 * products, a product moved with its triggers bypassed is found below the rollups that sum it.
 */
export const HAND_WRITTEN_ROLLUPS: readonly RollupDeclaration[] = [
  {
    name: 'order_categories',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'order_items',
    parents: [{ table: 'products', key: 'id', link: 'product_id' }],
    keys: [
      { name: 'order_id', from: 'facts', column: 'order_id' },
      { name: 'category', from: 'products', column: 'category' },
    ],
    measures: [
      { name: 'items', count: true },
      { name: 'revenue', sum: ['quantity', 'unit_price'], scale: 2 },
    ],
    handWritten: { migration: '0013-category-days', rebuild: 'sales.category_days_rebuild' },
  },
  {
    name: 'category_days',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'order_categories',
    parents: [{ table: 'orders', key: 'id', link: 'order_id' }],
    keys: [
      { name: 'day', from: 'orders', column: 'ordered_at', truncate: 'day' },
      { name: 'category', from: 'facts', column: 'category' },
      ...STATUS_CURRENCY,
    ],
    measures: [
      { name: 'order_count', count: true },
      { name: 'revenue', sum: ['revenue'], scale: 2 },
    ],
    handWritten: { migration: '0013-category-days', rebuild: 'sales.category_days_rebuild' },
  },
];

/**
 * The rollups of the orders themselves, per UTC hour or day: written by hand in 0005, 0008 and 0014
 * (reworked by 0006, 0009 and 0010), made by the engine since 0020, which replaced those triggers.
 */
export const ORDER_ROLLUPS: readonly RollupDeclaration[] = [
  {
    name: 'order_hours',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'orders',
    parents: [],
    keys: [{ name: 'hour', from: 'facts', column: 'ordered_at', truncate: 'hour' }, ...FACT_STATUS_CURRENCY],
    measures: ORDER_MEASURES,
  },
  regionOrders('region_days', 'day'),
  regionOrders('region_hours', 'hour'),
];

/**
 * Units and revenue per UTC day, product, status and currency, summed from the items: written by hand
 * in 0007 (reworked by 0009 and 0010), made by the engine since 0021, with the count of item lines the
 * engine keeps as every rollup's size (no template reads it).
 */
export const PRODUCT_ROLLUPS: readonly RollupDeclaration[] = [
  {
    name: 'product_days',
    schema: 'sales',
    readerSchema: 'reporting',
    facts: 'order_items',
    parents: [{ table: 'orders', key: 'id', link: 'order_id' }],
    keys: [
      { name: 'day', from: 'orders', column: 'ordered_at', truncate: 'day' },
      { name: 'product_id', from: 'facts', column: 'product_id' },
      ...STATUS_CURRENCY,
    ],
    measures: [
      { name: 'lines', count: true, unread: true },
      { name: 'units', sum: ['quantity'] },
      { name: 'revenue', sum: ['quantity', 'unit_price'], scale: 2 },
    ],
  },
];

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
