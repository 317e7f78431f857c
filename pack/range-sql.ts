/**
 * The sales pack's range SQL: orders, the hourly rollup, and net items, regions and categories cut
 * across whole UTC days so that the daily rollups answer most of a range. Every value travels as a
 * bind parameter.
 *
 * A statement held to regions (a caller's data scope, or a region asked for) reads only what carries
 * the customer's region: the orders (through their customer) and the region rollups (region_days,
 * region_hours, and the declared region_product_days and region_category_days, pack/rollups.ts),
 * whose keys begin with the region, so it reads no more than an unscoped statement reads of the
 * rollups without one.
 */
import {
  sql,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type RawBuilder,
  type ReferenceExpression,
  type SqlBool,
} from 'kysely';
import { acrossUtcDays, endOfRange, startOfDay } from '../src/db/range-sql.js';
import type { ResolvedRange } from '../src/lib/date-range.js';
import type { QueryContext } from '../src/registry/index.js';
import type { ReportingDatabase } from './schema.js';
import { NON_REVENUE_STATUSES } from './statuses.js';

/**
 * The customer regions a statement keeps to: those of the caller's data scope (every one bound),
 * and the one region an argument asks for. A statement held to none reads every region.
 */
export interface Regions {
  readonly scope?: readonly string[];
  readonly only?: string;
}

/** The regions of a call: its caller's data scope and its `region` argument, or undefined for neither. */
export function regionsOf(ctx: QueryContext, only?: string): Regions | undefined {
  const scope = ctx.dataScope?.region;
  return scope === undefined && only === undefined ? undefined : { scope, only };
}

/** `region in (scope…) and region = only`, of whichever of the two is given, on the column `region`. */
function inRegions<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  regions: Regions | undefined,
  region: ReferenceExpression<DB, TB>,
): Expression<SqlBool> {
  return eb.and([
    ...(regions?.scope !== undefined ? [eb(region, 'in', regions.scope)] : []),
    ...(regions?.only !== undefined ? [eb(region, '=', regions.only)] : []),
  ]);
}

/** The ids of the customers in the regions, for `where(customer id, 'in', …)`. */
function customersIn(db: Kysely<ReportingDatabase>, regions: Regions) {
  return db
    .selectFrom('reporting.customers as rc')
    .select('rc.id')
    .where((eb) => inRegions(eb, regions, 'rc.region'));
}

/**
 * Orders placed in [from, to), aliased `o`: only net ones when `net`, only those of customers in
 * `regions` when given.
 */
function ordersBetween(
  db: Kysely<ReportingDatabase>,
  from: RawBuilder<Date>,
  to: RawBuilder<Date>,
  only: { readonly net?: boolean; readonly regions?: Regions | undefined },
) {
  return db
    .selectFrom('reporting.orders as o')
    .where('o.ordered_at', '>=', from)
    .where('o.ordered_at', '<', to)
    .$if(only.net === true, (qb) => qb.where('o.status', 'not in', NON_REVENUE_STATUSES))
    .$if(only.regions !== undefined, (qb) => qb.where('o.customer_id', 'in', customersIn(db, only.regions!)));
}

/**
 * Orders placed in [start 00:00, end + 1 day 00:00) of the reporting time zone (up to the cut of a range
 * that has not ended: endOfRange), aliased `o`, of
 * customers in `regions` when given. Both bounds are constant for the planner, so the range uses the
 * index on ordered_at.
 */
export function ordersInRange(
  db: Kysely<ReportingDatabase>,
  range: ResolvedRange,
  timeZone: string,
  regions?: Regions,
) {
  return ordersBetween(db, startOfDay(range.startDate, timeZone), endOfRange(range, timeZone), {
    regions,
  });
}

/**
 * Hourly rollup rows within the range, aliased `h` (hour, status, currency, order_count,
 * total_amount): from order_hours, or, held to regions, from region_hours with its region bound.
 */
export function orderHoursInRange(
  db: Kysely<ReportingDatabase>,
  range: ResolvedRange,
  timeZone: string,
  regions?: Regions,
) {
  const from = startOfDay(range.startDate, timeZone);
  const to = endOfRange(range, timeZone);
  const columns = ['r.hour', 'r.status', 'r.currency', 'r.order_count', 'r.total_amount'] as const;
  const hours =
    regions === undefined
      ? db.selectFrom('reporting.order_hours as r').select(columns).where('r.hour', '>=', from).where('r.hour', '<', to)
      : db
          .selectFrom('reporting.region_hours as r')
          .select(columns)
          .where('r.hour', '>=', from)
          .where('r.hour', '<', to)
          .where((eb) => inRegions(eb, regions, 'r.region'));
  return db.selectFrom(hours.as('h'));
}

