/**
 * Data scoped by identity: a caller scoped to one region (Europe), and one scoped to two, get from
 * every sales template and both reports exactly the figures of the raw rows of their regions,
 * worked out here in JavaScript from a scratch database read through the admin connection: counts,
 * sales by day, week, month, region and category, comparisons, top products and recent orders, in
 * UTC, in Kolkata's half hour and in New York. The statements sent bind every value of the scope and read no
 * rollup without a region; an argument outside the scope is refused naming it (a prompt's too), and
 * completions and the weekly report resource keep to the scope; templates that cannot apply it (the
 * support desk's) are neither listed nor callable; a template that binds too little of it is refused;
 * a job or a task keeps its caller's scope, even when another replica runs it; the audit line says who
 * asked, within what.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { defineTemplate } from '../../pack/kit.js';
import { salesPack } from '../../pack/index.js';
import { templates } from '../../queries/index.js';
import { reports } from '../../reports/index.js';
import { contentOf } from '../../src/content/index.js';
import type { Statement } from '../../src/db/connect.js';
import { ConfigError } from '../../src/lib/errors.js';
import { createTokenizer } from '../../src/lib/masking.js';
import { createRegistry, type Caller } from '../../src/registry/index.js';
import { startHarness, structured, textOf, type Harness } from '../support/harness.js';
import {
  isNet,
  isoWeekStart,
  loadSalesData,
  localDay,
  money,
  ordersBetween,
  type RawOrder,
  type SalesData,
  type SalesRow,
} from '../support/sales-data.js';
import {
  addEuroOrders,
  checkWeeklyReport,
  expectedTrendRows,
  type TrendReport,
  type WeeklyReport,
} from '../support/sales-reports.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from '../support/scratch.js';

// Wednesday 2 July 2025, noon UTC, after the data's last day (30 June), so that no range asked for is still
// running and cut at the minute (src/lib/running.ts): last week is 2025-W26 (23..29 June).
const NOW = Date.parse('2025-07-02T12:00:00Z');
// UTC, where the daily rollups answer whole days; Kolkata's half hour cuts every day across two UTC days,
// so the rows answer; New York's whole hours let the hourly region rollup answer days that are not UTC days.
const ZONES = ['UTC', 'Asia/Kolkata', 'America/New_York'];
const EUROPE: Caller = {
  id: 'rep-europe',
  dataScope: { region: ['Europe'] },
  subject: 'subject-5f1c',
  clientId: 'crm-connector',
};
const TWO_REGIONS: Caller = { id: 'rep-two', dataScope: { region: ['Europe', 'Asia Pacific'] } };
const SCOPED = [EUROPE, TWO_REGIONS];
const JUNE = { start_date: '2025-06-01', end_date: '2025-06-30' } as const;
/** 90 days, counted inclusively, ending with the data. */
const QUARTER = { start_date: '2025-04-01', end_date: '2025-06-29' } as const;
/** The rollups that have no region: a scoped statement must never read them (region_product_days may). */
const UNSCOPED_ROLLUPS = /"(order_hours|product_days|category_days)"/;

let scratch: ScratchDatabase;
let data: SalesData;
/** A harness per caller and zone, and every statement each sent, with its parameters. */
const harnesses = new Map<string, Harness>();
const sent = new Map<string, Statement[]>();
const key = (caller: Caller, zone: string): string => `${caller.id}|${zone}`;

beforeAll(async () => {
  scratch = await createScratchDatabase('data_scope', { orders: 6000, until: '2025-06-30' });
  await addEuroOrders(scratch.admin); // a second currency, sold by customers of several regions
  data = await loadSalesData(scratch.admin);
  for (const caller of [...SCOPED, { id: 'everyone' }]) {
    for (const timeZone of ZONES) {
      const harness = await startHarness({
        readerUrl: scratch.readerUrl,
        timeZone,
        caller,
        now: () => NOW,
        content: contentOf([salesPack], () => NOW),
      });
      const statements: Statement[] = [];
      const execute = harness.reader.execute.bind(harness.reader);
      // Observed, not replaced: every statement still runs on the real reader.
      harness.reader.execute = (query, signal) => (statements.push(query), execute(query, signal));
      harnesses.set(key(caller, timeZone), harness);
      sent.set(key(caller, timeZone), statements);
    }
  }
});
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

const regionsOf = (caller: Caller): readonly string[] => caller.dataScope!.region!;
const regionOf = (o: RawOrder): string => data.customers.get(o.customerId)!.region;

/** The raw rows a caller scoped to `regions` may see: the orders of customers in them, and their items. */
function within(regions: readonly string[]): SalesData {
  const orders = data.orders.filter((o) => regions.includes(regionOf(o)));
  const ids = new Set(orders.map((o) => o.id));
  return { ...data, orders, items: data.items.filter((i) => ids.has(i.orderId)) };
}

/** Calls a tool as the caller in the zone, and gives its structured result. */
async function call<T>(caller: Caller, zone: string, tool: string, args: unknown): Promise<T> {
  return structured<T>(await harnesses.get(key(caller, zone))!.call(tool, args));
}

