/**
 * ISO weeks (src/lib/weeks.ts): labels, parsing and the `week` argument, checked against PostgreSQL's
 * own ISO week arithmetic (`to_char(d, 'IYYY-"W"IW')` and `date_trunc('week', d)`) through the admin
 * connection, for every day of 33 years.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentError } from '../../src/lib/errors.js';
import { isoWeekOf, parseIsoWeek, recentWeeks, resolveWeek, weekArgument } from '../../src/lib/weeks.js';
import { connectAdmin } from '../support/harness.js';

interface PgWeek {
  day: string;
  week: string;
  start_date: string;
  end_date: string;
}

let admin: pg.Client;
let days: PgWeek[];
beforeAll(async () => {
  admin = await connectAdmin();
  days = (
    await admin.query<PgWeek>(
      `select d::date::text as day, to_char(d, 'IYYY-"W"IW') as week,
              date_trunc('week', d)::date::text as start_date, (date_trunc('week', d)::date + 6)::text as end_date
         from generate_series('1999-01-01'::date, '2031-12-31'::date, interval '1 day') as d`,
    )
  ).rows;
});
afterAll(async () => {
  await admin.end();
});

/** A refusal's issues, or a failure of the test when the call was not refused. */
function refusal(call: () => unknown): { field: string; rule: string }[] {
  try {
    call();
  } catch (err) {
    if (err instanceof ArgumentError) return [...err.issues];
    throw err;
  }
  throw new Error('expected an ArgumentError');
}

describe('ISO week labels', () => {
  it('label every day as PostgreSQL does, years that begin mid-week included', () => {
    expect(days.length).toBeGreaterThan(12_000);
    const wrong = days.filter((d) => JSON.stringify(isoWeekOf(d.day)) !== JSON.stringify({ ...d, day: undefined }));
    expect(wrong.slice(0, 5)).toEqual([]);
    // 1 January 2027 is a Friday: it belongs to the last week of 2026, which has 53.
    expect(isoWeekOf('2027-01-01').week).toBe('2026-W53');
  });

  it('parse back every label PostgreSQL gives, to its Monday and Sunday', () => {
    const labels = new Map(days.map((d) => [d.week, d]));
    for (const [label, d] of labels) {
      expect(parseIsoWeek(label), label).toEqual({ week: d.week, start_date: d.start_date, end_date: d.end_date });
    }
    expect(parseIsoWeek('2026-w48')?.start_date).toBe('2026-11-23');
  });

  it('refuse a week the year does not have', () => {
    const fiftyThrees = new Set(days.filter((d) => d.week.endsWith('W53')).map((d) => d.week.slice(0, 4)));
    expect(fiftyThrees.size).toBeGreaterThan(3); // the check below has both kinds of year to look at
    for (let year = 1999; year <= 2030; year += 1) {
      expect(parseIsoWeek(`${year}-W53`) !== undefined, String(year)).toBe(fiftyThrees.has(String(year)));
    }
    for (const label of ['2026-W00', '2026-W54', '2026-W4', '2026W48', '26-W48', '2026-48', 'W48', '']) {
      expect(parseIsoWeek(label), label).toBeUndefined();
    }
  });
});

describe('the week argument', () => {
  const TODAY = '2026-12-02'; // a Wednesday of 2026-W49

  it('takes an ISO week, a day inside one, last_week or this_week', () => {
    expect(resolveWeek('2026-W48', TODAY)).toEqual({
      week: '2026-W48',
      start_date: '2026-11-23',
      end_date: '2026-11-29',
    });
    expect(resolveWeek('2026-11-26', TODAY).week).toBe('2026-W48');
    expect(resolveWeek('last_week', TODAY).week).toBe('2026-W48');
    expect(resolveWeek('this_week', TODAY)).toEqual({
      week: '2026-W49',
      start_date: '2026-11-30',
      end_date: '2026-12-06',
    });
    // The week that is running may be named by any of its days, tomorrow included.
    expect(resolveWeek('2026-12-03', TODAY).week).toBe('2026-W49');
    // On New Year's Day 2027, last week is the 53rd of 2026.
    expect(resolveWeek('last_week', '2027-01-04').week).toBe('2026-W53');
  });

  it('refuses a week that has not started, naming the field and the rule', () => {
    const [issue] = refusal(() => resolveWeek('2026-W50', TODAY));
    expect(issue!.field).toBe('week');
    expect(issue!.rule).toMatch(/2026-W50 starts on 2026-12-07, after today \(2026-12-02\)/);
    expect(refusal(() => resolveWeek('2026-12-07', TODAY, 'report_week'))[0]!.field).toBe('report_week');
  });

  it('refuses what is not a week, naming the field and the forms it takes', () => {
    for (const bad of ['2026-W54', '2026-02-30', 'next_week', 'yesterday', '48']) {
      const [issue] = refusal(() => resolveWeek(bad, TODAY));
      expect(issue, bad).toEqual({
        field: 'week',
        rule: expect.stringMatching(/is not a week; give an ISO week such as 2026-W48/),
      });
    }
  });

  it('checks the shape in its schema, without knowing the day', () => {
    for (const good of ['2026-W48', '2025-06-30', 'last_week', 'this_week', '2030-W01']) {
      expect(weekArgument.safeParse(good).success, good).toBe(true);
    }
    const refused = weekArgument.safeParse('2026-W60');
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toMatch(/"2026-W60" is not a week/);
  });
});

describe('recent weeks', () => {
  it('are the weeks that have started, this one first, across the turn of a year', () => {
    const weeks = recentWeeks('2027-01-06', 4);
    expect(weeks.map((w) => w.week)).toEqual(['2027-W01', '2026-W53', '2026-W52', '2026-W51']);
    for (const w of weeks) {
      const pg = days.find((d) => d.day === w.start_date)!;
      expect(w).toEqual({ week: pg.week, start_date: pg.start_date, end_date: pg.end_date });
    }
    // On a Monday, this week is the one starting today.
    expect(recentWeeks('2026-11-23', 1)[0]!.start_date).toBe('2026-11-23');
  });
});