/**
 * Net order items in the range, as (product_id, currency, units, revenue) parts to be summed per
 * product and currency: the whole UTC days from the daily product rollup (held to regions, from
 * region_product_days with its regions bound), the hours around them from the items.
 */
export function netItemsInRange(
  db: Kysely<ReportingDatabase>,
  range: ResolvedRange,
  timeZone: string,
  regions?: Regions,
) {
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      regions === undefined
        ? db
            .selectFrom('reporting.product_days as d')
            .where('d.day', '>=', first)
            .where('d.day', '<', last)
            .where('d.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              'd.product_id',
              'd.currency',
              sql<string>`${eb.ref('d.units')}`.as('units'),
              sql<string>`${eb.ref('d.revenue')}`.as('revenue'),
            ])
        : db
            .selectFrom('reporting.region_product_days as d')
            .where((eb) => inRegions(eb, regions, 'd.region'))
            .where('d.day', '>=', first)
            .where('d.day', '<', last)
            .where('d.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              'd.product_id',
              'd.currency',
              sql<string>`${eb.ref('d.units')}`.as('units'),
              sql<string>`${eb.ref('d.revenue')}`.as('revenue'),
            ]),
    (from, to) =>
      ordersBetween(db, from, to, { net: true, regions })
        .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
        .select((eb) => [
          'oi.product_id',
          'o.currency',
          sql<string>`${eb.ref('oi.quantity')}::bigint`.as('units'),
          sql<string>`${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')}`.as('revenue'),
        ]),
  ).as('parts');
}

/**
 * Orders in the range, as (region, status, currency, order_count, total_amount) parts to be summed
 * per region (or status) and currency: the whole UTC days from the daily region rollup, the hours
 * around them from the orders. Only net orders when `net`; only those of `regions` when given, which
 * the region rollup answers as exactly as the orders do.
 */
export function ordersByRegionInRange(
  db: Kysely<ReportingDatabase>,
  range: ResolvedRange,
  timeZone: string,
  only: { readonly net?: boolean; readonly regions?: Regions | undefined },
) {
  const { regions } = only;
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      db
        .selectFrom('reporting.region_days as r')
        .where('r.day', '>=', first)
        .where('r.day', '<', last)
        .$if(only.net === true, (qb) => qb.where('r.status', 'not in', NON_REVENUE_STATUSES))
        .where((eb) => inRegions(eb, regions, 'r.region'))
        .select((eb) => [
          'r.region',
          'r.status',
          'r.currency',
          sql<string>`${eb.ref('r.order_count')}`.as('order_count'),
          sql<string>`${eb.ref('r.total_amount')}`.as('total_amount'),
        ]),
    (from, to) =>
      ordersBetween(db, from, to, only)
        .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
        .select((eb) => [
          'c.region',
          'o.status',
          'o.currency',
          sql<string>`1::bigint`.as('order_count'),
          sql<string>`${eb.ref('o.total_amount')}`.as('total_amount'),
        ]),
  );
}

/**
 * Net sales in the range, as (category, currency, order_count, revenue) parts to be summed per
 * category and currency: the whole UTC days from the daily category rollup (held to regions, from
 * region_category_days with its regions bound), the hours around them from the items. An order lies
 * in one part only, so each part counts its distinct orders and the parts add up.
 */
export function netCategoriesInRange(
  db: Kysely<ReportingDatabase>,
  range: ResolvedRange,
  timeZone: string,
  regions?: Regions,
) {
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      regions === undefined
        ? db
            .selectFrom('reporting.category_days as k')
            .where('k.day', '>=', first)
            .where('k.day', '<', last)
            .where('k.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              'k.category',
              'k.currency',
              sql<string>`${eb.ref('k.order_count')}`.as('order_count'),
              sql<string>`${eb.ref('k.revenue')}`.as('revenue'),
            ])
        : db
            .selectFrom('reporting.region_category_days as k')
            .where((eb) => inRegions(eb, regions, 'k.region'))
            .where('k.day', '>=', first)
            .where('k.day', '<', last)
            .where('k.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              'k.category',
              'k.currency',
              sql<string>`${eb.ref('k.order_count')}`.as('order_count'),
              sql<string>`${eb.ref('k.revenue')}`.as('revenue'),
            ]),
    (from, to) =>
      ordersBetween(db, from, to, { net: true, regions })
        .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
        .innerJoin('reporting.products as p', 'p.id', 'oi.product_id')
        .select((eb) => [
          'p.category',
          'o.currency',
          sql<string>`count(distinct ${eb.ref('o.id')})`.as('order_count'),
          sql<string>`sum(${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')})`.as('revenue'),
        ])
        .groupBy(['p.category', 'o.currency']),
  ).as('parts');
}