describe('the scope is in the data: a scratch database with several regions and currencies', () => {
  it('holds orders both inside and outside each scope, in June and a year earlier', () => {
    for (const caller of SCOPED) {
      const inside = within(regionsOf(caller));
      for (const [from, to] of [
        ['2025-06-01', '2025-06-30'],
        ['2024-06-01', '2024-06-30'],
      ] as const) {
        const all = ordersBetween(data, from, to).length;
        const mine = ordersBetween(inside, from, to).length;
        expect(mine, `${caller.id} ${from}`).toBeGreaterThan(20);
        expect(mine, `${caller.id} ${from}`).toBeLessThan(all - 20);
      }
    }
    expect(new Set(data.orders.filter((o) => o.currency === 'EUR').map(regionOf)).size).toBeGreaterThan(1);
  });
});

/** Order counts per status of the orders of a range. */
function countsOf(d: SalesData, from: string, to: string, zone: string, status?: string) {
  const orders = ordersBetween(d, from, to, zone).filter((o) => status === undefined || o.status === status);
  const byStatus = Object.fromEntries(
    ['pending', 'paid', 'shipped', 'cancelled', 'refunded'].map((s) => [
      s,
      orders.filter((o) => o.status === s).length,
    ]),
  );
  return { order_count: orders.length, by_status: byStatus };
}

type Grouping = 'day' | 'week' | 'month' | 'region' | 'category';

/** Net sales of a range grouped as query_sales groups them, in its row order. */
function salesRows(d: SalesData, from: string, to: string, zone: string, by: Grouping): SalesRow[] {
  const groups = new Map<string, { key: string; currency: string; cents: number; orders: Set<number> }>();
  const add = (keyOf: string, currency: string, cents: number, order: number): void => {
    const id = `${keyOf}|${currency}`;
    const group = groups.get(id) ?? { key: keyOf, currency, cents: 0, orders: new Set<number>() };
    group.cents += cents;
    group.orders.add(order);
    groups.set(id, group);
  };
  const net = ordersBetween(d, from, to, zone).filter(isNet);
  if (by === 'category') {
    const orders = new Map(net.map((o) => [o.id, o]));
    for (const item of d.items) {
      const order = orders.get(item.orderId);
      if (order) {
        add(d.products.get(item.productId)!.category, order.currency, item.quantity * item.priceCents, order.id);
      }
    }
  } else {
    for (const o of net) {
      const day = localDay(o.orderedAt, zone);
      const group =
        by === 'day' ? day : by === 'week' ? isoWeekStart(day) : by === 'month' ? `${day.slice(0, 7)}-01` : regionOf(o);
      add(group, o.currency, o.totalCents, o.id);
    }
  }
  const field = by === 'region' || by === 'category' ? by : 'period';
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...groups.values()]
    .sort((a, b) =>
      field === 'period'
        ? cmp(a.key, b.key) || cmp(a.currency, b.currency)
        : cmp(a.currency, b.currency) || b.cents - a.cents || cmp(a.key, b.key),
    )
    .map((g) => ({
      [field]: g.key,
      currency: g.currency,
      order_count: g.orders.size,
      revenue: money(g.cents),
      avg_order_value: money(g.cents / g.orders.size),
    }));
}

interface Sales {
  rows: (SalesRow & {
    prior_revenue?: number | null;
    change_pct?: number | null;
    change_note?: string;
    partial?: boolean;
    first_day?: string;
    last_day?: string;
  })[];
  truncated: boolean;
  data_scope?: Record<string, string[]>;
  comparison?: {
    totals: { currency: string; revenue: number; prior_revenue: number }[] | null;
  };
}

// Without what a comparison adds, and without the bounds of a period the range covers in part (tested in
// test/lib/running-periods.test.ts and test/queries/tools.test.ts).
const figuresOf = (rows: Sales['rows']): SalesRow[] =>
  rows.map(
    ({
      prior_revenue: _prior,
      change_pct: _pct,
      change_note: _note,
      partial: _partial,
      first_day: _first,
      last_day: _last,
      ...row
    }) => row as SalesRow,
  );

