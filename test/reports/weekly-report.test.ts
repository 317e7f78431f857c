/**
 * The weekly sales report, through a real MCP client, against figures computed here from the raw
 * orders of a scratch database (the seed's USD orders, EUR orders beside them, and a planted day of
 * unusually high sales): every metric against the week before and a year earlier, the days, the top
 * products and their former ranks, regions, categories and the notable days, in zones including
 * one whose clocks jump at midnight; a week still running, a week without orders, a week in the future.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { contentOf } from '../../src/content/index.js';
import { startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { loadSalesData, ordersBetween, type SalesData } from '../support/sales-data.js';
import {
  addEuroOrders,
  addOrder,
  checkWeeklyReport,
  expectedTrendRows,
  type TrendReport,
  type WeekCuts,
  type WeeklyReport,
} from '../support/sales-reports.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

// Wednesday 18 June 2025, noon UTC: last week is 2025-W24 (9..15 June), this week 2025-W25 so far.
const NOW = Date.parse('2025-06-18T12:00:00Z');
const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
// UTC; Havana, whose clocks jump from 00:00 to 01:00 on Sunday 9 March 2025 (in 2025-W10); Kolkata's half hour.
const ZONES = ['UTC', 'America/Havana', 'Asia/Kolkata'];
/** The planted day: Wednesday 11 June, forty extra paid orders of 500.00 USD at noon UTC. */
const PLANTED = '2025-06-11';

// Just after midnight, midday, the last minute of a day, and Havana's midnight jump (9 March 2025, and
// 10 March 2024 a year earlier) with the Monday after it.
const RUNNING = ZONES.flatMap((zone) =>
  [
    '2025-06-18 00:07:31',
    '2025-06-18 12:00:00',
    '2025-06-18 23:59:59',
    '2025-03-09 12:00:00',
    '2025-03-10 01:30:00',
  ].map((local) => [zone, local] as const),
);

let scratch: ScratchDatabase;
let data: SalesData;
const harnesses = new Map<string, Harness>();
/** The reports' clock: NOW, unless a test moves it (and puts it back). */
let clock = NOW;

beforeAll(async () => {
  scratch = await createScratchDatabase('weekly_report', { orders: 6000, until: '2025-06-30' });
  for (let k = 0; k < 40; k++) {
    const at = `${PLANTED}T12:00:00Z`;
    await addOrder(scratch.admin, {
      id: 980000 + k,
      status: 'paid',
      at,
      currency: 'USD',
      product: (k % 5) + 1,
      amount: '500.00',
    });
  }
  await addEuroOrders(scratch.admin);
  data = await loadSalesData(scratch.admin);
  for (const timeZone of ZONES) {
    harnesses.set(
      timeZone,
      await startHarness({
        readerUrl: scratch.readerUrl,
        timeZone,
        now: () => clock,
        content: contentOf([salesPack], () => NOW),
      }),
    );
  }
});
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

async function report(zone: string, week: string): Promise<WeeklyReport> {
  return structured<WeeklyReport>(await harnesses.get(zone)!.call('weekly_sales_report', { week }));
}

/** Checks every figure of a report on the days from..to against the raw orders. */
const checkReport = (r: WeeklyReport, zone: string, from: string, to: string, cuts?: WeekCuts): void =>
  checkWeeklyReport(data, r, zone, from, to, cuts);

/**
 * The clock at a local wall-clock time in a zone, and where a running week is cut: the minute, and the
 * same local time 7 and 364 days earlier, all by PostgreSQL's own time-zone arithmetic.
 */
