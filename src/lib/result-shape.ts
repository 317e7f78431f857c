/** Output schema pieces shared by the tools, so every result echoes its range and pages the same way. */
import { z } from 'zod';
import { MAX_ROWS } from './arguments.js';

export const money = z.number().describe('Amount in the order currency, rounded to 2 decimals');
export const count = z.number().int().nonnegative();

/** The range a result covers, as resolved by the server. */
export const rangeEcho = {
  start_date: z.string().describe('First day covered (YYYY-MM-DD)'),
  end_date: z.string().describe('Last day covered (YYYY-MM-DD)'),
  time_zone: z.string().describe('Time zone in which the days were read'),
};

/** A capped list of flat rows with an honest truncation flag. */
export function rowsEnvelope<Row extends z.ZodType>(row: Row) {
  return {
    rows: z.array(row).max(MAX_ROWS),
    row_count: count.describe('Number of rows returned'),
    truncated: z.boolean().describe('True when more rows matched than were returned'),
  };
}

/** Echo of the range the caller asked for, in the time zone the server read it. */
export function echoRange(args: { start_date: string; end_date: string }, timeZone: string) {
  return { start_date: args.start_date, end_date: args.end_date, time_zone: timeZone };
}