/** Net product sales of a range, ranked per currency as query_top_products ranks them. */
function topProducts(d: SalesData, from: string, to: string, zone: string, limit: number, metric: 'revenue' | 'units') {
  const orders = new Map(
    ordersBetween(d, from, to, zone)
      .filter(isNet)
      .map((o) => [o.id, o]),
  );
  const sums = new Map<string, { productId: number; currency: string; units: number; cents: number }>();
  for (const item of d.items) {
    const order = orders.get(item.orderId);
    if (!order) continue;
    const id = `${item.productId}|${order.currency}`;
    const sum = sums.get(id) ?? { productId: item.productId, currency: order.currency, units: 0, cents: 0 };
    sum.units += item.quantity;
    sum.cents += item.quantity * item.priceCents;
    sums.set(id, sum);
  }
  const currencies = [...new Set([...sums.values()].map((s) => s.currency))].sort();
  const rows = [];
  let truncated = false;
  for (const currency of currencies) {
    const sold = [...sums.values()].filter((s) => s.currency === currency);
    truncated ||= sold.length > limit;
    const sku = (s: { productId: number }): string => d.products.get(s.productId)!.sku;
    sold.sort((a, b) => {
      const [first, second] = metric === 'units' ? ['units', 'cents'] : ['cents', 'units'];
      return (
        b[first as 'units'] - a[first as 'units'] ||
        b[second as 'units'] - a[second as 'units'] ||
        (sku(a) < sku(b) ? -1 : 1)
      );
    });
    for (const s of sold.slice(0, limit)) {
      const product = d.products.get(s.productId)!;
      rows.push({
        sku: product.sku,
        name: product.name,
        category: product.category,
        currency,
        units: s.units,
        revenue: money(s.cents),
      });
    }
  }
  return { rows, truncated };
}

describe.each(ZONES)('every sales template, for a scoped caller, equals the raw rows of its regions, in %s', (zone) => {
  it.each(SCOPED.map((c) => [c.id, c] as const))('query_order_count (%s), alone and compared', async (_, caller) => {
    const mine = within(regionsOf(caller));
    const result = await call<Record<string, unknown>>(caller, zone, 'query_order_count', {
      ...JUNE,
      compare_to: 'previous_period',
    });
    expect(result).toMatchObject({ ...countsOf(mine, '2025-06-01', '2025-06-30', zone), data_scope: caller.dataScope });
    expect(result.comparison).toMatchObject(countsOf(mine, '2025-05-02', '2025-05-31', zone));
    const refunded = await call<Record<string, unknown>>(caller, zone, 'query_order_count', {
      ...JUNE,
      status: 'refunded',
    });
    expect(refunded.order_count).toBe(countsOf(mine, '2025-06-01', '2025-06-30', zone, 'refunded').order_count);
  });

  it.each(SCOPED.map((c) => [c.id, c] as const))('query_sales by every grouping (%s)', async (_, caller) => {
    const mine = within(regionsOf(caller));
    for (const by of ['day', 'week', 'region', 'category'] as const) {
      const result = await call<Sales>(caller, zone, 'query_sales', { ...JUNE, group_by: by });
      expect(result.data_scope).toEqual(caller.dataScope);
      expect(figuresOf(result.rows), by).toEqual(salesRows(mine, JUNE.start_date, JUNE.end_date, zone, by));
    }
    const months = await call<Sales>(caller, zone, 'query_sales', { ...QUARTER, group_by: 'month' });
    expect(figuresOf(months.rows)).toEqual(salesRows(mine, QUARTER.start_date, QUARTER.end_date, zone, 'month'));
  });

  it.each(SCOPED.map((c) => [c.id, c] as const))(
    'query_sales by region shows the regions of the scope only (%s)',
    async (_, caller) => {
      const result = await call<Sales>(caller, zone, 'query_sales', { ...JUNE, group_by: 'region' });
      expect(new Set(result.rows.map((r) => r.region))).toEqual(new Set(regionsOf(caller)));
      const everyone = await call<Sales>({ id: 'everyone' }, zone, 'query_sales', { ...JUNE, group_by: 'region' });
      expect(new Set(everyone.rows.map((r) => r.region)).size).toBeGreaterThan(regionsOf(caller).length);
    },
  );

  it.each(SCOPED.map((c) => [c.id, c] as const))(
    'query_sales compared with the year before, by region and by category (%s)',
    async (_, caller) => {
      const mine = within(regionsOf(caller));
      for (const by of ['region', 'category'] as const) {
        const result = await call<Sales>(caller, zone, 'query_sales', {
          ...JUNE,
          group_by: by,
          compare_to: 'previous_year',
        });
        const prior = new Map(
          salesRows(mine, '2024-06-01', '2024-06-30', zone, by).map((r) => [`${r[by]}|${r.currency}`, r.revenue]),
        );
        // The groups that sold now, and after them those that sold a year earlier only, at 0.
        const sold = result.rows.filter((r) => r.order_count > 0);
        expect(figuresOf(sold)).toEqual(salesRows(mine, JUNE.start_date, JUNE.end_date, zone, by));
        const fallen = result.rows.filter((r) => r.order_count === 0).map((r) => `${r[by]}|${r.currency}`);
        expect(fallen.sort()).toEqual(
          [...prior.keys()].filter((k) => !sold.some((r) => `${r[by]}|${r.currency}` === k)).sort(),
        );
        for (const row of result.rows) {
          expect(row.prior_revenue, `${by} ${row[by]}`).toBe(prior.get(`${row[by]}|${row.currency}`) ?? 0);
        }
        const total = (rows: SalesRow[], c: string): number =>
          money(rows.filter((r) => r.currency === c).reduce((sum, r) => sum + Math.round(r.revenue * 100), 0));
        const before = salesRows(mine, '2024-06-01', '2024-06-30', zone, by);
        for (const t of result.comparison!.totals!) {
          expect(t).toMatchObject({
            revenue: total(figuresOf(result.rows), t.currency),
            prior_revenue: total(before, t.currency),
          });
        }
      }
    },
  );

  it.each(SCOPED.map((c) => [c.id, c] as const))('query_top_products by revenue and units (%s)', async (_, caller) => {
    const mine = within(regionsOf(caller));
    for (const metric of ['revenue', 'units'] as const) {
      const result = await call<{ rows: unknown[]; truncated: boolean }>(caller, zone, 'query_top_products', {
        ...JUNE,
        limit: 5,
        metric,
      });
      const expected = topProducts(mine, JUNE.start_date, JUNE.end_date, zone, 5, metric);
      expect(result.rows, metric).toEqual(expected.rows);
      expect(result.truncated).toBe(expected.truncated);
    }
  });

  it.each(SCOPED.map((c) => [c.id, c] as const))('query_recent_orders (%s)', async (_, caller) => {
    const mine = within(regionsOf(caller));
    const token = createTokenizer('test-token-key');
    for (const status of [undefined, 'pending'] as const) {
      const result = await call<{ rows: Record<string, unknown>[] }>(caller, zone, 'query_recent_orders', {
        ...JUNE,
        limit: 30,
        customer_fields: ['region'],
        ...(status ? { status } : {}),
      });
      const expected = ordersBetween(mine, JUNE.start_date, JUNE.end_date, zone)
        .filter((o) => status === undefined || o.status === status)
        .sort((a, b) => b.orderedAt.getTime() - a.orderedAt.getTime() || b.id - a.id)
        .slice(0, 30);
      expect(result.rows.length).toBe(expected.length);
      expect(result.rows.map((r) => [r.order_ref, r.ordered_at, r.status, r.total_amount, r.customer_region])).toEqual(
        expected.map((o) => [
          token('order', String(o.id)),
          o.orderedAt.toISOString(),
          o.status,
          money(o.totalCents),
          regionOf(o),
        ]),
      );
    }
  });

  it.each(SCOPED.map((c) => [c.id, c] as const))('weekly_sales_report, figure for figure (%s)', async (_, caller) => {
    const r = await call<WeeklyReport & { data_scope?: unknown }>(caller, zone, 'weekly_sales_report', {
      week: '2025-W24',
    });
    expect(r.data_scope).toEqual(caller.dataScope);
    checkWeeklyReport(within(regionsOf(caller)), r, zone, '2025-06-09', '2025-06-15');
    expect(r.regions.every((row) => regionsOf(caller).includes(row.region))).toBe(true);
  });

  it.each(SCOPED.map((c) => [c.id, c] as const))('sales_trend_report, week by week (%s)', async (_, caller) => {
    const mine = within(regionsOf(caller));
    const trend = await call<TrendReport & { data_scope?: unknown }>(caller, zone, 'sales_trend_report', {
      weeks: 12,
      through_week: '2025-W24',
    });
    const first = '2025-03-24';
    const currencies = [
      ...new Set(
        ordersBetween(mine, '2025-03-17', '2025-06-15', zone)
          .filter(isNet)
          .map((o) => o.currency),
      ),
    ].sort();
    expect(trend.data_scope).toEqual(caller.dataScope);
    expect(trend.rows.map(({ week: _week, change_note: _note, ...row }) => row)).toEqual(
      expectedTrendRows(mine, zone, first, 12, currencies),
    );
  });

  it('every statement a scoped caller sent bound each value of its scope and read no rollup without a region', () => {
    for (const caller of SCOPED) {
      const statements = sent.get(key(caller, zone))!;
      expect(statements.length).toBeGreaterThan(20);
      for (const { sql, parameters } of statements) {
        for (const region of regionsOf(caller)) expect(parameters, sql).toContain(region);
        expect(sql).not.toMatch(UNSCOPED_ROLLUPS);
      }
    }
  });
});