async function clockAt(zone: string, local: string): Promise<WeekCuts> {
  const { rows } = await scratch.admin.query<Record<string, string>>(
    `select (extract(epoch from ($1::timestamp at time zone $2)) * 1000)::bigint::text as clock,
            (extract(epoch from (date_trunc('minute', $1::timestamp) at time zone $2)) * 1000)::bigint::text as now,
            (extract(epoch from ((date_trunc('minute', $1::timestamp) - interval '7 days') at time zone $2)) * 1000)::bigint::text as last,
            (extract(epoch from ((date_trunc('minute', $1::timestamp) - interval '364 days') at time zone $2)) * 1000)::bigint::text as ago`,
    [local, zone],
  );
  clock = Number(rows[0]!.clock);
  return { now: Number(rows[0]!.now), lastWeek: Number(rows[0]!.last), yearAgo: Number(rows[0]!.ago) };
}

describe('weekly_sales_report', () => {
  it.each(ZONES)('last week in %s equals the raw orders, figure for figure', async (zone) => {
    const r = await report(zone, 'last_week');
    expect(r).toMatchObject({
      week: '2025-W24',
      start_date: '2025-06-09',
      end_date: '2025-06-15',
      through_date: '2025-06-15',
      partial: false,
      has_orders: true,
    });
    checkReport(r, zone, '2025-06-09', '2025-06-15');
  });

  it('finds the planted day of unusually high sales, and says by which rule', async () => {
    const r = await report('UTC', '2025-W24');
    const planted = r.notable_days.find((d) => d.date === PLANTED && d.currency === 'USD');
    expect(planted).toMatchObject({ direction: 'high' });
    expect(planted!.revenue).toBeGreaterThanOrEqual(40 * 500);
    expect(planted!.baseline_median).toBeLessThan(planted!.revenue / 4);
    expect(r.notable_days.find((d) => d.date === PLANTED)).toBeDefined();
    // The planted day's own weekday, a week later, is held to a baseline that holds the planted day: still
    // ordinary. Asked the day after, so that 18 June has ended and is judged at all.
    clock = NOW + 86_400_000;
    const next = await report('UTC', '2025-06-18').finally(() => (clock = NOW));
    expect(next.partial).toBe(true);
    expect(next.notable_days.filter((d) => d.currency === 'USD' && d.date === '2025-06-18')).toEqual([]);
  });

  it('takes the week as an ISO week, a day inside it, or last_week alike', async () => {
    const [a, b, c] = [
      await report('UTC', '2025-W24'),
      await report('UTC', '2025-06-15'),
      await report('UTC', 'last_week'),
    ];
    const { data_as_of: _a, ...first } = a;
    const { data_as_of: _b, ...second } = b;
    const { data_as_of: _c, ...third } = c;
    expect(second).toEqual(first);
    expect(third).toEqual(first);
  });

  it.each(['UTC', 'America/Havana'])('a week across a midnight the clocks skip, in %s', async (zone) => {
    const r = await report(zone, '2025-W10');
    expect(r).toMatchObject({ start_date: '2025-03-03', end_date: '2025-03-09', partial: false });
    checkReport(r, zone, '2025-03-03', '2025-03-09');
  });

  it('a week still running is partial, carries data_as_of, and is compared on equal elapsed time', async () => {
    const before = Date.now();
    const r = await report('UTC', 'this_week');
    expect(r).toMatchObject({ week: '2025-W25', through_date: '2025-06-18', partial: true });
    expect(Date.parse(r.data_as_of)).toBeGreaterThanOrEqual(before - 1000);
    expect(r.summary).toMatch(/so far \(until 12:00\)/);
    // In UTC the same local time a week and 52 weeks earlier is plain arithmetic.
    checkReport(r, 'UTC', '2025-06-16', '2025-06-18', {
      now: NOW,
      lastWeek: NOW - 7 * 86_400_000,
      yearAgo: NOW - 364 * 86_400_000,
    });
  });

  it.each(RUNNING)(
    '19.1.4 19.1.5 this_week in %s at %s: every side cut at the same local time, today never judged notable',
    async (zone, local) => {
      const cuts = await clockAt(zone, local);
      const r = await report(zone, 'this_week').finally(() => (clock = NOW));
      const today = local.slice(0, 10);
      const monday = shift(today, -((new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7));
      expect(r).toMatchObject({ start_date: monday, through_date: today, partial: true });
      checkReport(r, zone, monday, today, cuts);
      expect(r.notable_days.filter((d) => d.date === today)).toEqual([]);
    },
  );

  it('a week without orders says so plainly', async () => {
    const r = await report('UTC', '2023-W10'); // before the seed's first order
    expect(ordersBetween(data, r.start_date, r.end_date, 'UTC')).toHaveLength(0);
    expect(r.has_orders).toBe(false);
    expect(r.summary).toBe('No orders were placed in 2023-W10 (2023-03-06 to 2023-03-12).');
    expect(r.daily).toEqual([]);
    expect(r.top_products).toEqual([]);
    expect(r.metrics.find((m) => m.metric === 'order_count')).toMatchObject({ value: 0 });
    expect(r.metrics.find((m) => m.metric === 'cancellation_rate')).toMatchObject({ value: null });
  });

  it('refuses a week in the future, a week its year lacks, and an unknown argument, naming the field', async () => {
    const refused = async (args: unknown, pattern: RegExp): Promise<void> => {
      const result: CallToolResult = await harnesses.get('UTC')!.call('weekly_sales_report', args);
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result)).toMatch(pattern);
    };
    await refused({ week: '2025-W26' }, /week: 2025-W26 starts on 2025-06-23, after today \(2025-06-18\)/);
    await refused({ week: 'next_week' }, /week: "next_week" is not a week/);
    await refused({ week: '2025-W53' }, /week: "2025-W53" is not a week; give an ISO week such as 2026-W48/);
    await refused({ week: '2025-02-30' }, /week: "2025-02-30" is not a week/);
    await refused({}, /week: is required/);
    await refused(
      { week: 'last_week', currency: 'EUR' },
      /"currency": is not a known argument; the arguments are week/,
    );
    // 2026 has 53 ISO weeks (1 January 2026 is a Thursday): its week 53 is a week, only not yet begun.
    await refused({ week: '2026-W53' }, /week: 2026-W53 starts on 2026-12-28, after today/);
  });

  it('reports progress after each query, in order, to a client that asks', async () => {
    const harness = harnesses.get('UTC')!;
    const seen: { progress: number; total?: number }[] = [];
    const result = await harness.client.callTool(
      { name: 'weekly_sales_report', arguments: { week: 'last_week' } },
      CallToolResultSchema,
      { onprogress: (p) => void seen.push({ progress: p.progress, total: p.total }) },
    );
    expect(result.isError).toBeFalsy();
    expect(seen.length).toBeGreaterThanOrEqual(10);
    expect(seen.map((p) => p.progress)).toEqual(seen.map((_, k) => k + 1));
    expect(seen.every((p) => p.total !== undefined && p.total >= p.progress)).toBe(true);
  });
});

