/**
 * Relative periods: every tool takes `period` instead of the two days, resolved when the call is made,
 * in the reporting time zone, with ISO weeks from Monday. The days each period stands for, and the day
 * an instant falls on in a zone, are checked against PostgreSQL's own date arithmetic; the tools are
 * called through a real MCP client with a fixed clock, and their counts checked against the raw orders.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates } from '../../queries/index.js';
import { localToday, PERIODS, resolvePeriod, type Period } from '../../src/lib/periods.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../support/harness.js';

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin.end();
});

/** Each period's first and last day as PostgreSQL computes them from `today` ($1). */
const GROUND_TRUTH: Record<Period, string> = {
  today: `$1::date, $1::date`,
  yesterday: `$1::date - 1, $1::date - 1`,
  this_week: `date_trunc('week', $1::date)::date, date_trunc('week', $1::date)::date + 6`,
  last_week: `date_trunc('week', $1::date)::date - 7, date_trunc('week', $1::date)::date - 1`,
  week_to_date: `date_trunc('week', $1::date)::date, $1::date`,
  this_month: `date_trunc('month', $1::date)::date, (date_trunc('month', $1::date) + interval '1 month - 1 day')::date`,
  last_month: `(date_trunc('month', $1::date) - interval '1 month')::date, (date_trunc('month', $1::date) - interval '1 day')::date`,
  month_to_date: `date_trunc('month', $1::date)::date, $1::date`,
  last_7_days: `$1::date - 7, $1::date - 1`,
  last_28_days: `$1::date - 28, $1::date - 1`,
  last_30_days: `$1::date - 30, $1::date - 1`,
  last_90_days: `$1::date - 90, $1::date - 1`,
};

// A Monday, a Sunday, New Year's Day on a Thursday (its ISO week began the year before), a leap day,
// the last day of a 31-day month, and the first of March after a leap February.
const TODAYS = ['2025-06-16', '2025-06-22', '2026-01-01', '2024-02-29', '2025-03-31', '2024-03-01', '2025-12-31'];

describe('the days a period stands for', () => {
  it.each(TODAYS)('on %s, every period agrees with PostgreSQL', async (today) => {
    for (const period of PERIODS) {
      const { rows } = await admin.query<{ first: string; last: string }>(
        `select first::text, last::text from (select ${GROUND_TRUTH[period]}) as p (first, last)`,
        [today],
      );
      expect(resolvePeriod(period, today), `${period} on ${today}`).toEqual({
        start_date: rows[0]!.first,
        end_date: rows[0]!.last,
      });
    }
  });
});

describe('the day an instant falls on in the reporting time zone', () => {
  // Around local midnights, in zones far ahead and behind, and in Havana, whose clocks spring from
  // 00:00 to 01:00 on 2025-03-09 and fall from 01:00 back to 00:00 on 2025-11-02.
  const INSTANTS = [
    '2025-03-09T04:59:59Z',
    '2025-03-09T05:00:00Z',
    '2025-11-02T03:59:59Z',
    '2025-11-02T04:00:00Z',
    '2025-11-02T05:00:00Z',
    '2025-12-31T10:00:00Z',
    '2025-12-31T09:59:59Z',
    '2026-06-30T23:30:00Z',
  ];
  const ZONES = ['UTC', 'America/Havana', 'Pacific/Kiritimati', 'Pacific/Pago_Pago', 'Asia/Kolkata'];

  it('agrees with PostgreSQL at instants around midnight', async () => {
    for (const zone of ZONES) {
      for (const instant of INSTANTS) {
        const { rows } = await admin.query<{ day: string }>(
          `select ($1::timestamptz at time zone $2)::date::text as day`,
          [instant, zone],
        );
        expect(localToday(zone, Date.parse(instant)), `${instant} in ${zone}`).toBe(rows[0]!.day);
      }
    }
  });
});