describe('a scoped caller reads the hourly region rollup', () => {
  // Figures alone cannot tell a rollup from the rows it sums: a rollup row changed behind the
  // triggers shows in the answer only if the answer read it. The hour is one of Europe's in June
  // between 04:00 and 24:00 UTC, so inside one day both in UTC and in New York (UTC-4 in June); the
  // rebuild takes the change back.
  it.each(['UTC', 'America/New_York'])(
    'sales by day of a Europe-scoped caller in %s come from region_hours',
    async (zone) => {
      const found = await scratch.admin.query<{ hour: Date; day: string; status: string; currency: string }>(
        `select hour, to_char(hour at time zone 'UTC', 'YYYY-MM-DD') as day, status, currency from sales.region_hours
        where region = 'Europe' and hour >= '2025-06-01' and hour < '2025-06-30'
          and extract(hour from hour at time zone 'UTC') >= 4 and status in ('paid', 'shipped')
        order by hour limit 1`,
      );
      expect(found.rows.length).toBe(1);
      const { hour, day, status, currency } = found.rows[0]!;
      const revenueOf = async (): Promise<number> =>
        (await call<Sales>(EUROPE, zone, 'query_sales', { ...JUNE, group_by: 'day' })).rows.find(
          (r) => r.period === day && r.currency === currency,
        )!.revenue;
      const before = await revenueOf();
      await scratch.admin.query(
        `update sales.region_hours set total_amount = total_amount + 1000
        where region = 'Europe' and hour = $1 and status = $2 and currency = $3`,
        [hour, status, currency],
      );
      try {
        expect(await revenueOf()).toBeCloseTo(before + 1000, 2);
      } finally {
        await scratch.admin.query('select sales.region_hours_rebuild()');
      }
      expect(await revenueOf()).toBe(before);
    },
  );
});

