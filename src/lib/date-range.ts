/**
 * The one date-range schema every tool shares: strict YYYY-MM-DD calendar days,
 * end not before start, at most MAX_RANGE_DAYS counted inclusively.
 */
import { z } from 'zod';
import { isoWeekStart, monthEnd, monthStart, quarterEnd, quarterStart, shiftDays } from './calendar.js';
import { memoize } from './memo.js';
import { PERIODS, type Period } from './periods.js';

export const MAX_RANGE_DAYS = 90;
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;
// Calendar days are UTC midnights, so the process's own time zone plays no part: in a zone whose
// clocks skip midnight on some day, local-midnight dates would refuse that real day. UTC days are all
// 24 hours long, which makes day arithmetic exact. Parsing and formatting stay plain and strict here;
// months and ISO weeks come from calendar.ts (date-fns, one module per function).

/** Parses a YYYY-MM-DD string into a UTC-midnight date, or undefined when it is not a real day. */
export function parseDay(value: string): Date | undefined {
  return ISO_DAY.test(value) ? parseKnownShape(value) : undefined;
}

// Memoized: the same few days are parsed again and again. Callers must not mutate the result.
const parseKnownShape = memoize((value: string): Date | undefined => {
  const [year, month, date] = [Number(value.slice(0, 4)), Number(value.slice(5, 7)), Number(value.slice(8, 10))];
  if (year < 1) return undefined; // PostgreSQL has no year 0
  const day = new Date(0);
  day.setUTCFullYear(year, month - 1, date); // unlike Date.UTC, takes years 1..99 as they are
  // Month 13 or 31 April roll over into another day: only a day that reads back the same is real.
  return formatDay(day) === value ? day : undefined;
});

/** YYYY-MM-DD of a UTC midnight (years past 9999 keep all their digits). */
function formatDay(day: Date): string {
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  return `${pad(day.getUTCFullYear(), 4)}-${pad(day.getUTCMonth() + 1, 2)}-${pad(day.getUTCDate(), 2)}`;
}

const addDays = (day: Date, n: number): Date => new Date(day.getTime() + n * DAY_MS);

/**
 * Quotes a user-supplied value for an error message: strings cut short so a huge input is not echoed
 * back, and objects only named, never serialized (a deeply nested one would exhaust the stack).
 */
export function quote(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return Array.isArray(value) ? 'an array' : `a value of type ${typeof value}`;
}

/**
 * A day in YYYY-MM-DD form that the calendar has. What the range's days mean the server's instructions
 * say once. Listed as JSON Schema's `format: "date"` (RFC 3339's full-date), which says both rules: a
 * validator asserting formats refuses 2025-02-30 as this does, which the pattern alone accepts.
 */
const calendarDay = (): z.ZodString =>
  z
    .string()
    .regex(ISO_DAY, { error: (iss) => `${quote(iss.input)} is not a date in YYYY-MM-DD form`, abort: true })
    .refine((value) => parseDay(value) !== undefined, {
      error: (iss) => `${quote(iss.input)} is not a real calendar day`,
      abort: true,
    })
    .meta({ format: 'date' });

/**
 * The date fields, spread into each tool's input object: two days, or a period the server resolves
 * at call time in the reporting time zone (src/lib/periods.ts), never both.
 */
export const dateRangeFields = {
  start_date: calendarDay().optional(),
  end_date: calendarDay().optional(),
  period: z
    .enum(PERIODS, { error: (iss) => `${quote(iss.input)} is not allowed; use one of ${PERIODS.join(', ')}` })
    .optional(),
};

export interface DateRangeInput {
  start_date?: string | undefined;
  end_date?: string | undefined;
  period?: Period | undefined;
  /**
   * Set by the server, never an argument (a tool's strict input refuses it): the instant, ISO 8601 in
   * UTC, at which a range that has not ended is cut (see src/lib/running.ts).
   */
  until?: string | undefined;
}

/**
 * Runs checkDateRange even when another argument broke a rule, so that a call missing its dates hears
 * so alongside the rest: `.superRefine(checkDateRange, DATE_RANGE_ALWAYS)`.
 */
export const DATE_RANGE_ALWAYS = {
  when: (payload: { value: unknown }): boolean =>
    typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value),
};

/**
 * The cross-field rules; attach with `.superRefine(checkDateRange, DATE_RANGE_ALWAYS)`: either
 * `period` or both days, and then the days in order and at most MAX_RANGE_DAYS apart.
 */
