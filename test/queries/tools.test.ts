/** Each tool through a real MCP client, against figures computed in JavaScript from the raw rows. */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates } from '../../queries/index.js';
import { createRegistry } from '../../src/registry/index.js';
import { connectAdmin, startHarness, structured, type Harness } from '../support/harness.js';
import { TEST_SEED } from '../support/database.js';
import {
  isNet,
  isoWeekStart,
  loadSalesData,
  localDay,
  money,
  ordersBetween,
  type SalesData,
  type SalesRow,
} from '../support/sales-data.js';

let harness: Harness;
let admin: pg.Client;
let data: SalesData;
/** The seed's one currency: with a single currency, every row is as it would be without one, plus it. */
let currency: string;

// The last 90 days of the seeded data, and a quarter-sized window well inside it.
const END = TEST_SEED.until;
const START_90 = '2025-04-02';
const Q_START = '2025-01-01';
const Q_END = '2025-03-31';

beforeAll(async () => {
  harness = await startHarness();
  admin = await connectAdmin();
  data = await loadSalesData(admin);
  const currencies = new Set(data.orders.map((o) => o.currency));
  expect(currencies.size).toBe(1);
  currency = [...currencies][0]!;
});
afterAll(async () => {
  await harness.close();
  await admin.end();
});

/** Groups net orders by a key and gives the rows query_sales should return, unordered. */
function expectedSales(
  start: string,
  end: string,
  key: (o: (typeof data.orders)[number]) => string,
): Map<string, Omit<SalesRow, 'period'>> {
  const groups = new Map<string, { count: number; cents: number }>();
  for (const order of ordersBetween(data, start, end).filter(isNet)) {
    const g = groups.get(key(order)) ?? { count: 0, cents: 0 };
    g.count++;
    g.cents += order.totalCents;
    groups.set(key(order), g);
  }
  return new Map(
    [...groups].map(([k, g]) => [
      k,
      { currency, order_count: g.count, revenue: money(g.cents), avg_order_value: money(g.cents / g.count) },
    ]),
  );
}

describe('the seed', () => {
  it('keeps every order total equal to the sum of its items', () => {
    const sums = new Map<number, number>();
    for (const item of data.items)
      sums.set(item.orderId, (sums.get(item.orderId) ?? 0) + item.quantity * item.priceCents);
    expect(data.orders).toHaveLength(TEST_SEED.orders);
    const mismatched = data.orders.filter((o) => sums.get(o.id) !== o.totalCents);
    expect(mismatched).toEqual([]);
  });
});

describe('query_order_count', () => {
  it('counts every status over a week and breaks the count down', async () => {
    const out = structured<{ order_count: number; by_status: Record<string, number>; status: null }>(
      await harness.call('query_order_count', { start_date: '2025-06-01', end_date: '2025-06-07' }),
    );
    const expected = ordersBetween(data, '2025-06-01', '2025-06-07');
    expect(expected.length).toBeGreaterThan(10);
    expect(out.order_count).toBe(expected.length);
    expect(out.status).toBeNull();
    for (const status of ['pending', 'paid', 'shipped', 'cancelled', 'refunded']) {
      expect(out.by_status[status], status).toBe(expected.filter((o) => o.status === status).length);
    }
  });

  it('filters by status and then gives no breakdown', async () => {
    const out = structured<{ order_count: number; by_status?: unknown; status: string }>(
      await harness.call('query_order_count', { start_date: Q_START, end_date: Q_END, status: 'refunded' }),
    );
    const expected = ordersBetween(data, Q_START, Q_END).filter((o) => o.status === 'refunded').length;
    expect(expected).toBeGreaterThan(0);
    expect(out).toMatchObject({ order_count: expected, status: 'refunded' });
    expect(out.by_status).toBeUndefined();
  });

  it('reads the days in the configured reporting time zone', async () => {
    const zone = 'Pacific/Auckland';
    const tz = await startHarness({ timeZone: zone });
    try {
      const out = structured<{ order_count: number; time_zone: string }>(
        await tz.call('query_order_count', { start_date: '2025-05-01', end_date: '2025-05-03' }),
      );
      const inZone = ordersBetween(data, '2025-05-01', '2025-05-03', zone).length;
      const inUtc = ordersBetween(data, '2025-05-01', '2025-05-03').length;
      expect(inZone).not.toBe(inUtc); // otherwise the test could not tell the zones apart
      expect(out).toEqual(expect.objectContaining({ order_count: inZone, time_zone: zone }));
    } finally {
      await tz.close();
    }
  });
});