describe('a scoped caller reads the declared region rollups for top products and sales by category', () => {
  // As above: a row of region_product_days or region_category_days changed behind the triggers shows
  // in a Europe-scoped answer only if it read it. June 10 is a whole UTC day inside June in both
  // zones (New York's June 10 starts at 04:00 UTC, so the rollup serves its whole UTC days).
  const june10 = '2025-06-10T00:00:00Z';
  it.each(['UTC', 'America/New_York'])(
    'top products of a Europe-scoped caller in %s come from region_product_days',
    async (zone) => {
      const found = await scratch.admin.query<{ sku: string; product_id: string; status: string; currency: string }>(
        `select p.sku, d.product_id::text, d.status, d.currency from sales.region_product_days d
         join sales.products p on p.id = d.product_id
        where d.region = 'Europe' and d.day = $1 and d.status in ('paid', 'shipped') and d.lines > 0
        order by d.product_id limit 1`,
        [june10],
      );
      expect(found.rows.length).toBe(1);
      const { sku, product_id, status, currency } = found.rows[0]!;
      const unitsOf = async (): Promise<number> =>
        (
          await call<{ rows: { sku: string; currency: string; units: number }[] }>(EUROPE, zone, 'query_top_products', {
            ...JUNE,
            metric: 'units',
            limit: 100,
          })
        ).rows.find((r) => r.sku === sku && r.currency === currency)!.units;
      const before = await unitsOf();
      await scratch.admin.query(
        `update sales.region_product_days set units = units + 1000
        where region = 'Europe' and day = $1 and product_id = $2 and status = $3 and currency = $4`,
        [june10, product_id, status, currency],
      );
      try {
        expect(await unitsOf()).toBe(before + 1000);
      } finally {
        await scratch.admin.query('select sales.region_product_days_rebuild()');
      }
      expect(await unitsOf()).toBe(before);
    },
  );

  it.each(['UTC', 'America/New_York'])(
    'sales by category of a Europe-scoped caller in %s come from region_category_days',
    async (zone) => {
      const found = await scratch.admin.query<{ category: string; status: string; currency: string }>(
        `select category, status, currency from sales.region_category_days
        where region = 'Europe' and day = $1 and status in ('paid', 'shipped') and order_count > 0
        order by category limit 1`,
        [june10],
      );
      expect(found.rows.length).toBe(1);
      const { category, status, currency } = found.rows[0]!;
      const ordersOf = async (): Promise<number> =>
        (await call<Sales>(EUROPE, zone, 'query_sales', { ...JUNE, group_by: 'category' })).rows.find(
          (r) => r.category === category && r.currency === currency,
        )!.order_count;
      const before = await ordersOf();
      await scratch.admin.query(
        `update sales.region_category_days set order_count = order_count + 1000
        where region = 'Europe' and day = $1 and category = $2 and status = $3 and currency = $4`,
        [june10, category, status, currency],
      );
      try {
        expect(await ordersOf()).toBe(before + 1000);
      } finally {
        await scratch.admin.query('select sales.region_category_days_rebuild()');
      }
      expect(await ordersOf()).toBe(before);
    },
  );
});

