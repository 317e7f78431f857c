/**
 * Calendar arithmetic on days (YYYY-MM-DD, proleptic Gregorian, as PostgreSQL counts them): days,
 * months and years added, months and quarters started and ended, ISO weeks. Built on date-fns in
 * UTC, so that no runtime zone leaks into a day; offsets of real zones stay with local-day.ts, which
 * reads the runtime's own zone data (date-fns's zone package measured some offsets wrong).
 *
 * Each function is imported from its own module: the package root would load about 300 of them.
 * Adding months keeps the day of the month where it exists and otherwise takes the month's last day,
 * as PostgreSQL's `+ interval '1 month'` does (31 January + 1 month is 28 or 29 February).
 */
import { UTCDateMini } from '@date-fns/utc/date/mini';
import { addDays } from 'date-fns/addDays';
import { addMonths } from 'date-fns/addMonths';
import { addYears } from 'date-fns/addYears';
import { getISOWeek } from 'date-fns/getISOWeek';
import { getISOWeekYear } from 'date-fns/getISOWeekYear';
import { lastDayOfMonth } from 'date-fns/lastDayOfMonth';
import { lastDayOfQuarter } from 'date-fns/lastDayOfQuarter';
import { startOfISOWeek } from 'date-fns/startOfISOWeek';
import { startOfMonth } from 'date-fns/startOfMonth';
import { startOfQuarter } from 'date-fns/startOfQuarter';

/** A day's UTC midnight. Date.parse reads years 1..99 as they are, where Date.UTC would add 1900. */
const at = (day: string): Date => new UTCDateMini(Date.parse(`${day}T00:00:00Z`));

/** YYYY-MM-DD of a UTC midnight (years past 9999 keep all their digits). */
const dayOf = (date: Date): string => {
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  return `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}`;
};

/** `day` moved by `days` days (back when negative). */
export function shiftDays(day: string, days: number): string {
  return dayOf(addDays(at(day), days));
}

/** `day` moved by `months` months; a day the month lacks becomes its last. */
export function shiftMonths(day: string, months: number): string {
  return dayOf(addMonths(at(day), months));
}

/** `day` moved by `years` years; 29 February becomes 28 February in a common year. */
export function shiftYears(day: string, years: number): string {
  return dayOf(addYears(at(day), years));
}

/** The first day of the month `day` is in. */
export function monthStart(day: string): string {
  return dayOf(startOfMonth(at(day)));
}

/** The last day of the month `day` is in. */
export function monthEnd(day: string): string {
  return dayOf(lastDayOfMonth(at(day)));
}

/** The first day of the quarter (January, April, July, October) `day` is in. */
export function quarterStart(day: string): string {
  return dayOf(startOfQuarter(at(day)));
}

/** The last day of the quarter `day` is in. */
export function quarterEnd(day: string): string {
  return dayOf(lastDayOfQuarter(at(day)));
}

/** The Monday of the ISO week `day` is in. */
export function isoWeekStart(day: string): string {
  return dayOf(startOfISOWeek(at(day)));
}

/**
 * The ISO week `day` is in: the year it belongs to (that of its Thursday, which near New Year is not
 * the day's own) and its number, 1 to 53.
 */
export function isoWeekNumber(day: string): { readonly year: number; readonly week: number } {
  const date = at(day);
  return { year: getISOWeekYear(date), week: getISOWeek(date) };
}
