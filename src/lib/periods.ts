/**
 * Relative periods ("last week", "month to date"), resolved at call time to the days of the reporting
 * time zone: a model names the period, and the server, which knows what day it is there, picks the
 * dates. ISO weeks start on Monday. The "last N days" periods are N whole days ending yesterday, so
 * that no day in them is still running.
 */
import { isoWeekStart, monthEnd, monthStart, shiftDays, shiftMonths } from './calendar.js';
import { offsetAt } from './local-day.js';

export const PERIODS = [
  'today',
  'yesterday',
  'this_week',
  'last_week',
  'week_to_date',
  'this_month',
  'last_month',
  'month_to_date',
  'last_7_days',
  'last_28_days',
  'last_30_days',
  'last_90_days',
] as const;
export type Period = (typeof PERIODS)[number];

/** The calendar day an instant falls on in a time zone, YYYY-MM-DD. */
export function localToday(timeZone: string, nowMs: number): string {
  return new Date(nowMs + offsetAt(timeZone, nowMs)).toISOString().slice(0, 10);
}

/** The first and last day of a period, as seen on `today` (YYYY-MM-DD in the reporting time zone). */
export function resolvePeriod(period: Period, today: string): { start_date: string; end_date: string } {
  const monday = isoWeekStart(today);
  const lastDays = (n: number): { start_date: string; end_date: string } => ({
    start_date: shiftDays(today, -n),
    end_date: shiftDays(today, -1),
  });
  switch (period) {
    case 'today':
      return { start_date: today, end_date: today };
    case 'yesterday':
      return { start_date: shiftDays(today, -1), end_date: shiftDays(today, -1) };
    case 'this_week':
      return { start_date: monday, end_date: shiftDays(monday, 6) };
    case 'last_week':
      return { start_date: shiftDays(monday, -7), end_date: shiftDays(monday, -1) };
    case 'week_to_date':
      return { start_date: monday, end_date: today };
    case 'this_month':
      return { start_date: monthStart(today), end_date: monthEnd(today) };
    case 'last_month': {
      const lastMonth = shiftMonths(monthStart(today), -1);
      return { start_date: lastMonth, end_date: monthEnd(lastMonth) };
    }
    case 'month_to_date':
      return { start_date: monthStart(today), end_date: today };
    case 'last_7_days':
      return lastDays(7);
    case 'last_28_days':
      return lastDays(28);
    case 'last_30_days':
      return lastDays(30);
    case 'last_90_days':
      return lastDays(90);
  }
}