export function checkDateRange(value: DateRangeInput, ctx: z.RefinementCtx): void {
  const given = [value.start_date, value.end_date].filter((d) => d !== undefined).length;
  if (value.period !== undefined) {
    if (given > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['period'],
        message: 'give either period or start_date and end_date, not both',
      });
    }
    return;
  }
  if (given < 2) {
    for (const field of ['start_date', 'end_date'] as const) {
      if (value[field] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `is required, unless period is given (${PERIODS.slice(0, 4).join(', ')}, …)`,
        });
      }
    }
    return;
  }
  const range = rangeOf(value);
  if (!range) return;
  const { days } = range;
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
      message: `the range ${value.start_date}..${value.end_date} spans ${days} days; at most ${MAX_RANGE_DAYS} days are allowed, so end_date may be at most ${formatDay(addDays(parseDay(value.start_date!)!, MAX_RANGE_DAYS - 1))}`,
    });
  }
}

/** A validated range as the SQL needs it: [start 00:00, endExclusive 00:00) in the reporting time zone. */
export interface ResolvedRange {
  readonly startDate: string;
  readonly endDate: string;
  readonly endExclusive: string;
  readonly days: number;
  /**
   * For a range that has not ended: the instant (milliseconds since the epoch) the figures stop at,
   * before the start of endExclusive. SQL bounds end there (rangeEnd in src/db/range-sql.ts).
   */
  readonly untilMs?: number;
}

/** A validated range; the registry has already turned a `period` into its days (resolvePeriods). */
export function resolveRange(value: DateRangeInput): ResolvedRange {
  const range = rangeOf(value);
  if (!range) throw new TypeError('resolveRange called before validation');
  return value.until === undefined ? range : { ...range, untilMs: Date.parse(value.until) };
}

/** The resolved range of two days (days < 1 when end is before start); undefined if either is not a real day. */
function rangeOf(value: DateRangeInput): ResolvedRange | undefined {
  // Checked before the fields parsed too (DATE_RANGE_ALWAYS): anything but a string is no day.
  if (typeof value.start_date !== 'string' || typeof value.end_date !== 'string') return undefined;
  if (!ISO_DAY.test(value.start_date) || !ISO_DAY.test(value.end_date)) return undefined;
  return rangeMemo(`${value.start_date} ${value.end_date}`);
}

// Memoized, frozen: every call of every tool resolves its range, and the same ranges come back.
const rangeMemo = memoize((key: string): ResolvedRange | undefined => {
  const [startDate, endDate] = key.split(' ') as [string, string];
  const start = parseDay(startDate);
  const end = parseDay(endDate);
  if (!start || !end) return undefined;
  return Object.freeze({
    startDate,
    endDate,
    endExclusive: formatDay(addDays(end, 1)),
    days: Math.round((end.getTime() - start.getTime()) / DAY_MS) + 1,
  });
});

/** Every day of a validated range, first to last, as YYYY-MM-DD. Memoized; callers must not mutate it. */
export function daysOf(range: ResolvedRange): readonly string[] {
  return daysMemo(`${range.startDate} ${range.days}`);
}

const daysMemo = memoize((key: string): readonly string[] => {
  const [startDate, days] = key.split(' ') as [string, string];
  const start = parseDay(startDate)!;
  return Object.freeze(Array.from({ length: Number(days) }, (_, i) => formatDay(addDays(start, i))));
});

/** A calendar bucket of days: a day, an ISO week (Monday to Sunday), a month or a quarter. */
export type DayBucket = 'day' | 'week' | 'month' | 'quarter';

/** The first day of the day, ISO week (Monday), month or quarter a YYYY-MM-DD day belongs to. */
export function periodStart(day: string, period: DayBucket): string {
  if (period === 'day') return day;
  if (period === 'quarter') return quarterStart(day);
  return period === 'month' ? monthStart(day) : isoWeekStart(day);
}

/** The last day of the day, ISO week (Sunday), month or quarter a YYYY-MM-DD day belongs to. */
export function periodEnd(day: string, period: DayBucket): string {
  if (period === 'day') return day;
  if (period === 'quarter') return quarterEnd(day);
  return period === 'month' ? monthEnd(day) : shiftDays(isoWeekStart(day), 6);
}

/** Today's date in UTC. */
export function todayUtc(now: Date = new Date()): string {
  return now.toISOString().slice(0, 10);
}

/** Yesterday's date in UTC: the default last day of demo data, so that none of it lies in the future. */
export function yesterdayUtc(now: Date = new Date()): string {
  return new Date(now.getTime() - 86_400_000).toISOString().slice(0, 10);
}
