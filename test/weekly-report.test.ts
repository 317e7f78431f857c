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
import { salesPack } from '../pack/index.js';
import { contentOf } from '../src/content.js';
import { startHarness, structured, textOf, type Harness } from './support/harness.js';
import { isNet, loadSalesData, localDay, ordersBetween, type RawOrder, type SalesData } from './support/sales-data.js';
import { createScratchDatabase, type ScratchDatabase } from './support/scratch.js';

// Wednesday 18 June 2025, noon UTC: last week is 2025-W24 (9..15 June), this week 2025-W25 so far.
const NOW = Date.parse('2025-06-18T12:00:00Z');
const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
// UTC; Havana, whose clocks jump from 00:00 to 01:00 on Sunday 9 March 2025 (in 2025-W10); Kolkata's half hour.
const ZONES = ['UTC', 'America/Havana', 'Asia/Kolkata'];
/** The planted day: Wednesday 11 June, forty extra paid orders of 500.00 USD at noon UTC. */
const PLANTED = '2025-06-11';

let scratch: ScratchDatabase;
let data: SalesData;
const harnesses = new Map<string, Harness>();

beforeAll(async () => {
  scratch = await createScratchDatabase('weekly_report', { orders: 6000, until: '2025-06-30' });
  const add = async (id: number, status: string, at: string, currency: string, product: number, amount: string) => {
    await scratch.admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
      [id, (id % 50) + 1, status, at, currency, amount],
    );
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, $2, 1, $3)',
      [id, product, amount],
    );
  };
  for (let k = 0; k < 40; k++) await add(980000 + k, 'paid', `${PLANTED}T12:00:00Z`, 'USD', (k % 5) + 1, '500.00');
  const eur: [string, string, string][] = [
    ['paid', '2025-06-10T10:00:00Z', '120.00'],
    ['shipped', '2025-06-14T23:30:00Z', '80.50'],
    ['refunded', '2025-06-11T09:00:00Z', '999.00'],
    ['paid', '2025-06-03T12:00:00Z', '40.00'],
    ['cancelled', '2025-06-16T08:00:00Z', '15.00'],
    ['paid', '2025-06-17T08:00:00Z', '64.00'],
  ];
  for (const [k, [status, at, amount]] of eur.entries()) await add(981000 + k, status, at, 'EUR', 2, amount);
  data = await loadSalesData(scratch.admin);
  for (const timeZone of ZONES) {
    harnesses.set(
      timeZone,
      await startHarness({
        readerUrl: scratch.readerUrl,
        timeZone,
        now: () => NOW,
        content: contentOf([salesPack], () => NOW),
      }),
    );
  }
});
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

interface Metric {
  metric: string;
  currency: string | null;
  value: number | null;
  last_week: number | null;
  year_ago: number | null;
  change_vs_last_week: number | null;
  change_vs_year_ago: number | null;
  change_unit: string;
}
interface Report {
  week: string;
  start_date: string;
  end_date: string;
  through_date: string;
  partial: boolean;
  has_orders: boolean;
  summary: string;
  data_as_of: string;
  last_week: { start_date: string; end_date: string };
  year_ago: { start_date: string; end_date: string };
  metrics: Metric[];
  daily: { date: string; currency: string; revenue: number; last_week_revenue: number; change_pct: number | null }[];
  top_products: {
    rank: number;
    sku: string;
    currency: string;
    revenue: number;
    units: number;
    rank_last_week: number | null;
  }[];
  regions: {
    region: string;
    currency: string;
    revenue: number;
    last_week_revenue: number;
    change_pct: number | null;
  }[];
  categories: {
    category: string;
    currency: string;
    revenue: number;
    last_week_revenue: number;
    change_pct: number | null;
  }[];
  notable_days: { date: string; currency: string; revenue: number; baseline_median: number; direction: string }[];
}

const pct = (now: number, before: number): number | null =>
  before === 0 ? null : Math.round(((now - before) / before) * 1000) / 10;

/** Net revenue in cents per key, from the raw orders (or their items, by product or category). */
function net(from: string, to: string, zone: string, key: (o: RawOrder) => string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const o of ordersBetween(data, from, to, zone).filter(isNet)) {
    sums.set(key(o), (sums.get(key(o)) ?? 0) + o.totalCents);
  }
  return sums;
}

