/**
 * ISO 8601 weeks (Monday to Sunday, week 1 holding the year's first Thursday), named as a model or a
 * person names them: `2026-W48`, a day inside the week, `last_week` or `this_week`. Resolved on the
 * day it is in the reporting time zone, like periods, and never to a week that has not started.
 */
import { z } from 'zod';
import { ArgumentError } from './errors.js';
import { isoWeekNumber, isoWeekStart, shiftDays } from './calendar.js';
import { parseDay, quote } from './date-range.js';
import { resolvePeriod } from './periods.js';

export const WEEK_KEYWORDS = ['last_week', 'this_week'] as const;

/** One ISO week: its label and its first and last day (YYYY-MM-DD, both inclusive). */
export interface IsoWeek {
  readonly week: string;
  readonly start_date: string;
  readonly end_date: string;
}

const ISO_WEEK = /^(\d{4})-W(\d{2})$/i;

/** The ISO week a real YYYY-MM-DD day falls in. */
export function isoWeekOf(date: string): IsoWeek {
  const monday = isoWeekStart(date);
  // The week belongs to the year of its Thursday, which near New Year is not the day's own.
  const { year, week } = isoWeekNumber(date);
  return {
    week: `${String(year).padStart(4, '0')}-W${String(week).padStart(2, '0')}`,
    start_date: monday,
    end_date: shiftDays(monday, 6),
  };
}

/** A `YYYY-Www` label's week, or undefined when the year has no such week (W00, W54, W53 of a short year). */
export function parseIsoWeek(label: string): IsoWeek | undefined {
  const match = ISO_WEEK.exec(label);
  if (!match) return undefined;
  const [year, number] = [Number(match[1]), Number(match[2])];
  if (year < 1 || number < 1 || number > 53) return undefined;
  // Week 1 is the week of 4 January; a week 53 that reads back as next year's week 1 does not exist.
  const week = isoWeekOf(shiftDays(`${match[1]}-01-04`, (number - 1) * 7));
  return week.week === label.toUpperCase() ? week : undefined;
}

const WEEK_FORMS = 'an ISO week such as 2026-W48, a day inside the week (YYYY-MM-DD), last_week or this_week';

/** The `week` argument's shape, checked without knowing what day it is: resolveWeek checks the rest. */
export const weekArgument: z.ZodString = z
  .string()
  .refine((value) => toWeek(value, undefined) !== undefined, {
    error: (iss) => `${quote(iss.input)} is not a week; give ${WEEK_FORMS}`,
  })
  .describe('ISO week: 2026-W48, a day in it (YYYY-MM-DD), last_week or this_week');

/**
 * The week a `week` argument names, as seen on `today` (YYYY-MM-DD in the reporting time zone). A
 * malformed week, or one that starts after today, is an ArgumentError naming `field`.
 */
export function resolveWeek(value: string, today: string, field = 'week'): IsoWeek {
  const week = toWeek(value, today);
  if (week === undefined) {
    throw new ArgumentError([{ field, rule: `${quote(value)} is not a week; give ${WEEK_FORMS}` }]);
  }
  if (week.start_date > today) {
    throw new ArgumentError([
      {
        field,
        rule: `${week.week} starts on ${week.start_date}, after today (${today}); give this week (${isoWeekOf(today).week}) or an earlier one`,
      },
    ]);
  }
  return week;
}

function toWeek(value: string, today: string | undefined): IsoWeek | undefined {
  if ((WEEK_KEYWORDS as readonly string[]).includes(value)) {
    // Any day will do to check the shape; the keyword only means something once today is known.
    const on = today ?? '2000-01-01';
    return isoWeekOf(resolvePeriod(value as (typeof WEEK_KEYWORDS)[number], on).start_date);
  }
  if (parseDay(value) !== undefined) return isoWeekOf(value);
  return parseIsoWeek(value);
}

/** The `count` most recent weeks that have started, as seen on `today`: this week first. */
export function recentWeeks(today: string, count: number): IsoWeek[] {
  return Array.from({ length: count }, (_, k) => isoWeekOf(shiftDays(today, -7 * k)));
}
