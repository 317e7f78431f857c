/** Output schema pieces shared by the tools, so every result echoes its range and pages the same way. */
import { z } from 'zod';
import { MAX_ROWS } from './arguments.js';
import { resolveRange, type DateRangeInput } from './date-range.js';
import { PERIODS, type Period } from './periods.js';
import { dayStart } from './local-day.js';
import { cutEcho, cutFields } from './running.js';

export const money = z.number().describe('Amount in `currency`, rounded to 2 decimals');
/** The currency of a row's money figures: each figure sums one currency only, never several. */
export const currency = z
  .string()
  .describe('ISO 4217 code of the currency every money figure in this row is in (USD, EUR, JPY, ...)');
export const count = z.number().int().nonnegative();

/** The range a result covers, as resolved by the server. */
export const rangeEcho = {
  start_date: z.string().describe('First day covered (YYYY-MM-DD)'),
  end_date: z.string().describe('Last day covered (YYYY-MM-DD)'),
  time_zone: z.string().describe('Time zone in which the days were read'),
  starts_at: z
    .string()
    .describe(
      'First instant covered: the start of start_date in time_zone (its first 00:00, or the end of a skipped midnight), ISO 8601; in UTC when the offset has seconds',
    ),
  ends_before: z
    .string()
    .describe('First instant no longer covered: the start of the day after end_date, as starts_at'),
  period: z
    .enum(PERIODS)
    .nullable()
    .describe(
      'The period asked for, resolved to start_date and end_date when the call was made; null for explicit dates',
    ),
  ...cutFields,
};

/** A capped list of flat rows with an honest truncation flag. */
export function rowsEnvelope<Row extends z.ZodType>(
  row: Row,
): { rows: z.ZodArray<Row>; row_count: z.ZodNumber; truncated: z.ZodBoolean } {
  return {
    rows: z.array(row).max(MAX_ROWS),
    row_count: count.describe('Number of rows returned'),
    truncated: z.boolean().describe('True when more rows matched than were returned'),
  };
}

export interface RangeEcho {
  start_date: string;
  end_date: string;
  time_zone: string;
  starts_at: string;
  ends_before: string;
  period: Period | null;
  partial: boolean;
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
    period: args.period ?? null,
    ...cutEcho(args, timeZone),
  };
}
