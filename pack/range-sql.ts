/**
 * The sales pack's range SQL: orders, the hourly rollup, and net items, regions and categories cut
 * across whole UTC days so that the daily rollups answer most of a range. Every value travels as a
 * bind parameter.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { acrossUtcDays, startOfDay } from '../src/db/range-sql.js';
import type { ResolvedRange } from '../src/lib/date-range.js';
import type { ReportingDatabase } from './schema.js';
import { NON_REVENUE_STATUSES } from './statuses.js';

/**
 * Orders placed in [start 00:00, end + 1 day 00:00) of the reporting time zone, aliased `o`.
 * Both bounds are constant for the planner, so the range uses the index on ordered_at.
 */
export function ordersInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return db
    .selectFrom('reporting.orders as o')
    .where('o.ordered_at', '>=', startOfDay(range.startDate, timeZone))
    .where('o.ordered_at', '<', startOfDay(range.endExclusive, timeZone));
}

/** Hourly rollup rows within the range, aliased `h`. */
export function orderHoursInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return db
    .selectFrom('reporting.order_hours as h')
    .where('h.hour', '>=', startOfDay(range.startDate, timeZone))
    .where('h.hour', '<', startOfDay(range.endExclusive, timeZone));
}

/** Net orders in [from, to), aliased `o`. */
function netOrdersBetween(db: Kysely<ReportingDatabase>, from: RawBuilder<Date>, to: RawBuilder<Date>) {
  return db
    .selectFrom('reporting.orders as o')
    .where('o.ordered_at', '>=', from)
    .where('o.ordered_at', '<', to)
    .where('o.status', 'not in', NON_REVENUE_STATUSES);
}

/**
 * Net order items in the range, as (product_id, currency, units, revenue) parts to be summed per
 * product and currency: the whole UTC days from the daily product rollup, the hours around them from
 * the items.
 */
export function netItemsInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      db
        .selectFrom('reporting.product_days as d')
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
      netOrdersBetween(db, from, to)
        .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
        .select((eb) => [
          'oi.product_id',
          'o.currency',
          sql<string>`${eb.ref('oi.quantity')}::bigint`.as('units'),
          sql<string>`${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')}`.as('revenue'),
        ]),
  );
}

/**
 * Net orders in the range, as (region, currency, order_count, total_amount) parts to be summed per
 * region and currency: the whole UTC days from the daily region rollup, the hours around them from
 * the orders.
 */
export function netOrdersByRegionInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      db
        .selectFrom('reporting.region_days as r')
        .where('r.day', '>=', first)
        .where('r.day', '<', last)
        .where('r.status', 'not in', NON_REVENUE_STATUSES)
        .select((eb) => [
          'r.region',
          'r.currency',
          sql<string>`${eb.ref('r.order_count')}`.as('order_count'),
          sql<string>`${eb.ref('r.total_amount')}`.as('total_amount'),
        ]),
    (from, to) =>
      netOrdersBetween(db, from, to)
        .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
        .select((eb) => [
          'c.region',
          'o.currency',
          sql<string>`1::bigint`.as('order_count'),
          sql<string>`${eb.ref('o.total_amount')}`.as('total_amount'),
        ]),
  );
}

/**
 * Net sales in the range, as (category, currency, order_count, revenue) parts to be summed per
 * category and currency: the whole UTC days from the daily category rollup, the hours around them
 * from the items. An order lies in one part only, so each part counts its distinct orders and the
 * parts add up.
 */
export function netCategoriesInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return acrossUtcDays(
    range,
    timeZone,
    (first, last) =>
      db
        .selectFrom('reporting.category_days as k')
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
      netOrdersBetween(db, from, to)
        .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
        .innerJoin('reporting.products as p', 'p.id', 'oi.product_id')
        .select((eb) => [
          'p.category',
          'o.currency',
          sql<string>`count(distinct ${eb.ref('o.id')})`.as('order_count'),
          sql<string>`sum(${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')})`.as('revenue'),
        ])
        .groupBy(['p.category', 'o.currency']),
  );
}