describe('a tool called with a period', () => {
  // Sunday 2025-06-29, 22:00 in Havana (UTC-4), already Monday 2025-06-30 in UTC.
  const NOW = Date.parse('2025-06-30T02:00:00Z');
  let havana: Harness;
  let utc: Harness;
  beforeAll(async () => {
    havana = await startHarness({ timeZone: 'America/Havana', now: () => NOW });
    utc = await startHarness({ timeZone: 'UTC', now: () => NOW });
  });
  afterAll(async () => {
    await havana.close();
    await utc.close();
  });

  /** Orders placed on the local days [first, last] of a zone, counted on the raw table. */
  async function ordersOn(zone: string, first: string, last: string): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from sales.orders where (ordered_at at time zone $1)::date between $2::date and $3::date`,
      [zone, first, last],
    );
    return rows[0]!.n;
  }

  it('resolves it on the day the call is made in the reporting time zone, and echoes it', async () => {
    const inHavana = structured<Record<string, unknown>>(
      await havana.call('query_order_count', { period: 'last_week' }),
    );
    // In Havana it is still Sunday 29 June: last week is 16..22 June. In UTC it is Monday 30 June: 23..29.
    expect(inHavana).toMatchObject({ start_date: '2025-06-16', end_date: '2025-06-22', period: 'last_week' });
    expect(inHavana.order_count).toBe(await ordersOn('America/Havana', '2025-06-16', '2025-06-22'));
    const inUtc = structured<Record<string, unknown>>(await utc.call('query_order_count', { period: 'last_week' }));
    expect(inUtc).toMatchObject({ start_date: '2025-06-23', end_date: '2025-06-29', period: 'last_week' });
    expect(inUtc.order_count).toBe(await ordersOn('UTC', '2025-06-23', '2025-06-29'));
    expect(inUtc.order_count).toBeGreaterThan(0);
  });

  it('gives the same figures as the days it stands for, and null for explicit days', async () => {
    const byPeriod = structured<Record<string, unknown>>(
      await utc.call('query_sales', { period: 'last_28_days', group_by: 'week' }),
    );
    const byDays = structured<Record<string, unknown>>(
      await utc.call('query_sales', { start_date: '2025-06-02', end_date: '2025-06-29', group_by: 'week' }),
    );
    expect(byPeriod.rows).toEqual(byDays.rows);
    expect(byPeriod.period).toBe('last_28_days');
    expect(byDays.period).toBeUndefined(); // explicit days: no period
  });

  it('refuses both forms, neither, one day alone, and an unknown period, naming the fields', async () => {
    const both = await utc.call('query_order_count', {
      period: 'last_week',
      start_date: '2025-06-01',
      end_date: '2025-06-07',
    });
    expect(both.isError).toBe(true);
    expect(textOf(both)).toContain('period: give either period or start_date and end_date, not both');

    const neither = await utc.call('query_order_count', {});
    expect(textOf(neither)).toContain('start_date: is required, unless period is given');
    expect(textOf(neither)).toContain('end_date: is required, unless period is given');

    const one = await utc.call('query_order_count', { start_date: '2025-06-01' });
    expect(textOf(one)).toContain('end_date: is required, unless period is given');
    expect(textOf(one)).not.toContain('start_date: is required');

    const unknown = await utc.call('query_order_count', { period: 'last_fortnight' });
    expect(textOf(unknown)).toContain(
      'period: "last_fortnight" is not allowed; use one of today, yesterday, this_week',
    );
  });

  it('is offered by every tool over a date range, and the instructions tell a model to prefer it for relative questions', async () => {
    const { tools } = await utc.client.listTools();
    // Every tool but the reports, which name a week (last_week, this_week, or an ISO week) instead.
    const ranged = tools.filter((t) => !t.name.endsWith('_report'));
    expect(ranged.map((t) => t.name).sort()).toEqual(templates.map((t) => t.name).sort());
    for (const report of tools.filter((t) => t.name.endsWith('_report'))) {
      expect(JSON.stringify(report.inputSchema), report.name).toContain('last_week');
    }
    for (const tool of ranged) {
      expect(Object.keys(tool.inputSchema.properties ?? {}), tool.name).toContain('period');
      expect(tool.inputSchema.required ?? [], tool.name).not.toContain('start_date');
    }
    // Said once for every such tool, not in each description.
    expect(utc.client.getInstructions()).toContain(
      'A tool taking start_date and end_date takes a period instead, e.g. {"period":"last_week"}',
    );
  });
});
