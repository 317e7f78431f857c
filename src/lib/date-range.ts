/**
 * The one date-range schema every tool shares: strict YYYY-MM-DD calendar days,
 * end not before start, at most MAX_RANGE_DAYS counted inclusively.
 */
import { addDays, differenceInCalendarDays, format, isValid, parse } from 'date-fns';
import { z } from 'zod';

export const MAX_RANGE_DAYS = 90;
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_FORMAT = 'yyyy-MM-dd';
// date-fns needs a reference date for parse; any fixed one will do since the format is complete.
const REFERENCE = new Date(2000, 0, 1);

/** Parses a YYYY-MM-DD string into a local-midnight Date, or undefined when it is not a real day. */
export function parseDay(value: string): Date | undefined {
  if (!ISO_DAY.test(value)) return undefined;
  const day = parse(value, DAY_FORMAT, REFERENCE);
  return isValid(day) && format(day, DAY_FORMAT) === value ? day : undefined;
}

/** Quotes a user-supplied value for an error message, cut short so a huge input is not echoed back. */
export function quote(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

const calendarDay = (what: string): z.ZodString =>
  z
    .string()
    .regex(ISO_DAY, { error: (iss) => `${quote(iss.input)} is not a date in YYYY-MM-DD form` })
    .refine((value) => parseDay(value) !== undefined, {
      error: (iss) => `${quote(iss.input)} is not a real calendar day`,
      abort: true,
    })
    .describe(`${what} (YYYY-MM-DD, inclusive, in the reporting time zone)`);

/** The two date fields, spread into each tool's input object. */
export const dateRangeFields = {
  start_date: calendarDay('First day of the range'),
  end_date: calendarDay('Last day of the range'),
};

interface DateRangeInput {
  start_date: string;
  end_date: string;
}

/** The cross-field rules; attach with `.superRefine(checkDateRange)` after the fields parsed. */
export function checkDateRange(value: DateRangeInput, ctx: z.RefinementCtx): void {
  const start = parseDay(value.start_date);
  const end = parseDay(value.end_date);
  if (!start || !end) return;
  const days = differenceInCalendarDays(end, start) + 1;
  if (days < 1) {
    ctx.addIssue({
      code: 'custom',
      path: ['end_date'],
      message: `end_date ${value.end_date} is before start_date ${value.start_date}`,
    });
  } else if (days > MAX_RANGE_DAYS) {
    ctx.addIssue({
      code: 'custom',
      path: ['end_date'],
      message: `the range ${value.start_date}..${value.end_date} spans ${days} days; at most ${MAX_RANGE_DAYS} days are allowed, so end_date may be at most ${format(addDays(start, MAX_RANGE_DAYS - 1), DAY_FORMAT)}`,
    });
  }
}

/** A validated range as the SQL needs it: [start 00:00, endExclusive 00:00) in the reporting time zone. */
export interface ResolvedRange {
  readonly startDate: string;
  readonly endDate: string;
  readonly endExclusive: string;
  readonly days: number;
}

export function resolveRange(value: DateRangeInput): ResolvedRange {
  const start = parseDay(value.start_date);
  const end = parseDay(value.end_date);
  if (!start || !end) throw new TypeError('resolveRange called before validation');
  return {
    startDate: value.start_date,
    endDate: value.end_date,
    endExclusive: format(addDays(end, 1), DAY_FORMAT),
    days: differenceInCalendarDays(end, start) + 1,
  };
}