describe('query_sales', () => {
  it('groups by day over 90 days, net of cancelled and refunded orders', async () => {
    const out = structured<{ rows: SalesRow[]; row_count: number; truncated: boolean }>(
      await harness.call('query_sales', { start_date: START_90, end_date: END, group_by: 'day' }),
    );
    const expected = expectedSales(START_90, END, (o) => localDay(o.orderedAt, 'UTC'));
    expect(out.rows.map((r) => r.period)).toEqual([...expected.keys()].sort());
    for (const row of out.rows) expect(row).toEqual({ period: row.period, ...expected.get(row.period!) });
    expect(out.row_count).toBe(expected.size);
    expect(out.truncated).toBeUndefined(); // not cut: no flag
  });

  it('labels ISO weeks by their Monday', async () => {
    const out = structured<{ rows: SalesRow[] }>(
      await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'week' }),
    );
    const expected = expectedSales(Q_START, Q_END, (o) => isoWeekStart(localDay(o.orderedAt, 'UTC')));
    expect(out.rows[0]!.period).toBe('2024-12-30'); // 2025-01-01 is a Wednesday
    // The weeks the range covers in part say which of their days it counts; 2025-03-31 is a Monday.
    const part: Record<string, object> = {
      '2024-12-30': { partial: true, first_day: '2025-01-01', last_day: '2025-01-05' },
      '2025-03-31': { partial: true, first_day: '2025-03-31', last_day: '2025-03-31' },
    };
    expect(out.rows).toEqual(
      [...expected.keys()].sort().map((period) => ({ period, ...part[period], ...expected.get(period) })),
    );
  });

  it('groups by month', async () => {
    const out = structured<{ rows: SalesRow[] }>(
      await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'month' }),
    );
    const expected = expectedSales(Q_START, Q_END, (o) => `${localDay(o.orderedAt, 'UTC').slice(0, 7)}-01`);
    expect(out.rows).toEqual([...expected.keys()].sort().map((period) => ({ period, ...expected.get(period) })));
  });

  it('groups by customer region, highest revenue first', async () => {
    const out = structured<{ rows: SalesRow[] }>(
      await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'region' }),
    );
    const expected = expectedSales(Q_START, Q_END, (o) => data.customers.get(o.customerId)!.region);
    expect(out.rows).toHaveLength(expected.size);
    for (const row of out.rows) expect(row).toEqual({ region: row.region, ...expected.get(row.region!) });
    const revenues = out.rows.map((r) => r.revenue);
    expect(revenues).toEqual([...revenues].sort((a, b) => b - a));
  });

  it('groups by category from the order items, counting distinct orders', async () => {
    const out = structured<{ rows: SalesRow[] }>(
      await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'category' }),
    );
    const net = new Set(
      ordersBetween(data, Q_START, Q_END)
        .filter(isNet)
        .map((o) => o.id),
    );
    const groups = new Map<string, { orders: Set<number>; cents: number }>();
    for (const item of data.items.filter((i) => net.has(i.orderId))) {
      const category = data.products.get(item.productId)!.category;
      const g = groups.get(category) ?? { orders: new Set<number>(), cents: 0 };
      g.orders.add(item.orderId);
      g.cents += item.quantity * item.priceCents;
      groups.set(category, g);
    }
    expect(out.rows).toHaveLength(groups.size);
    for (const row of out.rows) {
      const g = groups.get(row.category!)!;
      expect(row).toEqual({
        category: row.category,
        currency,
        order_count: g.orders.size,
        revenue: money(g.cents),
        avg_order_value: money(g.cents / g.orders.size),
      });
    }
  });

  it('agrees on total revenue whichever way it is grouped', async () => {
    const totals = [];
    for (const group_by of ['day', 'week', 'month', 'region', 'category']) {
      const out = structured<{ rows: SalesRow[] }>(
        await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by }),
      );
      totals.push(Math.round(out.rows.reduce((sum, r) => sum + r.revenue * 100, 0)));
    }
    expect(new Set(totals).size).toBe(1);
  });
});

