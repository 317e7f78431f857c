/**
 * The sales reports' figures worked out here from the raw orders (test/support/sales-data.ts), never
 * from the server's SQL: every test of a report, through MCP or the report command, holds it to these.
 */
import type pg from 'pg';
import { expect } from 'vitest';
import { isNet, localDay, ordersBetween, type RawOrder, type SalesData } from './sales-data.js';

/** An order of one item, written beside the seeded ones (the rollups follow through their triggers). */
export interface AddedOrder {
  readonly id: number;
  readonly status: string;
  readonly at: string;
  readonly currency: string;
  readonly product: number;
  readonly amount: string;
  /** The seeded customer who placed it; by default one of the first fifty, from the id. */
  readonly customer?: number;
}

export async function addOrder(admin: pg.Client, order: AddedOrder): Promise<void> {
  await admin.query(
    'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
    [order.id, order.customer ?? (order.id % 50) + 1, order.status, order.at, order.currency, order.amount],
  );
  await admin.query(
    'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, $2, 1, $3)',
    [order.id, order.product, order.amount],
  );
}

const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

export interface Metric {
  metric: string;
  currency: string | null;
  value: number | null;
  last_week: number | null;
  year_ago: number | null;
  change_vs_last_week: number | null;
  change_vs_year_ago: number | null;
  change_unit: string;
}
export interface WeeklyReport {
  week: string;
  start_date: string;
  end_date: string;
  through_date: string;
  partial: boolean;
  has_orders: boolean;
  summary: string;
  data_as_of: string;
  until?: string;
  last_week: { start_date: string; end_date: string; until?: string };
  year_ago: { start_date: string; end_date: string; until?: string };
  metrics: Metric[];
  daily: {
    date: string;
    currency: string;
    revenue: number;
    last_week_revenue: number;
    change_pct: number | null;
    partial: boolean;
  }[];
  top_products: {
    rank: number;
    sku: string;
    name: string;
    category: string;
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

export const pct = (now: number, before: number): number | null =>
  before === 0 ? null : Math.round(((now - before) / before) * 1000) / 10;

/** Net revenue in cents per key, from the raw orders (or their items, by product or category). */
function net(
  data: SalesData,
  from: string,
  to: string,
  zone: string,
  key: (o: RawOrder) => string,
): Map<string, number> {
  const sums = new Map<string, number>();
  for (const o of ordersBetween(data, from, to, zone).filter(isNet)) {
    sums.set(key(o), (sums.get(key(o)) ?? 0) + o.totalCents);
  }
  return sums;
}

function netItems(
  data: SalesData,
  from: string,
  to: string,
  zone: string,
  key: (o: RawOrder, product: number) => string,
) {
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
function ranking(data: SalesData, from: string, to: string, zone: string): Map<string, number> {
  const sums = netItems(data, from, to, zone, (o, p) => `${data.products.get(p)!.sku}|${o.currency}`);
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
function expectedNotable(
  data: SalesData,
  from: string,
  to: string,
  zone: string,
): { date: string; currency: string }[] {
  const byDay = net(data, shift(from, -56), to, zone, (o) => `${localDay(o.orderedAt, zone)}|${o.currency}`);
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

/** Where a running week is cut (milliseconds), and the week before and the year-ago week with it. */
export interface WeekCuts {
  readonly now: number;
  readonly lastWeek: number;
  readonly yearAgo: number;
}

/** The orders, less those of the last day of each side at or after that side's cut. */
function cutData(data: SalesData, zone: string, ends: [string, number][]): SalesData {
  const cuts = new Map(ends);
  return {
    ...data,
    orders: data.orders.filter((o) => {
      const cut = cuts.get(localDay(o.orderedAt, zone));
      return cut === undefined || o.orderedAt.getTime() < cut;
    }),
  };
}

/**
 * Checks every figure of a report on the days from..to against the raw orders; for a running week,
 * with each side cut where `cuts` says, and only the days before `to` judged for notable days.
 */
export function checkWeeklyReport(
  raw: SalesData,
  r: WeeklyReport,
  zone: string,
  from: string,
  to: string,
  cuts?: WeekCuts,
): void {
  const lastFrom = shift(from, -7);
  const lastTo = shift(to, -7);
  const agoFrom = shift(from, -364);
  const agoTo = shift(to, -364);
  const data = cuts
    ? cutData(raw, zone, [
        [to, cuts.now],
        [lastTo, cuts.lastWeek],
        [agoTo, cuts.yearAgo],
      ])
    : raw;
  const untilAt = (at: number | undefined) => (at === undefined ? {} : { until: expect.any(String) });
  expect(r.last_week).toEqual({ start_date: lastFrom, end_date: lastTo, ...untilAt(cuts?.lastWeek) });
  expect(r.year_ago).toEqual({ start_date: agoFrom, end_date: agoTo, ...untilAt(cuts?.yearAgo) });
  expect(r.partial).toBe(cuts !== undefined);
  if (cuts) {
    expect(Date.parse(r.until!)).toBe(cuts.now);
    expect(Date.parse(r.last_week.until!)).toBe(cuts.lastWeek);
    expect(Date.parse(r.year_ago.until!)).toBe(cuts.yearAgo);
  }

  const byCurrency = (f: string, t: string) => net(data, f, t, zone, (o) => o.currency);
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
  const daily = net(data, lastFrom, to, zone, (o) => `${localDay(o.orderedAt, zone)}|${o.currency}`);
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
  const rankNow = ranking(data, from, to, zone);
  const rankBefore = ranking(data, lastFrom, lastTo, zone);
  const items = netItems(data, from, to, zone, (o, p) => `${data.products.get(p)!.sku}|${o.currency}`);
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
  const [regionNow, regionLast] = [net(data, from, to, zone, region), net(data, lastFrom, lastTo, zone, region)];
  // Every group that sold in either week, so that one falling to nothing shows.
  expect(new Set(r.regions.map((row) => `${row.region}|${row.currency}`))).toEqual(
    new Set([...regionNow.keys(), ...regionLast.keys()]),
  );
  for (const row of r.regions) {
    const k = `${row.region}|${row.currency}`;
    expect(row, k).toMatchObject({
      revenue: (regionNow.get(k) ?? 0) / 100,
      last_week_revenue: (regionLast.get(k) ?? 0) / 100,
      change_pct: pct(regionNow.get(k) ?? 0, regionLast.get(k) ?? 0),
    });
  }
  const category = (o: RawOrder, p: number) => `${data.products.get(p)!.category}|${o.currency}`;
  const [catNow, catLast] = [
    netItems(data, from, to, zone, category),
    netItems(data, lastFrom, lastTo, zone, category),
  ];
  expect(new Set(r.categories.map((row) => `${row.category}|${row.currency}`))).toEqual(
    new Set([...catNow.keys(), ...catLast.keys()]),
  );
  for (const row of r.categories) {
    const k = `${row.category}|${row.currency}`;
    expect(row, k).toMatchObject({
      revenue: (catNow.get(k)?.cents ?? 0) / 100,
      last_week_revenue: (catLast.get(k)?.cents ?? 0) / 100,
      change_pct: pct(catNow.get(k)?.cents ?? 0, catLast.get(k)?.cents ?? 0),
    });
  }

  expect(r.notable_days.map(({ date, currency }) => ({ date, currency }))).toEqual(
    expectedNotable(data, from, cuts ? shift(to, -1) : to, zone),
  );
  expect(r.daily.filter((d) => d.partial).map((d) => d.date)).toEqual(
    cuts ? r.daily.filter((d) => d.date === to).map(() => to) : [],
  );
}

export interface TrendReport {
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
    partial: boolean;
    until?: string;
  }[];
}

/**
 * The trend's rows from `first` (a Monday) for `weeks` weeks in the given currencies, without their
 * week labels and change notes: each week's net revenue, net orders and average order value per
 * currency, and the revenue change from the week before. With `cut` (the last week still running):
 * that week's orders before cut.now only, and its change against the week before's orders before
 * cut.lastWeek.
 */
export function expectedTrendRows(
  data: SalesData,
  zone: string,
  first: string,
  weeks: number,
  currencies: readonly string[],
  cut?: { now: number; lastWeek: number },
): Omit<TrendReport['rows'][number], 'week' | 'change_note'>[] {
  const last = shift(first, 7 * weeks - 1);
  const lastMonday = shift(last, -6);
  const sums = new Map<string, { cents: number; orders: number }>();
  const beforeCut = new Map<string, number>();
  for (const o of ordersBetween(data, shift(lastMonday, -7), shift(lastMonday, -1), zone).filter(isNet)) {
    if (cut && o.orderedAt.getTime() < cut.lastWeek) {
      beforeCut.set(o.currency, (beforeCut.get(o.currency) ?? 0) + o.totalCents);
    }
  }
  for (const o of ordersBetween(data, shift(first, -7), last, zone).filter(isNet)) {
    if (cut && o.orderedAt.getTime() >= cut.now) continue;
    const day = localDay(o.orderedAt, zone);
    const monday = shift(day, -((new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7));
    const sum = sums.get(`${monday}|${o.currency}`) ?? { cents: 0, orders: 0 };
    sum.cents += o.totalCents;
    sum.orders += 1;
    sums.set(`${monday}|${o.currency}`, sum);
  }
  const expected = [];
  for (let k = 0; k < weeks; k++) {
    const monday = shift(first, 7 * k);
    for (const c of currencies) {
      const sum = sums.get(`${monday}|${c}`) ?? { cents: 0, orders: 0 };
      const running = cut !== undefined && monday === lastMonday;
      const before = running ? (beforeCut.get(c) ?? 0) : (sums.get(`${shift(monday, -7)}|${c}`)?.cents ?? 0);
      expected.push({
        start_date: monday,
        currency: c,
        revenue: sum.cents / 100,
        order_count: sum.orders,
        avg_order_value: sum.orders === 0 ? null : Math.round(sum.cents / sum.orders) / 100,
        change_pct: pct(sum.cents, before),
        partial: running,
        ...(running ? { until: expect.any(String) as string } : {}),
      });
    }
  }
  return expected;
}

/** Names that would break a page or a table if any renderer wrote them as they are. */
export const HOSTILE = {
  product: 'Mug | <img src=x onerror=alert(1)> *bold* _em_ & "quoted"',
  category: '<script>alert("category")</script>',
  region: "North</td><td>&amp; 'West' <style>body{display:none}</style>",
} as const;

/** Euro orders beside the seeded ones (US dollars only), of every status, in 2025-W23..W25. */
export async function addEuroOrders(admin: pg.Client): Promise<void> {
  const eur: [string, string, string][] = [
    ['paid', '2025-06-10T10:00:00Z', '120.00'],
    ['shipped', '2025-06-14T23:30:00Z', '80.50'],
    ['refunded', '2025-06-11T09:00:00Z', '999.00'],
    ['paid', '2025-06-03T12:00:00Z', '40.00'],
    ['cancelled', '2025-06-16T08:00:00Z', '15.00'],
    ['paid', '2025-06-17T08:00:00Z', '64.00'],
  ];
  for (const [k, [status, at, amount]] of eur.entries()) {
    await addOrder(admin, { id: 981000 + k, status, at, currency: 'EUR', product: 2, amount });
  }
}

/**
 * Six customers of a region named HOSTILE.region buying, in euros, a product and category named
 * HOSTILE.product and HOSTILE.category, on each day of 2025-W23 and 2025-W24 but the Sunday.
 */
export async function addHostileSales(admin: pg.Client): Promise<void> {
  await admin.query(
    "insert into sales.products (id, sku, name, category, unit_price) values (90001, 'SKU-H0001', $1, $2, 300)",
    [HOSTILE.product, HOSTILE.category],
  );
  for (let k = 0; k < 6; k++) {
    const customer = 900001 + k;
    await admin.query(
      "insert into sales.customers (id, name, email, phone, region) values ($1, 'Hostile Buyer', $2, '+1 555 0100', $3)",
      [customer, `buyer${k}@example.com`, HOSTILE.region],
    );
    for (const [n, at] of [`2025-06-0${3 + k}T15:00:00Z`, `2025-06-1${k}T15:00:00Z`].entries()) {
      const id = 982000 + k * 10 + n;
      await addOrder(admin, {
        id,
        status: 'paid',
        at,
        currency: 'EUR',
        product: 90001,
        amount: `${300 + k}.00`,
        customer,
      });
    }
  }
}