describe('an argument cannot widen the scope', () => {
  it('a region outside the scope is refused, naming region and the scope; one inside keeps to it', async () => {
    const harness = harnesses.get(key(EUROPE, 'UTC'))!;
    const refused = await harness.call('query_sales', { ...JUNE, group_by: 'category', region: 'North America' });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(
      /region: outside your data scope \(Europe\); give one of those or leave region out/,
    );
    expect(textOf(refused)).not.toMatch(/North America.*\d/);
    const audited = harness.audits.at(-1)!;
    expect(audited).toMatchObject({
      tool: 'query_sales',
      outcome: 'rejected',
      error_code: 'outside_data_scope',
      invalid_fields: ['region'],
    });

    const inside = await call<Sales & { region?: string }>(EUROPE, 'UTC', 'query_sales', {
      ...JUNE,
      group_by: 'category',
      region: 'Europe',
    });
    expect(inside.region).toBe('Europe');
    expect(figuresOf(inside.rows)).toEqual(
      salesRows(within(['Europe']), JUNE.start_date, JUNE.end_date, 'UTC', 'category'),
    );
  });

  it('a caller of two regions may ask for one of them, and gets that one alone', async () => {
    for (const zone of ZONES) {
      const result = await call<Sales>(TWO_REGIONS, zone, 'query_sales', {
        ...JUNE,
        group_by: 'day',
        region: 'Asia Pacific',
      });
      expect(figuresOf(result.rows)).toEqual(
        salesRows(within(['Asia Pacific']), JUNE.start_date, JUNE.end_date, zone, 'day'),
      );
      expect(result.data_scope).toEqual(TWO_REGIONS.dataScope);
    }
  });

  it('an unscoped caller may ask for any region, and gets the raw rows of that region', async () => {
    for (const zone of ZONES) {
      const result = await call<Sales>({ id: 'everyone' }, zone, 'query_sales', {
        ...JUNE,
        group_by: 'week',
        region: 'Latin America',
      });
      expect(figuresOf(result.rows)).toEqual(
        salesRows(within(['Latin America']), JUNE.start_date, JUNE.end_date, zone, 'week'),
      );
      expect(result.data_scope).toBeUndefined();
    }
  });
});

describe('prompts, completions and resources follow the scope', () => {
  it('a prompt argument outside the scope is refused, and completions offer the regions of the scope only', async () => {
    const { client } = harnesses.get(key(EUROPE, 'UTC'))!;
    const refusal = await client
      .getPrompt({ name: 'explain_change', arguments: { metric: 'revenue', period: 'last_week', region: 'Africa' } })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(refusal).toBeInstanceOf(McpError);
    expect((refusal as McpError).code).toBe(-32602);
    expect((refusal as McpError).message).toMatch(/region: outside your data scope \(Europe\)/);
    const complete = async (caller: Caller): Promise<string[]> =>
      (
        await harnesses.get(key(caller, 'UTC'))!.client.complete({
          ref: { type: 'ref/prompt', name: 'explain_change' },
          argument: { name: 'region', value: '' },
        })
      ).completion.values;
    expect(await complete(EUROPE)).toEqual(['Europe']);
    expect(await complete(TWO_REGIONS)).toEqual(['Asia Pacific', 'Europe']);
    expect((await complete({ id: 'everyone' })).length).toBeGreaterThan(2);
  });

  it('the weekly report resource says whose part of the data it covers', async () => {
    const { client } = harnesses.get(key(EUROPE, 'UTC'))!;
    const read = await client.readResource({ uri: 'querygate://reports/weekly/2025-W24' });
    const text = (read.contents[0] as { text: string }).text;
    expect(text).toContain('_Data scope: region: Europe. The figures cover those rows only._');
    const regions = text.slice(text.indexOf('## By region'), text.indexOf('## By category'));
    expect(regions).toContain('| Europe |');
    expect(regions).not.toMatch(/North America|Asia Pacific|Latin America/);
    const everyone = await harnesses
      .get(key({ id: 'everyone' }, 'UTC'))!
      .client.readResource({ uri: 'querygate://reports/weekly/2025-W24' });
    expect((everyone.contents[0] as { text: string }).text).not.toContain('Data scope');
  });
});

describe('templates that cannot apply the scope are not served to a scoped caller', () => {
  const both = createRegistry([...templates, ...supportDeskPack.templates], { reports });
  const names = (caller: Caller): string[] => both.toolsFor(caller).map((t) => t.name);

  it('lists the sales tools to a region-scoped caller, and none of the support desk, which has no region', () => {
    expect(both.dataScopeDimensions).toEqual(new Set(['region']));
    expect(names({ id: 'everyone' })).toEqual([
      ...templates.map((t) => t.name),
      ...supportDeskPack.templates.map((t) => t.name),
      ...reports.map((r) => r.name),
    ]);
    expect(names(EUROPE)).toEqual([...templates.map((t) => t.name), ...reports.map((r) => r.name)]);
    // An empty scope is no scope; a toolset and a scope both apply.
    expect(names({ id: 'x', dataScope: {} })).toEqual(names({ id: 'everyone' }));
    expect(names({ ...EUROPE, tools: new Set(['query_sales', 'query_ticket_volume']) })).toEqual(['query_sales']);
  });

  it('fails closed: a dimension no template applies, or one scoped to no value, leaves no tool', () => {
    expect(names({ id: 'x', dataScope: { team: ['Billing'] } })).toEqual([]);
    expect(names({ id: 'x', dataScope: { region: ['Europe'], team: ['Billing'] } })).toEqual([]);
    expect(names({ id: 'x', dataScope: { region: [] } })).toEqual([]);
  });

  it('answers a call of a hidden template as it answers an unknown tool, and audits it with the scope', async () => {
    const harness = await startHarness({
      readerUrl: scratch.readerUrl,
      registry: both,
      caller: EUROPE,
      content: contentOf([salesPack, supportDeskPack], () => NOW),
    });
    try {
      const listed = (await harness.client.listTools()).tools.map((t) => t.name);
      expect(listed).not.toContain('query_ticket_volume');
      for (const name of ['query_ticket_volume', 'query_no_such_thing']) {
        await expect(harness.call(name, { start_date: '2025-06-01', end_date: '2025-06-07' })).rejects.toThrow(
          `Unknown tool: "${name}"`,
        );
      }
      expect(harness.audits.at(-2)).toMatchObject({
        tool: 'query_ticket_volume',
        outcome: 'unknown_tool',
        data_scope: EUROPE.dataScope,
        subject: EUROPE.subject,
        client_id: EUROPE.clientId,
      });
      // The catalog follows the tools, and tells the caller its scope.
      const catalog = await harness.client.readResource({ uri: 'querygate://catalog' });
      const text = (catalog.contents[0] as { text: string }).text;
      expect(text).toContain('Your data scope is region: Europe');
      expect(text).toContain('## query_sales');
      expect(text).not.toContain('query_ticket_volume');
    } finally {
      await harness.close();
    }
  });
});

