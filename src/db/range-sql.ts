/**
 * Date-range SQL for any pack: the instants a range's days start at, local periods, and the cut that
 * lets a daily rollup answer the whole UTC days of a range. Every value travels as a bind parameter.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import { daysOf, periodStart, type ResolvedRange } from '../lib/date-range.js';
import { dayStart, postgresTimestamp } from '../lib/local-day.js';

/**
 * The first instant of a calendar day in a time zone (see src/lib/local-day.ts), as a timestamptz bind
 * parameter: the same instant the result echoes, where PostgreSQL's own `timestamp at time zone` would
 * take the later of two local midnights.
 */
export function startOfDay(day: string, timeZone: string): RawBuilder<Date> {
  return instant(dayStart(day, timeZone).ms);
}

/**
 * The first instant a range no longer covers, in milliseconds: the start of the day after its last
 * day, or, for a range that has not ended, the instant it is cut at (src/lib/running.ts).
 */
export function rangeEndMs(range: ResolvedRange, timeZone: string): number {
  const end = dayStart(range.endExclusive, timeZone).ms;
  return range.untilMs === undefined ? end : Math.min(end, range.untilMs);
}

/** rangeEndMs as a timestamptz bind parameter: every statement's upper bound, `< endOfRange(..)`. */
export function endOfRange(range: ResolvedRange, timeZone: string): RawBuilder<Date> {
  return instant(rangeEndMs(range, timeZone));
}

/** An instant, in milliseconds, as a timestamptz bind parameter. */
export const instant = (ms: number): RawBuilder<Date> => sql<Date>`cast(${postgresTimestamp(ms)} as timestamptz)`;

/**
 * Whether every day of the range starts on a whole UTC hour, so that the hourly rollup covers its days
 * exactly: true in every zone whose offset is a whole number of hours (UTC, Europe/Berlin,
 * America/New_York), false in zones such as Asia/Kolkata (+05:30), where templates read the rows,
 * and for a range cut inside an hour (a running range cut at the current minute).
 */
export function rollupCovers(range: ResolvedRange, timeZone: string): boolean {
  return [...dayBounds(range, timeZone), rangeEndMs(range, timeZone)].every((ms) => ms % HOUR_MS === 0);
}

/**
 * Whether every day of the range starts on a UTC midnight and it ends on one, so that a daily rollup
 * covers it exactly and its local days are UTC days: in UTC, and in a zone at UTC+0 on those days.
 */
export function dailyRollupCovers(range: ResolvedRange, timeZone: string): boolean {
  return [...dayBounds(range, timeZone), rangeEndMs(range, timeZone)].every((ms) => ms % DAY_MS === 0);
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

/**
 * A range cut where the daily rollups can take over: [start, m1) and [m2, end) are read from the
 * rows, the whole UTC days [first, last) from a rollup. first and last are the first and last UTC
 * midnights inside the range; m1 = least(first, end) and m2 = greatest(last, m1), so that the three
 * pieces tile [start, end) exactly in any zone, and both row pieces are empty in UTC.
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
  const end = rangeEndMs(range, timeZone);
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
 * that puts each piece of the cut where it belongs. `wholeDays` reads the rollup in [first, last);
 * `hours` reads the rows in [from, to), and is called twice.
 */
export function acrossUtcDays<Rollup extends { unionAll(expression: Rows): Rollup }, Rows>(
  range: ResolvedRange,
  timeZone: string,
  wholeDays: (first: RawBuilder<Date>, last: RawBuilder<Date>) => Rollup,
  hours: (from: RawBuilder<Date>, to: RawBuilder<Date>) => Rows,
): Rollup {
  const cut = utcDayCut(range, timeZone);
  return wholeDays(cut.first, cut.last).unionAll(hours(cut.start, cut.m1)).unionAll(hours(cut.m2, cut.end));
}