describe('sales_trend_report', () => {
  it.each(['UTC', 'America/Havana'])(
    '40 weeks through 2025-W24 in %s equal the raw orders, week by week',
    async (zone) => {
      const harness = harnesses.get(zone)!;
      const seen: number[] = [];
      const result = await harness.client.callTool(
        { name: 'sales_trend_report', arguments: { weeks: 40, through_week: '2025-W24' } },
        CallToolResultSchema,
        { onprogress: (p) => void seen.push(p.progress) },
      );
      const trend = structured<TrendReport>(result as CallToolResult);
      // 40 weeks are read 12 at a time: four queries, each told of as it ends.
      expect(seen).toEqual([1, 2, 3, 4]);
      const first = shift('2025-06-09', -7 * 39);
      expect(trend).toMatchObject({ weeks: 40, last_week: '2025-W24', start_date: first, end_date: '2025-06-15' });
      expect(trend.rows.map(({ week: _week, change_note: _note, ...row }) => row)).toEqual(
        expectedTrendRows(data, zone, first, 40, ['EUR', 'USD']),
      );
      expect(trend.rows[0]!.week).toBe('2024-W37');
    },
  );

  it.each(RUNNING)(
    '19.1.4 sales_trend_report through this_week in %s at %s: the running week against the week before to the same local time',
    async (zone, local) => {
      const cuts = await clockAt(zone, local);
      const trend = structured<TrendReport>(
        await harnesses.get(zone)!.call('sales_trend_report', { weeks: 4, through_week: 'this_week' }),
      );
      clock = NOW;
      const today = local.slice(0, 10);
      const monday = shift(today, -((new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7));
      const first = shift(monday, -21);
      expect(trend).toMatchObject({ start_date: first, partial: true });
      const currencies = [...new Set(trend.rows.map((r) => r.currency))].sort();
      expect(trend.rows.map(({ week: _week, change_note: _note, ...row }) => row)).toEqual(
        expectedTrendRows(data, zone, first, 4, currencies, { now: cuts.now, lastWeek: cuts.lastWeek }),
      );
      for (const row of trend.rows.filter((r) => r.partial)) expect(Date.parse(row.until!)).toBe(cuts.now);
    },
  );

  it('refuses more weeks than one answer holds, saying how many fit, and bad arguments, naming the field', async () => {
    const harness = harnesses.get('UTC')!;
    const refused = async (args: unknown, pattern: RegExp): Promise<void> => {
      const result = await harness.call('sales_trend_report', args);
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result)).toMatch(pattern);
    };
    // Two currencies: 52 weeks would be 104 rows.
    await refused({ weeks: 52, through_week: '2025-W24' }, /weeks: with sales in 2 currencies, at most 50 weeks fit/);
    await refused({ weeks: 53 }, /weeks: must be at most 52/);
    await refused({ weeks: 1 }, /weeks: must be at least 2/);
    await refused({ weeks: 2.5 }, /weeks: must be a whole number/);
    await refused({ weeks: 4, through_week: 'next_week' }, /through_week: "next_week" is not a week/);
    await refused({ weeks: 4, through_week: '2025-W30' }, /through_week: 2025-W30 starts on 2025-07-21, after today/);
  });
});