function netItems(from: string, to: string, zone: string, key: (o: RawOrder, product: number) => string) {
  const orders = new Map(
    ordersBetween(data, from, to, zone)
      .filter(isNet)
      .map((o) => [o.id, o]),
  );
  const sums = new Map<string, { cents: number; units: number }>();
  for (const item of data.items) {
    const order = orders.get(item.orderId);
    if (!order) continue;
    const k = key(order, item.productId);
    const sum = sums.get(k) ?? { cents: 0, units: 0 };
    sum.cents += item.quantity * item.priceCents;
    sum.units += item.quantity;
    sums.set(k, sum);
  }
  return sums;
}

/** The products of each currency ranked as the report ranks them: revenue, then units, then SKU. */
function ranking(from: string, to: string, zone: string): Map<string, number> {
  const sums = netItems(from, to, zone, (o, p) => `${data.products.get(p)!.sku}|${o.currency}`);
  const ranked = [...sums].sort(([ka, a], [kb, b]) => {
    const [skuA, ca] = ka.split('|') as [string, string];
    const [skuB, cb] = kb.split('|') as [string, string];
    return ca.localeCompare(cb) || b.cents - a.cents || b.units - a.units || (skuA < skuB ? -1 : 1);
  });
  const rank = new Map<string, number>();
  const seen = new Map<string, number>();
  for (const [k] of ranked) {
    const c = k.split('|')[1]!;
    seen.set(c, (seen.get(c) ?? 0) + 1);
    rank.set(k, seen.get(c)!);
  }
  return rank;
}

/** An implementation of the notable-day rule of its own: median and MAD of the same weekday, 8 weeks before. */
function expectedNotable(from: string, to: string, zone: string): { date: string; currency: string }[] {
  const byDay = net(shift(from, -56), to, zone, (o) => `${localDay(o.orderedAt, zone)}|${o.currency}`);
  const found: { date: string; currency: string }[] = [];
  const currencies = [
    ...new Set(
      ordersBetween(data, from, to, zone)
        .filter(isNet)
        .map((o) => o.currency),
    ),
  ].sort();
  const med = (xs: number[]): number => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  for (let day = from; day <= to; day = shift(day, 1)) {
    for (const c of currencies) {
      const x = (byDay.get(`${day}|${c}`) ?? 0) / 100;
      const base = [1, 2, 3, 4, 5, 6, 7, 8].map((k) => (byDay.get(`${shift(day, -7 * k)}|${c}`) ?? 0) / 100);
      const m = med(base);
      const mad = med(base.map((b) => Math.abs(b - m)));
      const meanAd = base.reduce((s, b) => s + Math.abs(b - m), 0) / base.length;
      const scale = mad > 0 ? mad / 0.6745 : meanAd * 1.253314;
      if (scale > 0 ? Math.abs(x - m) / scale > 3.5 : x !== m) found.push({ date: day, currency: c });
    }
  }
  return found;
}

async function report(zone: string, week: string): Promise<Report> {
  return structured<Report>(await harnesses.get(zone)!.call('weekly_sales_report', { week }));
}

