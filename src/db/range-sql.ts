/** SQL fragments shared by the templates. Every value in them travels as a bind parameter. */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { startOfDayIn, type ResolvedRange } from '../lib/date-range.js';
import type { ReportingDatabase } from './schema.js';

/** Midnight of a calendar day in a time zone, as timestamptz: `(cast($1 as timestamp) at time zone $2)`. */
export function startOfDay(day: string, timeZone: string): RawBuilder<Date> {
  return sql<Date>`(cast(${day} as timestamp) at time zone ${timeZone})`;
}

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
 * Whether the range starts and ends on a whole UTC hour, so that the hourly rollup covers it exactly:
 * true in every zone whose offset is a whole number of hours (UTC, Europe/Berlin, America/New_York),
 * false in zones such as Asia/Kolkata (+05:30), where templates read the orders themselves.
 */
export function rollupCovers(range: ResolvedRange, timeZone: string): boolean {
  const wholeHour = /(Z|[+-]\d\d:00)$/;
  try {
    return (
      wholeHour.test(startOfDayIn(range.startDate, timeZone)) &&
      wholeHour.test(startOfDayIn(range.endExclusive, timeZone))
    );
  } catch {
    return false; // a zone Node does not know: PostgreSQL decides, reading the orders themselves
  }
}

/** Hourly rollup rows within the range, aliased `h`. */
export function orderHoursInRange(db: Kysely<ReportingDatabase>, range: ResolvedRange, timeZone: string) {
  return db
    .selectFrom('reporting.order_hours as h')
    .where('h.hour', '>=', startOfDay(range.startDate, timeZone))
    .where('h.hour', '<', startOfDay(range.endExclusive, timeZone));
}