describe('querygate://reports/weekly/{week}', () => {
  it('is listed as a resource template and reads as the report in Markdown, figure for figure', async () => {
    const harness = harnesses.get('UTC')!;
    const { resourceTemplates } = await harness.client.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toContain('querygate://reports/weekly/{week}');
    const read = await harness.client.readResource({ uri: 'querygate://reports/weekly/2025-W24' });
    const [contents] = read.contents;
    expect(contents).toMatchObject({ uri: 'querygate://reports/weekly/2025-W24', mimeType: 'text/markdown' });
    const text = (contents as { text: string }).text;
    const r = await report('UTC', '2025-W24');
    expect(text).toContain('# Weekly sales report 2025-W24');
    expect(text).toContain(r.summary);
    // Every figure row of the JSON report is a row of the Markdown table, with the same values.
    const usd = r.metrics.find((m) => m.metric === 'revenue' && m.currency === 'USD')!;
    // Money with thousands separators and cents, as every format a person reads writes it.
    const money = (value: number | null): string =>
      value === null ? '–' : value.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    expect(text).toContain(`| Net revenue | USD | ${money(usd.value)} | ${money(usd.last_week)} |`);
    for (const day of r.daily) expect(text).toContain(`${day.date} | ${day.currency} | ${money(day.revenue)} |`);
    for (const p of r.top_products) expect(text).toContain(`(${p.sku}) |`);
    for (const d of r.notable_days) expect(text).toContain(`${d.date} | ${d.currency} | ${money(d.revenue)} |`);
  });

  it('refuses a week in the future or one that is no week with -32602, naming the variable', async () => {
    const harness = harnesses.get('UTC')!;
    for (const [week, message] of [
      ['2025-W30', /week: 2025-W30 starts on 2025-07-21, after today/],
      ['soon', /week: "soon" is not a week/],
    ] as const) {
      await expect(harness.client.readResource({ uri: `querygate://reports/weekly/${week}` })).rejects.toMatchObject({
        code: -32602,
        message: expect.stringMatching(message),
      });
    }
  });
});
