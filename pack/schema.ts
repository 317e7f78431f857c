/**
 * The tables the reader role can see: views in the `reporting` schema over `sales`, and the rollups
 * the triggers keep (order_hours per UTC hour, product_days, region_days and category_days per UTC
 * day, region_hours per region and UTC hour; migrations 0005 to 0010, 0013 and 0014; and the rollups
 * pack/rollups.ts declares, which the engine makes: region_product_days and region_category_days, per
 * region and UTC day, migration 0015). Their types are generated from the live schema (`npm run codegen -- .`, see
 * schema.generated.ts), so a template that names a column the database lacks fails the type check.
 * Raw personal data stays in `sales.customers`; `reporting.customers` already masks it at the source,
 * and the server masks every personal column again on the way out (see PERSONAL_COLUMNS).
 */
import type { DataScopeDimension, HighWaterMark, NotPersonalColumns, PersonalColumns } from '../src/pack.js';
import type { DB } from './schema.generated.js';

export type ReportingDatabase = DB;

/**
 * Every column that must never leave the server raw. A template that returns one of these
 * without the matching treatment is refused when the registry is built.
 */
export const PERSONAL_COLUMNS: PersonalColumns<ReportingDatabase> = {
  'reporting.orders.id': { kind: 'internal_id', entity: 'order' },
  'reporting.orders.customer_id': { kind: 'internal_id', entity: 'customer' },
  'reporting.order_items.order_id': { kind: 'internal_id', entity: 'order' },
  'reporting.order_items.product_id': { kind: 'internal_id', entity: 'product' },
  'reporting.products.id': { kind: 'internal_id', entity: 'product' },
  'reporting.product_days.product_id': { kind: 'internal_id', entity: 'product' },
  'reporting.region_product_days.product_id': { kind: 'internal_id', entity: 'product' },
  'reporting.customers.id': { kind: 'internal_id', entity: 'customer' },
  'reporting.customers.name_initials': { kind: 'name' },
  'reporting.customers.email_masked': { kind: 'email' },
  'reporting.customers.phone_last4': { kind: 'phone' },
};

/**
 * Every other column the reader reads: nothing personal. With PERSONAL_COLUMNS it names every column
 * of the reporting schema; a column added to a view and left out of both stops the server at start-up.
 */
export const NOT_PERSONAL_COLUMNS: NotPersonalColumns<ReportingDatabase> = [
  'reporting.category_days.category',
  'reporting.category_days.currency',
  'reporting.category_days.day',
  'reporting.category_days.order_count',
  'reporting.category_days.revenue',
  'reporting.category_days.status',
  'reporting.customers.created_at',
  'reporting.customers.region',
  'reporting.order_hours.currency',
  'reporting.order_hours.hour',
  'reporting.order_hours.order_count',
  'reporting.order_hours.status',
  'reporting.order_hours.total_amount',
  'reporting.order_items.quantity',
  'reporting.order_items.unit_price',
  'reporting.orders.currency',
  'reporting.orders.ordered_at',
  'reporting.orders.status',
  'reporting.orders.total_amount',
  'reporting.product_days.currency',
  'reporting.product_days.day',
  'reporting.product_days.revenue',
  'reporting.product_days.status',
  'reporting.product_days.units',
  'reporting.products.category',
  'reporting.products.name',
  'reporting.products.sku',
  'reporting.products.unit_price',
  'reporting.region_category_days.category',
  'reporting.region_category_days.currency',
  'reporting.region_category_days.day',
  'reporting.region_category_days.order_count',
  'reporting.region_category_days.region',
  'reporting.region_category_days.revenue',
  'reporting.region_category_days.status',
  'reporting.region_days.currency',
  'reporting.region_days.day',
  'reporting.region_days.order_count',
  'reporting.region_days.region',
  'reporting.region_days.status',
  'reporting.region_days.total_amount',
  'reporting.region_hours.currency',
  'reporting.region_hours.hour',
  'reporting.region_hours.order_count',
  'reporting.region_hours.region',
  'reporting.region_hours.status',
  'reporting.region_hours.total_amount',
  'reporting.region_product_days.currency',
  'reporting.region_product_days.day',
  'reporting.region_product_days.region',
  'reporting.region_product_days.revenue',
  'reporting.region_product_days.status',
  'reporting.region_product_days.units',
];

/**
 * What a caller's view of sales may be narrowed to. Every template applies `region` (the rollups
 * without a region give way to region_days or the rows for a scoped call), so a caller scoped to
 * regions sees every tool, with figures of those regions alone.
 */
export const DATA_SCOPE = [
  {
    name: 'region',
    description:
      "The customer's sales region (reporting.customers.region, e.g. Europe): a caller scoped to regions sees only the orders of customers in them, in every figure.",
  },
] as const satisfies readonly DataScopeDimension[];

/**
 * How far the data reach: the newest order's time, read from the end of the (ordered_at, id) index
 * (the registry adds LIMIT 1); for a caller scoped to regions, the newest of its regions' orders.
 * Every answer says it (data_through), and a range still running is cut there when the orders stop
 * before now. A shop whose orders arrive by a nightly load would read its load log here instead.
 */
export const DATA_THROUGH: HighWaterMark<ReportingDatabase> = (db, ctx) => {
  const regions = ctx.dataScope?.region;
  const newest = db
    .selectFrom('reporting.orders as o')
    .select('o.ordered_at as data_through')
    .orderBy('o.ordered_at', 'desc');
  return regions
    ? newest.innerJoin('reporting.customers as c', 'c.id', 'o.customer_id').where('c.region', 'in', regions)
    : newest;
};
