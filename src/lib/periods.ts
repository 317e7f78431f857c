/**
 * Relative periods ("last week", "month to date"), resolved at call time to the days of the reporting
 * time zone: a model names the period, and the server, which knows what day it is there, picks the
 * dates. ISO weeks start on Monday. The "last N days" periods are N whole days ending yesterday, so
 * that no day in them is still running.
 */
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

const DAY_MS = 86_400_000;

/** The calendar day an instant falls on in a time zone, YYYY-MM-DD. */
export function localToday(timeZone: string, nowMs: number): string {
  return new Date(nowMs + offsetAt(timeZone, nowMs)).toISOString().slice(0, 10);
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const ms = (day: string): number => Date.parse(`${day}T00:00:00Z`);

/** The first and last day of a period, as seen on `today` (YYYY-MM-DD in the reporting time zone). */
export function resolvePeriod(period: Period, today: string): { start_date: string; end_date: string } {
  const t = ms(today);
  const monday = t - ((new Date(t).getUTCDay() + 6) % 7) * DAY_MS;
  const firstOfMonth = ms(`${today.slice(0, 8)}01`);
  const lastOfMonth = (first: number): number => {
    const d = new Date(first);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0);
  };
  const lastDays = (n: number): { start_date: string; end_date: string } => ({
    start_date: day(t - n * DAY_MS),
    end_date: day(t - DAY_MS),
  });
  switch (period) {
    case 'today':
      return { start_date: today, end_date: today };
    case 'yesterday':
      return { start_date: day(t - DAY_MS), end_date: day(t - DAY_MS) };
    case 'this_week':
      return { start_date: day(monday), end_date: day(monday + 6 * DAY_MS) };
    case 'last_week':
      return { start_date: day(monday - 7 * DAY_MS), end_date: day(monday - DAY_MS) };
    case 'week_to_date':
      return { start_date: day(monday), end_date: today };
    case 'this_month':
      return { start_date: day(firstOfMonth), end_date: day(lastOfMonth(firstOfMonth)) };
    case 'last_month': {
      const d = new Date(firstOfMonth);
      const first = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - 1, 1);
      return { start_date: day(first), end_date: day(lastOfMonth(first)) };
    }
    case 'month_to_date':
      return { start_date: day(firstOfMonth), end_date: today };
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