describe('query_top_products', () => {
  function expectedProducts(start: string, end: string) {
    const net = new Set(
      ordersBetween(data, start, end)
        .filter(isNet)
        .map((o) => o.id),
    );
    const byProduct = new Map<number, { units: number; cents: number }>();
    for (const item of data.items.filter((i) => net.has(i.orderId))) {
      const p = byProduct.get(item.productId) ?? { units: 0, cents: 0 };
      p.units += item.quantity;
      p.cents += item.quantity * item.priceCents;
      byProduct.set(item.productId, p);
    }
    return [...byProduct].map(([id, p]) => {
      const product = data.products.get(id)!;
      return {
        sku: product.sku,
        name: product.name,
        category: product.category,
        currency,
        units: p.units,
        revenue: money(p.cents),
      };
    });
  }

  it('ranks by revenue by default, ten rows', async () => {
    const out = structured<{ rows: unknown[]; row_count: number; truncated: boolean; metric: string }>(
      await harness.call('query_top_products', { start_date: Q_START, end_date: Q_END }),
    );
    const expected = expectedProducts(Q_START, Q_END).sort(
      (a, b) => b.revenue - a.revenue || b.units - a.units || a.sku.localeCompare(b.sku),
    );
    expect(out).toMatchObject({ metric: 'revenue', row_count: 10, truncated: true });
    expect(out.rows).toEqual(expected.slice(0, 10));
  });

  it('ranks by units when asked', async () => {
    const out = structured<{ rows: unknown[] }>(
      await harness.call('query_top_products', { start_date: Q_START, end_date: Q_END, metric: 'units', limit: 7 }),
    );
    const expected = expectedProducts(Q_START, Q_END).sort(
      (a, b) => b.units - a.units || b.revenue - a.revenue || a.sku.localeCompare(b.sku),
    );
    expect(out.rows).toEqual(expected.slice(0, 7));
  });

  it('caps at 100 rows and says so honestly', async () => {
    const expected = expectedProducts(START_90, END);
    expect(expected.length).toBeGreaterThan(100); // the data set must be large enough to test the cap
    const out = structured<{ rows: unknown[]; row_count: number; truncated: boolean }>(
      await harness.call('query_top_products', { start_date: START_90, end_date: END, limit: 100 }),
    );
    expect(out.rows).toHaveLength(100);
    expect(out).toMatchObject({ row_count: 100, truncated: true });
  });

  it('is not truncated when every row fits', async () => {
    const expected = expectedProducts('2025-06-30', '2025-06-30');
    const out = structured<{ rows: unknown[]; truncated: boolean }>(
      await harness.call('query_top_products', { start_date: '2025-06-30', end_date: '2025-06-30', limit: 100 }),
    );
    expect(expected.length).toBeLessThan(100);
    expect(out.rows).toHaveLength(expected.length);
    expect(out.truncated).toBeUndefined(); // not cut: no flag
  });
});