describe('the registry holds templates to the scope they declare', () => {
  /** A template counting the orders of the caller's regions, as `regions` binds them. */
  const counting = (regions: (scope: readonly string[]) => readonly string[], dataScope: readonly 'region'[]) =>
    defineTemplate({
      name: 'query_scoped_count',
      title: 'Orders of my regions',
      description: 'Counts every order of the customers in the regions the caller may see; a test template.',
      input: z.strictObject({}),
      examples: [{}],
      output: z.object({ order_count: z.number() }),
      dataScope,
      columns: { order_count: { type: 'integer', source: 'computed', treatment: 'plain' } },
      query: (db, _args, ctx) =>
        db
          .selectFrom('reporting.orders as o')
          .select((eb) => eb.fn.countAll<string>().as('order_count'))
          .$if(ctx.dataScope?.region !== undefined, (qb) =>
            qb.where(
              'o.customer_id',
              'in',
              db
                .selectFrom('reporting.customers as c')
                .select('c.id')
                .where('c.region', 'in', regions(ctx.dataScope!.region!)),
            ),
          ),
      present: (rows) => ({ order_count: rows[0]?.order_count as number }),
    });

  it('refuses at start-up, as a ConfigError, a template that applies a dimension its pack does not declare', () => {
    const undeclared = { ...counting((scope) => scope, ['region']), dimensions: [] };
    expect(() => createRegistry([undeclared])).toThrow(ConfigError);
    expect(() => createRegistry([undeclared])).toThrow(
      /query_scoped_count: applies the data-scope dimension "region", which its pack does not declare/,
    );
  });

  it('refuses at start-up a template whose query forgets the scope, or keeps one value of it', () => {
    const forgets = counting((scope) => scope, ['region']);
    expect(() =>
      createRegistry([
        {
          ...forgets,
          query: (db) =>
            db.selectFrom('reporting.orders as o').select((eb) => eb.fn.countAll<string>().as('order_count')),
        },
      ]),
    ).toThrow(
      /query_scoped_count: applies a data scope but binds no region "\\u0000scope-check-1", region "\\u0000scope-check-2"/,
    );
    expect(() => createRegistry([counting((scope) => scope.slice(0, 1), ['region'])])).toThrow(
      /binds no region "\\u0000scope-check-2"/,
    );
    expect(() => createRegistry([counting((scope) => scope, ['region'])])).not.toThrow();
  });

  it('refuses at call time a statement that leaves a value of the scope out: a failure of the server, not data', async () => {
    // Two values pass the start-up check; a caller of three regions finds the third left out.
    const registry = createRegistry([counting((scope) => scope.slice(0, 2), ['region'])]);
    const caller: Caller = { id: 'rep-three', dataScope: { region: ['Europe', 'Asia Pacific', 'Africa'] } };
    const harness = await startHarness({ readerUrl: scratch.readerUrl, registry, caller });
    try {
      const statements: Statement[] = [];
      const execute = harness.reader.execute.bind(harness.reader);
      harness.reader.execute = (query, signal) => (statements.push(query), execute(query, signal));
      const result = await harness.call('query_scoped_count', {});
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/code: query_failed/);
      expect(textOf(result)).not.toMatch(/Africa|region/);
      expect(statements).toEqual([]);
      const logged = harness.logs.find((l) => String(l.message ?? '').includes('binds no'));
      expect(logged?.message).toMatch(
        /query_scoped_count: its statement binds no region "Africa" of the caller's data scope/,
      );
      // Within two regions it answers, counting theirs.
      const two = await startHarness({
        readerUrl: scratch.readerUrl,
        registry,
        caller: { id: 'rep-two', dataScope: { region: ['Europe', 'Africa'] } },
      });
      try {
        const counted = structured<{ order_count: number }>(await two.call('query_scoped_count', {}));
        expect(counted.order_count).toBe(within(['Europe', 'Africa']).orders.length);
      } finally {
        await two.close();
      }
    } finally {
      await harness.close();
    }
  });
});

