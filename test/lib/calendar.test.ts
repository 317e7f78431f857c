/**
 * Calendar arithmetic (src/lib/calendar.ts, on date-fns) against PostgreSQL's own calendar through the
 * admin connection: `date_trunc('quarter' | 'month' | 'week')`, `+ interval 'n months' | 'n years'`
 * and `extract(isoyear | week)`, for every day of 1999 to 2031 (eight leap years, every year end), and
 * for days of the first centuries, where a year under 100 must not be read as 19xx.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isoWeekNumber,
  isoWeekStart,
  monthEnd,
  monthStart,
  quarterEnd,
  quarterStart,
  shiftDays,
  shiftMonths,
  shiftYears,
} from '../../src/lib/calendar.js';
import { connectAdmin } from '../support/harness.js';

interface PgDay {
  day: string;
  quarter_start: string;
  quarter_end: string;
  month_start: string;
  month_end: string;
  week_start: string;
  iso_year: number;
  iso_week: number;
  plus_1_month: string;
  minus_1_month: string;
  plus_13_months: string;
  minus_25_months: string;
  plus_1_year: string;
  minus_1_year: string;
  plus_45_days: string;
  minus_400_days: string;
}

// Every column is PostgreSQL's answer; the day's text form is YYYY-MM-DD in every year (DateStyle ISO).
const CALENDAR = `
  select d::text as day,
         date_trunc('quarter', d)::date::text as quarter_start,
         (date_trunc('quarter', d) + interval '3 months' - interval '1 day')::date::text as quarter_end,
         date_trunc('month', d)::date::text as month_start,
         (date_trunc('month', d) + interval '1 month' - interval '1 day')::date::text as month_end,
         date_trunc('week', d)::date::text as week_start,
         extract(isoyear from d)::int as iso_year,
         extract(week from d)::int as iso_week,
         (d + interval '1 month')::date::text as plus_1_month,
         (d - interval '1 month')::date::text as minus_1_month,
         (d + interval '13 months')::date::text as plus_13_months,
         (d - interval '25 months')::date::text as minus_25_months,
         (d + interval '1 year')::date::text as plus_1_year,
         (d - interval '1 year')::date::text as minus_1_year,
         (d + 45)::text as plus_45_days,
         (d - 400)::text as minus_400_days
    from (select g::date as d from generate_series($1::date, $2::date, interval '1 day') as g) days`;

let admin: pg.Client;
let days: PgDay[];
beforeAll(async () => {
  admin = await connectAdmin();
  await admin.query('set datestyle = iso');
  const spans = [
    ['1999-01-01', '2031-12-31'],
    ['0003-11-01', '0005-03-31'], // year 4 is a leap year, and years under 100 are no 19xx
    ['0099-12-01', '0101-01-31'], // 100 is no leap year
    ['1899-12-01', '1900-03-31'], // nor 1900
    ['2099-12-01', '2100-03-31'], // nor 2100
  ];
  days = [];
  for (const [from, to] of spans) days.push(...(await admin.query<PgDay>(CALENDAR, [from, to])).rows);
});
afterAll(async () => {
  await admin.end();
});

/** Each day where calendar.ts gives another answer than PostgreSQL, as one line (the first 10). */
function differences(ours: (d: PgDay) => unknown, theirs: (d: PgDay) => unknown): string[] {
  return days
    .filter((d) => JSON.stringify(ours(d)) !== JSON.stringify(theirs(d)))
    .slice(0, 10)
    .map((d) => `${d.day}: ours ${JSON.stringify(ours(d))}, PostgreSQL ${JSON.stringify(theirs(d))}`);
}

describe('calendar arithmetic, day by day against PostgreSQL', () => {
  it('covers leap days, year ends and the first centuries', () => {
    const seen = new Set(days.map((d) => d.day));
    for (const day of ['2000-02-29', '2024-02-29', '0004-02-29', '1999-12-31', '2030-12-31', '0100-02-28']) {
      expect(seen.has(day), day).toBe(true);
    }
    expect(seen.has('1900-02-29') || seen.has('2100-02-29') || seen.has('0100-02-29')).toBe(false);
    expect(days.length).toBeGreaterThan(12_000);
  });

  it('starts and ends quarters as date_trunc(quarter) does', () => {
    expect(
      differences(
        (d) => quarterStart(d.day),
        (d) => d.quarter_start,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => quarterEnd(d.day),
        (d) => d.quarter_end,
      ),
    ).toEqual([]);
  });

  it('starts and ends months as date_trunc(month) does', () => {
    expect(
      differences(
        (d) => monthStart(d.day),
        (d) => d.month_start,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => monthEnd(d.day),
        (d) => d.month_end,
      ),
    ).toEqual([]);
  });

  it('adds months and years as + interval does, a day the month lacks becoming its last', () => {
    expect(
      differences(
        (d) => shiftMonths(d.day, 1),
        (d) => d.plus_1_month,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftMonths(d.day, -1),
        (d) => d.minus_1_month,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftMonths(d.day, 13),
        (d) => d.plus_13_months,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftMonths(d.day, -25),
        (d) => d.minus_25_months,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftYears(d.day, 1),
        (d) => d.plus_1_year,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftYears(d.day, -1),
        (d) => d.minus_1_year,
      ),
    ).toEqual([]);
  });

  it('adds days as date + integer does', () => {
    expect(
      differences(
        (d) => shiftDays(d.day, 45),
        (d) => d.plus_45_days,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => shiftDays(d.day, -400),
        (d) => d.minus_400_days,
      ),
    ).toEqual([]);
  });

  it('names ISO weeks as extract(isoyear) and extract(week) do, and starts them on date_trunc(week)', () => {
    expect(
      differences(
        (d) => isoWeekStart(d.day),
        (d) => d.week_start,
      ),
    ).toEqual([]);
    expect(
      differences(
        (d) => isoWeekNumber(d.day),
        (d) => ({ year: d.iso_year, week: d.iso_week }),
      ),
    ).toEqual([]);
  });
});
