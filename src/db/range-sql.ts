/** SQL fragments shared by the templates. Every value in them travels as a bind parameter. */
import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely';
import { daysOf, periodStart, type ResolvedRange } from '../lib/date-range.js';
import { dayStart, postgresTimestamp } from '../lib/local-day.js';
import { NON_REVENUE_STATUSES } from '../lib/arguments.js';
import type { ReportingDatabase } from './schema.js';

/**
 * The first instant of a calendar day in a time zone (see src/lib/local-day.ts), as a timestamptz bind
 * parameter: the same instant the result echoes, where PostgreSQL's own `timestamp at time zone` would
 * take the later of two local midnights.
 */
export function startOfDay(day: string, timeZone: string): RawBuilder<Date> {
  return instant(dayStart(day, timeZone).ms);
}

const instant = (ms: number): RawBuilder<Date> => sql<Date>`cast(${postgresTimestamp(ms)} as timestamptz)`;

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

/**
 * Whether every day of the range starts on a whole UTC hour, so that the hourly rollup covers its days
 * exactly: true in every zone whose offset is a whole number of hours (UTC, Europe/Berlin,
 * America/New_York), false in zones such as Asia/Kolkata (+05:30), where templates read the orders.
 */
export function rollupCovers(range: ResolvedRange, timeZone: string): boolean {
  return dayBounds(range, timeZone).every((ms) => ms % HOUR_MS === 0);
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The start of each day of the range and of the day after it, in milliseconds. */
function dayBounds(range: ResolvedRange, timeZone: string): number[] {
  return [...daysOf(range), range.endExclusive].map((day) => dayStart(day, timeZone).ms);
}

export type Period = 'day' | 'week' | 'month';

/**
 * The day, ISO week (its Monday) or month (its first day) of a timestamp, as YYYY-MM-DD, cut at the
 * very instants the range's bounds use: `labels[width_bucket(ts, day starts)]`, both arrays bound as
 * parameters. A timestamp inside the range always finds its bucket.
 */
export function localPeriodOf(
  timestamp: Expression<unknown>,
  range: ResolvedRange,
  timeZone: string,
  period: Period,
): RawBuilder<string> {
  const days = daysOf(range);
  const starts = days.map((day) => dayStart(day, timeZone).sql);
  const labels = days.map((day) => periodStart(day, period));
  return sql<string>`(cast(${labels} as text[]))[width_bucket(${timestamp}, cast(${starts} as timestamptz[]))]`;
}

/** Hourly rollup rows within the range, aliased `h`. */
export function orderHoursInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return db
    .selectFrom('reporting.order_hours as h')
    .where('h.hour', '>=', startOfDay(range.startDate, timeZone))
    .where('h.hour', '<', startOfDay(range.endExclusive, timeZone));
}

/**
 * A range cut where the daily rollups can take over: [start, m1) and [m2, end) are read from the
 * orders, the whole UTC days [first, last) from a rollup. first and last are the first and last UTC
 * midnights inside the range; m1 = least(first, end) and m2 = greatest(last, m1), so that the three
 * pieces tile [start, end) exactly in any zone, and both order pieces are empty in UTC.
 */
interface UtcDayCut {
  readonly start: RawBuilder<Date>;
  readonly m1: RawBuilder<Date>;
  readonly first: RawBuilder<Date>;
  readonly last: RawBuilder<Date>;
  readonly m2: RawBuilder<Date>;
  readonly end: RawBuilder<Date>;
}

function utcDayCut(range: ResolvedRange, timeZone: string): UtcDayCut {
  const start = dayStart(range.startDate, timeZone).ms;
  const end = dayStart(range.endExclusive, timeZone).ms;
  const first = Math.ceil(start / DAY_MS) * DAY_MS;
  const last = Math.floor(end / DAY_MS) * DAY_MS;
  const m1 = Math.min(first, end);
  const m2 = Math.max(last, m1);
  return {
    start: instant(start),
    m1: instant(m1),
    first: instant(first),
    last: instant(last),
    m2: instant(m2),
    end: instant(end),
  };
}

/**
 * A daily rollup's whole UTC days of the range, with the rows of the hours around them: the one place
 * that puts each piece of the cut where it belongs.
 */
function acrossUtcDays<Rollup extends { unionAll(expression: Rows): Rollup }, Rows>(
  range: ResolvedRange,
  timeZone: string,
  wholeDays: (first: RawBuilder<Date>, last: RawBuilder<Date>) => Rollup,
  hours: (from: RawBuilder<Date>, to: RawBuilder<Date>) => Rows,
): Rollup {
  const cut = utcDayCut(range, timeZone);
  return wholeDays(cut.first, cut.last).unionAll(hours(cut.start, cut.m1)).unionAll(hours(cut.m2, cut.end));
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
