/**
 * The sales pack's declared rollups: the engine makes their tables, triggers, rebuilds, reader views
 * and checks (src/db/rollups/), every one in migration 0022. No rollup trigger is written by hand.
 */
import type { RollupDeclaration, RollupKey } from '../src/db/rollups/index.js';

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
 * Net sales per category: sales.order_categories, each order's items per category, is a derived fact:
 * a row of it is one order holding the category, so category_days and region_category_days, which sum
 * it, count orders once per category however many items they hold. Its rows go with their last item,
 * and an order deleted takes its sums out of the rollups above before it goes. Products are touched
 * apart (sales.order_categories_products_touches): every item's writer reads the small products table.
 */
export const ORDER_CATEGORIES: RollupDeclaration = {
  name: 'order_categories',
  schema: 'sales',
  readerSchema: 'reporting',
  facts: 'order_items',
  parents: [{ table: 'products', key: 'id', link: 'product_id', touchApart: true }],
  keys: [
    { name: 'order_id', from: 'facts', column: 'order_id' },
    { name: 'category', from: 'products', column: 'category' },
  ],
  measures: [
    { name: 'items', count: true },
    { name: 'revenue', sum: ['quantity', 'unit_price'], scale: 2 },
  ],
  derived: { table: 'orders', key: 'id', link: 'order_id' },
};

/** The orders holding a category (rows of order_categories), and its revenue. */
const CATEGORY_MEASURES = [
  { name: 'order_count', count: true },
  { name: 'revenue', sum: ['revenue'], scale: 2 },
] as const;

/** Rows under their order, per the order's UTC day, a key of their own, and the order's status and currency. */
function orderDays(
  name: string,
  facts: string,
  own: RollupKey,
  measures: RollupDeclaration['measures'],
): RollupDeclaration {
  return {
    name,
    schema: 'sales',
    readerSchema: 'reporting',
    facts,
    parents: [{ table: 'orders', key: 'id', link: 'order_id' }],
    keys: [{ name: 'day', from: 'orders', column: 'ordered_at', truncate: 'day' }, own, ...STATUS_CURRENCY],
    measures,
  };
}

/** The orders holding each category, and its revenue, per UTC day, status and currency. */
export const CATEGORY_DAYS = orderDays(
  'category_days',
  'order_categories',
  { name: 'category', from: 'facts', column: 'category' },
  CATEGORY_MEASURES,
);

/** The rollups of the orders themselves, per UTC hour or day. */
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
 * Units and revenue per UTC day, product, status and currency, summed from the items, with the count
 * of item lines the engine keeps as every rollup's size (no template reads it).
 */
export const PRODUCT_ROLLUPS: readonly RollupDeclaration[] = [
  orderDays('product_days', 'order_items', { name: 'product_id', from: 'facts', column: 'product_id' }, [
    { name: 'lines', count: true, unread: true },
    { name: 'units', sum: ['quantity'] },
    { name: 'revenue', sum: ['quantity', 'unit_price'], scale: 2 },
  ]),
];

/**
 * Keyed region first, for the callers that read by customer region: a caller scoped to some regions,
 * or a region asked for, reads its top products and its sales by category from them as an unscoped
 * caller reads product_days and category_days.
 */
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
    measures: CATEGORY_MEASURES,
  },
];

/**
 * Every rollup, in the order they are made and checked: the derived fact first, before the rollups that
 * sum it, so that drift below them is named first.
 */
export const SALES_ROLLUPS: readonly RollupDeclaration[] = [
  ORDER_CATEGORIES,
  CATEGORY_DAYS,
  ...ORDER_ROLLUPS,
  ...PRODUCT_ROLLUPS,
  ...REGION_ROLLUPS,
];
