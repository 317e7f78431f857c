/**
 * ISO weeks, as a `week` argument names them: an ISO week ("2026-W48"), any day inside one
 * ("2026-11-25"), or `last_week` / `this_week`, which the server resolves on the day it is in the
 * reporting time zone. Weeks run Monday to Sunday; an ISO year has 52 or 53 of them.
 */
import { z } from 'zod';
import { parseDay, quote } from './date-range.js';

const DAY_MS = 86_400_000;
const ISO_WEEK = /^(\d{4})-W(\d{2})$/;
const RELATIVE_WEEKS = ['last_week', 'this_week'] as const;

const ms = (day: string): number => Date.parse(`${day}T00:00:00Z`);
const dayOf = (t: number): string => new Date(t).toISOString().slice(0, 10);

/** Monday of the ISO week holding a YYYY-MM-DD day. */
export function mondayOf(day: string): string {
  const t = ms(day);
  return dayOf(t - ((new Date(t).getUTCDay() + 6) % 7) * DAY_MS);
}

/** "2026-W48" for the ISO week holding a day: the week belongs to the year its Thursday is in. */
export function isoWeekOf(day: string): string {
  const thursday = ms(mondayOf(day)) + 3 * DAY_MS;
  const year = new Date(thursday).getUTCFullYear();
  const week = Math.floor((thursday - ms(`${String(year).padStart(4, '0')}-01-01`)) / (7 * DAY_MS)) + 1;
  return `${String(year).padStart(4, '0')}-W${String(week).padStart(2, '0')}`;
}

/** Monday of week 1 of an ISO year: the week holding 4 January. */
function firstMonday(year: number): number {
  return ms(mondayOf(`${String(year).padStart(4, '0')}-01-04`));
}

/** Monday of an ISO week "YYYY-Www", or undefined when the year has no such week. */
function mondayOfIsoWeek(value: string): string | undefined {
  const match = ISO_WEEK.exec(value);
  if (!match) return undefined;
  const [year, week] = [Number(match[1]), Number(match[2])];
  if (year < 1 || week < 1) return undefined;
  const monday = firstMonday(year) + (week - 1) * 7 * DAY_MS;
  return monday < firstMonday(year + 1) ? dayOf(monday) : undefined;
}

export interface ResolvedWeek {
  /** The ISO week, "2026-W48". */
  readonly week: string;
  /** Its Monday and Sunday, YYYY-MM-DD. */
  readonly start_date: string;
  readonly end_date: string;
}

/** The week a validated `week` argument names, as seen on `today` (YYYY-MM-DD in the reporting zone). */
export function resolveWeek(value: string, today: string): ResolvedWeek {
  const monday =
    value === 'this_week'
      ? mondayOf(today)
      : value === 'last_week'
        ? dayOf(ms(mondayOf(today)) - 7 * DAY_MS)
        : (mondayOfIsoWeek(value) ?? mondayOf(value));
  return { week: isoWeekOf(monday), start_date: monday, end_date: dayOf(ms(monday) + 6 * DAY_MS) };
}

/** The ISO weeks before and including the one holding `today`, most recent first. */
export function recentWeeks(today: string, count: number): string[] {
  const monday = ms(mondayOf(today));
  return Array.from({ length: count }, (_, k) => isoWeekOf(dayOf(monday - k * 7 * DAY_MS)));
}

/** The `week` argument: checked for form here; a week in the future is refused when the call is made. */
export const weekField = z
  .string()
  .refine(
    (value) =>
      (RELATIVE_WEEKS as readonly string[]).includes(value) ||
      mondayOfIsoWeek(value) !== undefined ||
      parseDay(value) !== undefined,
    {
      error: (iss) =>
        ISO_WEEK.test(String(iss.input))
          ? `${quote(iss.input)} is not a week of its year (ISO years have 52 or 53 weeks)`
          : `${quote(iss.input)} is not a week; give an ISO week such as 2026-W48, a day inside one (YYYY-MM-DD), last_week or this_week`,
    },
  )
  .describe(
    'The ISO week (Monday to Sunday): "2026-W48", any day inside it ("2026-11-25"), or last_week / this_week, resolved in the reporting time zone',
  );