describe('the audit line says who asked, and within what', () => {
  it('records the data scope, subject and client of a scoped caller, and none for an unscoped one', async () => {
    const scoped = harnesses.get(key(EUROPE, 'UTC'))!;
    await scoped.call('query_order_count', JUNE);
    expect(scoped.audits.at(-1)).toMatchObject({
      caller: 'rep-europe',
      tool: 'query_order_count',
      outcome: 'ok',
      data_scope: { region: ['Europe'] },
      subject: 'subject-5f1c',
      client_id: 'crm-connector',
    });
    const two = harnesses.get(key(TWO_REGIONS, 'UTC'))!;
    await two.call('query_order_count', JUNE);
    const line = two.audits.at(-1)!;
    expect(line.data_scope).toEqual({ region: ['Europe', 'Asia Pacific'] });
    expect('subject' in line || 'client_id' in line).toBe(false);
    const everyone = harnesses.get(key({ id: 'everyone' }, 'UTC'))!;
    await everyone.call('query_order_count', JUNE);
    const plain = everyone.audits.at(-1)!;
    expect('data_scope' in plain || 'subject' in plain || 'client_id' in plain).toBe(false);
  });
});

describe('a job keeps its caller’s data scope', () => {
  interface Job {
    state: string;
    result?: TrendReport & { data_scope?: unknown };
  }

  it('runs a job or a task submitted by a scoped caller within that scope, on another replica too', async () => {
    // This replica takes no job (no room): it records the job and lets go of it at once.
    const submitter = await startHarness({
      readerUrl: scratch.readerUrl,
      caller: EUROPE,
      now: () => NOW,
      jobs: { jobsUrl: scratch.jobsUrl, maxRunning: 0 },
    });
    // Another replica, polled by a client of the same caller under the same scope (under another, the
    // job is unknown: test/jobs/job-readers.test.ts) but with no subject or client: the job runs with the
    // scope, subject and client stored in its row.
    const replica = await startHarness({
      readerUrl: scratch.readerUrl,
      caller: { id: EUROPE.id, dataScope: EUROPE.dataScope! },
      now: () => NOW,
      jobs: { jobsUrl: scratch.jobsUrl },
    });
    try {
      const args = { weeks: 12, through_week: '2025-W24' };
      const submitted = structured<{ job_id: string }>(await submitter.call('submit_trend_report', args));
      const { rows } = await scratch.admin.query<{ data_scope: unknown; subject: string; client_id: string }>(
        'select data_scope, subject, client_id from querygate_jobs.jobs where id = $1',
        [submitted.job_id],
      );
      expect(rows[0]).toEqual({
        data_scope: { region: ['Europe'] },
        subject: 'subject-5f1c',
        client_id: 'crm-connector',
      });
      const done = await eventually('the job to complete on the other replica', async () => {
        const job = structured<Job>(await replica.call('get_report_job', { job_id: submitted.job_id }));
        return job.state === 'completed' ? job : undefined;
      });
      const synchronous = await call<TrendReport>(EUROPE, 'UTC', 'sales_trend_report', args);
      expect(done.result!.data_scope).toEqual({ region: ['Europe'] });
      expect(done.result!.rows).toEqual(synchronous.rows);
      const everyone = await call<TrendReport>({ id: 'everyone' }, 'UTC', 'sales_trend_report', args);
      expect(done.result!.rows).not.toEqual(everyone.rows);
      // A task (the tasks extension of 2026-07-28) is such a job too, and keeps the scope the same way.
      const task = await submitter.client.request(
        {
          method: 'tools/call',
          params: {
            name: 'sales_trend_report',
            arguments: args,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
            },
          },
        },
        z.looseObject({ resultType: z.literal('task'), taskId: z.string() }),
      );
      const completedTask = await eventually('the task to complete on the other replica', async () => {
        const job = structured<Job>(await replica.call('get_report_job', { job_id: task.taskId }));
        return job.state === 'completed' ? job : undefined;
      });
      expect(completedTask.result!.data_scope).toEqual({ region: ['Europe'] });
      expect(completedTask.result!.rows).toEqual(synchronous.rows);
      // The run's audit line, on the replica that ran it, is the scoped caller's.
      expect(replica.audits.find((a) => a.tool === 'sales_trend_report')).toMatchObject({
        caller: EUROPE.id,
        outcome: 'ok',
        data_scope: { region: ['Europe'] },
        subject: EUROPE.subject,
        client_id: EUROPE.clientId,
      });
    } finally {
      await submitter.close();
      await replica.close();
    }
  });

  it('hides the job tools from a caller the report cannot serve', async () => {
    const registry = createRegistry([...templates, ...supportDeskPack.templates], { reports, jobs: true });
    const names = (caller: Caller): string[] => registry.toolsFor(caller).map((t) => t.name);
    expect(names(EUROPE)).toEqual(
      expect.arrayContaining(['submit_trend_report', 'get_report_job', 'cancel_report_job']),
    );
    expect(names({ id: 'x', dataScope: { team: ['Billing'] } })).toEqual([]);
  });
});