/** Checks every figure of a report on the days from..to against the raw orders. */
function checkReport(r: Report, zone: string, from: string, to: string): void {
  const lastFrom = shift(from, -7);
  const lastTo = shift(to, -7);
  const agoFrom = shift(from, -364);
  const agoTo = shift(to, -364);
  expect(r.last_week).toEqual({ start_date: lastFrom, end_date: lastTo });
  expect(r.year_ago).toEqual({ start_date: agoFrom, end_date: agoTo });

  const byCurrency = (f: string, t: string) => net(f, t, zone, (o) => o.currency);
  const netOrders = (f: string, t: string, c: string) =>
    ordersBetween(data, f, t, zone).filter((o) => isNet(o) && o.currency === c).length;
  const [now, last, ago] = [byCurrency(from, to), byCurrency(lastFrom, lastTo), byCurrency(agoFrom, agoTo)];
  const currencies = [...new Set([...now.keys(), ...last.keys(), ...ago.keys()])].sort();
  const find = (metric: string, currency: string | null) =>
    r.metrics.find((m) => m.metric === metric && m.currency === currency);
  for (const c of currencies) {
    const revenue = find('revenue', c)!;
    expect(revenue, `revenue ${c}`).toMatchObject({
      value: (now.get(c) ?? 0) / 100,
      last_week: (last.get(c) ?? 0) / 100,
      year_ago: (ago.get(c) ?? 0) / 100,
      change_vs_last_week: pct(now.get(c) ?? 0, last.get(c) ?? 0),
      change_vs_year_ago: pct(now.get(c) ?? 0, ago.get(c) ?? 0),
      change_unit: 'percent',
    });
    const aov = (sums: Map<string, number>, f: string, t: string): number | null => {
      const n = netOrders(f, t, c);
      return n === 0 ? null : Math.round((sums.get(c) ?? 0) / n) / 100;
    };
    expect(find('avg_order_value', c), `aov ${c}`).toMatchObject({
      value: aov(now, from, to),
      last_week: aov(last, lastFrom, lastTo),
      year_ago: aov(ago, agoFrom, agoTo),
    });
  }
  const all = (f: string, t: string) => ordersBetween(data, f, t, zone);
  const [ordersNow, ordersLast, ordersAgo] = [all(from, to), all(lastFrom, lastTo), all(agoFrom, agoTo)];
  expect(find('order_count', null)).toMatchObject({
    value: ordersNow.length,
    last_week: ordersLast.length,
    year_ago: ordersAgo.length,
    change_vs_last_week: pct(ordersNow.length, ordersLast.length),
  });
  for (const [metric, status] of [
    ['cancellation_rate', 'cancelled'],
    ['refund_rate', 'refunded'],
  ] as const) {
    const rateOf = (os: RawOrder[]) =>
      os.length === 0 ? null : Math.round((os.filter((o) => o.status === status).length / os.length) * 1000) / 10;
    const [a, b, c] = [rateOf(ordersNow), rateOf(ordersLast), rateOf(ordersAgo)];
    expect(find(metric, null), metric).toMatchObject({
      value: a,
      last_week: b,
      year_ago: c,
      change_vs_last_week: a === null || b === null ? null : Math.round((a - b) * 10) / 10,
      change_unit: 'percentage_points',
    });
  }

  // Days: every day of the range, for each currency sold this week or the week before.
  const daily = net(lastFrom, to, zone, (o) => `${localDay(o.orderedAt, zone)}|${o.currency}`);
  const sold = [...new Set([...now.keys(), ...last.keys()])].sort();
  const expectedDays = [];
  for (let day = from; day <= to; day = shift(day, 1)) {
    for (const c of sold) {
      const [x, y] = [daily.get(`${day}|${c}`) ?? 0, daily.get(`${shift(day, -7)}|${c}`) ?? 0];
      expectedDays.push({
        date: day,
        currency: c,
        revenue: x / 100,
        last_week_revenue: y / 100,
        change_pct: pct(x, y),
      });
    }
  }
  expect(
    r.daily.map(({ date, currency, revenue, last_week_revenue, change_pct }) => ({
      date,
      currency,
      revenue,
      last_week_revenue,
      change_pct,
    })),
  ).toEqual(expectedDays);

  // Top products: the best five of each currency, and where each stood the week before.
  const rankNow = ranking(from, to, zone);
  const rankBefore = ranking(lastFrom, lastTo, zone);
  const items = netItems(from, to, zone, (o, p) => `${data.products.get(p)!.sku}|${o.currency}`);
  const expectedTop = [...rankNow]
    .filter(([, rank]) => rank <= 5)
    .sort(([ka, a], [kb, b]) => ka.split('|')[1]!.localeCompare(kb.split('|')[1]!) || a - b)
    .map(([k, rank]) => ({
      rank,
      sku: k.split('|')[0],
      currency: k.split('|')[1],
      revenue: items.get(k)!.cents / 100,
      units: items.get(k)!.units,
      rank_last_week: rankBefore.get(k) ?? null,
    }));
  expect(
    r.top_products.map(({ rank, sku, currency, revenue, units, rank_last_week }) => ({
      rank,
      sku,
      currency,
      revenue,
      units,
      rank_last_week,
    })),
  ).toEqual(expectedTop);

  // Regions and categories, each group against the same group the week before.
  const region = (o: RawOrder) => `${data.customers.get(o.customerId)!.region}|${o.currency}`;
  const [regionNow, regionLast] = [net(from, to, zone, region), net(lastFrom, lastTo, zone, region)];
  expect(r.regions.length).toBe(regionNow.size);
  for (const row of r.regions) {
    const k = `${row.region}|${row.currency}`;
    expect(row, k).toMatchObject({
      revenue: regionNow.get(k)! / 100,
      last_week_revenue: (regionLast.get(k) ?? 0) / 100,
      change_pct: pct(regionNow.get(k)!, regionLast.get(k) ?? 0),
    });
  }
  const category = (o: RawOrder, p: number) => `${data.products.get(p)!.category}|${o.currency}`;
  const [catNow, catLast] = [netItems(from, to, zone, category), netItems(lastFrom, lastTo, zone, category)];
  expect(r.categories.length).toBe(catNow.size);
  for (const row of r.categories) {
    const k = `${row.category}|${row.currency}`;
    expect(row, k).toMatchObject({
      revenue: catNow.get(k)!.cents / 100,
      last_week_revenue: (catLast.get(k)?.cents ?? 0) / 100,
      change_pct: pct(catNow.get(k)!.cents, catLast.get(k)?.cents ?? 0),
    });
  }

  expect(r.notable_days.map(({ date, currency }) => ({ date, currency }))).toEqual(expectedNotable(from, to, zone));
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
    // The planted day's own weekday, a week later, is held to a baseline that holds the planted day: still ordinary.
    const next = await report('UTC', '2025-06-18');
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

  it('a week still running is partial, carries data_as_of, and is compared day for day', async () => {
    const before = Date.now();
    const r = await report('UTC', 'this_week');
    expect(r).toMatchObject({ week: '2025-W25', through_date: '2025-06-18', partial: true });
    expect(Date.parse(r.data_as_of)).toBeGreaterThanOrEqual(before - 1000);
    expect(r.summary).toMatch(/so far/);
    checkReport(r, 'UTC', '2025-06-16', '2025-06-18');
  });

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

interface Trend {
  weeks: number;
  first_week: string;
  last_week: string;
  start_date: string;
  end_date: string;
  partial: boolean;
  rows: {
    week: string;
    start_date: string;
    currency: string;
    revenue: number;
    order_count: number;
    avg_order_value: number | null;
    change_pct: number | null;
    change_note?: string;
  }[];
}

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
      const trend = structured<Trend>(result as CallToolResult);
      // 40 weeks are read 12 at a time: four queries, each told of as it ends.
      expect(seen).toEqual([1, 2, 3, 4]);
      const first = shift('2025-06-09', -7 * 39);
      expect(trend).toMatchObject({ weeks: 40, last_week: '2025-W24', start_date: first, end_date: '2025-06-15' });
      const sums = new Map<string, { cents: number; orders: number }>();
      for (const o of ordersBetween(data, shift(first, -7), '2025-06-15', zone).filter(isNet)) {
        const day = localDay(o.orderedAt, zone);
        const monday = shift(day, -((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));
        const sum = sums.get(`${monday}|${o.currency}`) ?? { cents: 0, orders: 0 };
        sum.cents += o.totalCents;
        sum.orders += 1;
        sums.set(`${monday}|${o.currency}`, sum);
      }
      const expected = [];
      for (let k = 0; k < 40; k++) {
        const monday = shift(first, 7 * k);
        for (const c of ['EUR', 'USD']) {
          const sum = sums.get(`${monday}|${c}`) ?? { cents: 0, orders: 0 };
          const before = sums.get(`${shift(monday, -7)}|${c}`)?.cents ?? 0;
          expected.push({
            start_date: monday,
            currency: c,
            revenue: sum.cents / 100,
            order_count: sum.orders,
            avg_order_value: sum.orders === 0 ? null : Math.round(sum.cents / sum.orders) / 100,
            change_pct: pct(sum.cents, before),
          });
        }
      }
      expect(trend.rows.map(({ week: _week, change_note: _note, ...row }) => row)).toEqual(expected);
      expect(trend.rows[0]!.week).toBe('2024-W37');
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
    expect(text).toContain(`| Net revenue | USD | ${usd.value} | ${usd.last_week} |`);
    for (const day of r.daily) expect(text).toContain(`${day.date} | ${day.currency} | ${day.revenue} |`);
    for (const p of r.top_products) expect(text).toContain(`(${p.sku}) |`);
    for (const d of r.notable_days) expect(text).toContain(`${d.date} | ${d.currency} | ${d.revenue} |`);
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
