/**
 * Output schema pieces shared by the tools, so every result echoes its range and pages the same way.
 * Their field names say what they hold; what they mean once (partial, until, a partial bucket) the
 * server's instructions say, not every tool's listing (src/protocol/identity.ts).
 */
import { z } from 'zod';
import { MAX_ROWS } from './arguments.js';
import { periodEnd, resolveRange, type DateRangeInput, type DayBucket } from './date-range.js';
import { PERIODS, type Period } from './periods.js';
import { dayStart, isoInZone, offsetAt } from './local-day.js';
import { cutEcho, cutFields } from './running.js';

export const money = z.number().describe('in `currency`');
/** The currency of a row's money figures: each figure sums one currency only, never several. */
export const currency = z.string().describe('ISO 4217');
export const count = z.number().int().nonnegative();

/** The range a result covers, as resolved by the server. */
export const rangeEcho = {
  start_date: z.string(),
  end_date: z.string(),
  time_zone: z.string(),
  starts_at: z.string(),
  ends_before: z.string(),
  period: z.enum(PERIODS).optional(),
  ...cutFields,
};

/** A capped list of flat rows with an honest truncation flag. */
export function rowsEnvelope<Row extends z.ZodType>(
  row: Row,
): { rows: z.ZodArray<Row>; row_count: z.ZodNumber; truncated: z.ZodOptional<z.ZodBoolean> } {
  return {
    rows: z.array(row).max(MAX_ROWS),
    row_count: count,
    truncated: z.boolean().optional(),
  };
}

export interface RangeEcho {
  start_date: string;
  end_date: string;
  time_zone: string;
  starts_at: string;
  ends_before: string;
  /** The period asked for; absent for explicit days. */
  period?: Period;
  /** Only when the range had not ended. */
  partial?: true;
  until?: string;
}

/** Echo of the range the caller asked for, resolved to instants in the time zone the server read it in. */
export function echoRange(args: DateRangeInput, timeZone: string): RangeEcho {
  const range = resolveRange(args);
  return {
    start_date: range.startDate,
    end_date: range.endDate,
    time_zone: timeZone,
    starts_at: dayStart(range.startDate, timeZone).local,
    ends_before: dayStart(range.endExclusive, timeZone).local,
    ...(args.period ? { period: args.period } : {}),
    ...cutEcho(args, timeZone),
  };
}

/**
 * The fields of a day, week or month row that the range covers only in part: its first day may lie
 * before start_date, its last after end_date, or the range may be cut inside it (a range still
 * running). Such a row says so, with the days it counts, so that the answers of two calls are never
 * added up for the same period twice.
 */
export const bucketFields = {
  partial: z.boolean().optional(),
  first_day: z.string().optional(),
  last_day: z.string().optional(),
  until: z.string().optional(),
};

export interface BucketBounds {
  partial?: true;
  first_day?: string;
  last_day?: string;
  until?: string;
}

/** What a row of the period that starts on `label` says of the part of it the range covers ({} for all of it). */
export function bucketBounds(label: string, period: DayBucket, args: DateRangeInput, timeZone: string): BucketBounds {
  const range = resolveRange(args);
  const end = periodEnd(label, period);
  const first = label < range.startDate ? range.startDate : label;
  let last = end > range.endDate ? range.endDate : end;
  let until: string | undefined;
  if (range.untilMs !== undefined && range.untilMs < dayStart(nextDay(last), timeZone).ms) {
    // The day the cut falls on; a cut at a day's very start leaves that day out.
    const cutDay = new Date(range.untilMs + offsetAt(timeZone, range.untilMs)).toISOString().slice(0, 10);
    const cutAtStart = dayStart(cutDay, timeZone).ms === range.untilMs;
    if (cutAtStart) last = previousDay(cutDay) < last ? previousDay(cutDay) : last;
    else {
      last = cutDay < last ? cutDay : last;
      until = isoInZone(range.untilMs, timeZone);
    }
  }
  if (first === label && last === end && until === undefined) return {};
  return { partial: true, first_day: first, last_day: last, ...(until ? { until } : {}) };
}

const shiftDay = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
const nextDay = (day: string): string => shiftDay(day, 1);
const previousDay = (day: string): string => shiftDay(day, -1);