describe('query_recent_orders', () => {
  interface OrderRow {
    order_ref: string;
    ordered_at: string;
    status: string;
    total_amount: number;
    customer_ref: string;
    customer_initials: string;
    customer_email: string;
    customer_phone_last4: string;
    customer_region: string;
  }

  it('lists the newest orders first, with desensitized customers when asked for', async () => {
    const out = structured<{ rows: OrderRow[]; row_count: number; truncated: boolean }>(
      await harness.call('query_recent_orders', {
        start_date: Q_START,
        end_date: Q_END,
        limit: 15,
        customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'],
      }),
    );
    const expected = ordersBetween(data, Q_START, Q_END)
      .sort((a, b) => b.orderedAt.getTime() - a.orderedAt.getTime() || b.id - a.id)
      .slice(0, 15);
    expect(out).toMatchObject({ row_count: 15, truncated: true });
    out.rows.forEach((row, i) => {
      const order = expected[i]!;
      const customer = data.customers.get(order.customerId)!;
      const [first, last] = customer.name.split(' ');
      expect(row).toMatchObject({
        ordered_at: order.orderedAt.toISOString(),
        status: order.status,
        total_amount: money(order.totalCents),
        customer_region: customer.region,
        customer_initials: `${first![0]}.${last![0]}.`,
        customer_email: `${customer.email[0]}***@${customer.email.split('@')[1]}`,
        customer_phone_last4: customer.phone.replace(/\D/g, '').slice(-4),
      });
      expect(row.order_ref).not.toContain(String(order.id));
      expect(row.customer_ref).toMatch(/^cus_[A-Za-z0-9_-]{16}$/);
    });
  });

  it('gives stable, distinct references', async () => {
    const args = { start_date: Q_START, end_date: Q_END, status: 'pending', limit: 50 };
    const a = structured<{ rows: OrderRow[] }>(await harness.call('query_recent_orders', args));
    const b = structured<{ rows: OrderRow[] }>(await harness.call('query_recent_orders', args));
    expect(a.rows.map((r) => r.order_ref)).toEqual(b.rows.map((r) => r.order_ref));
    expect(new Set(a.rows.map((r) => r.order_ref)).size).toBe(a.rows.length);
    expect(a.rows.every((r) => r.status === 'pending')).toBe(true);
    expect(a.rows.length).toBe(
      Math.min(50, ordersBetween(data, Q_START, Q_END).filter((o) => o.status === 'pending').length),
    );
  });

  it('defaults to 20 rows and caps at 100', async () => {
    const byDefault = structured<{ rows: unknown[] }>(
      await harness.call('query_recent_orders', { start_date: START_90, end_date: END }),
    );
    expect(byDefault.rows).toHaveLength(20);
    const capped = structured<{ rows: unknown[]; truncated: boolean }>(
      await harness.call('query_recent_orders', { start_date: START_90, end_date: END, limit: 100 }),
    );
    expect(ordersBetween(data, START_90, END).length).toBeGreaterThan(100);
    expect(capped.rows).toHaveLength(100);
    expect(capped.truncated).toBe(true);
  });
});

describe('every tool', () => {
  it.each([
    ['query_order_count', { start_date: Q_START, end_date: Q_END }],
    ['query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'day' }],
    ['query_top_products', { start_date: Q_START, end_date: Q_END }],
    ['query_recent_orders', { start_date: Q_START, end_date: Q_END }],
  ])('%s says how fresh its figures are: data_as_of, taken while the call ran', async (tool, args) => {
    const before = Date.now();
    const result = structured<{ data_as_of: string }>(await harness.call(tool, args));
    const after = Date.now();
    expect(result.data_as_of).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const asOf = Date.parse(result.data_as_of);
    expect(asOf).toBeGreaterThanOrEqual(before);
    expect(asOf).toBeLessThanOrEqual(after);
    // Every answer carries it: said once in the instructions, required by the whole answer schema.
    expect(harness.client.getInstructions()).toContain('data_as_of');
    expect(createRegistry(templates).answerSchemas.get(tool)?.required).toContain('data_as_of');
  });

  it('returns the same JSON as text as it returns structured', async () => {
    const result = await harness.call('query_sales', { start_date: Q_START, end_date: Q_END, group_by: 'region' });
    const text = result.content.find((c) => c.type === 'text');
    expect(text?.type === 'text' && JSON.parse(text.text)).toEqual(result.structuredContent);
  });
});

describe('in a zone with a half-hour offset (read from the orders, not the hourly rollup)', () => {
  it('counts and groups by local day exactly', async () => {
    const zone = 'Asia/Kolkata';
    const kolkata = await startHarness({ timeZone: zone });
    try {
      const count = structured<{ order_count: number }>(
        await kolkata.call('query_order_count', { start_date: '2025-05-01', end_date: '2025-05-31' }),
      );
      expect(count.order_count).toBe(ordersBetween(data, '2025-05-01', '2025-05-31', zone).length);
      const days = structured<{ rows: SalesRow[] }>(
        await kolkata.call('query_sales', { start_date: '2025-05-01', end_date: '2025-05-31', group_by: 'day' }),
      );
      const groups = new Map<string, { count: number; cents: number }>();
      for (const order of ordersBetween(data, '2025-05-01', '2025-05-31', zone).filter(isNet)) {
        const day = localDay(order.orderedAt, zone);
        const g = groups.get(day) ?? { count: 0, cents: 0 };
        g.count++;
        g.cents += order.totalCents;
        groups.set(day, g);
      }
      expect(days.rows).toEqual(
        [...groups.keys()].sort().map((period) => {
          const g = groups.get(period)!;
          return {
            period,
            currency,
            order_count: g.count,
            revenue: money(g.cents),
            avg_order_value: money(g.cents / g.count),
          };
        }),
      );
    } finally {
      await kolkata.close();
    }
  });
});
