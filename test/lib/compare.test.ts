/**
 * compare_to: query_order_count and query_sales compared with the range just before, or a year
 * earlier. The comparison ranges are held to PostgreSQL's date arithmetic; the figures to sums over
 * the raw orders in JavaScript (a scratch database with EUR orders beside the seed's USD ones); and
 * each statement sent to the database is read back to show that none covers more than 90 days.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparisonRange, type Comparison } from '../../src/lib/comparison.js';
import type { Statement } from '../../src/db/connect.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { isNet, loadSalesData, localDay, ordersBetween, type SalesData } from '../support/sales-data.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

describe('the comparison range', () => {
  let admin: pg.Client;
  beforeAll(async () => {
    admin = await connectAdmin();
  });
  afterAll(async () => {
    await admin.end();
  });

  // Whole ISO weeks, a month, one day, a range across 29 February, a leap day itself, and a 90-day range.
  const RANGES: [string, string][] = [
    ['2025-06-09', '2025-06-15'],
    ['2025-06-02', '2025-06-29'],
    ['2025-05-01', '2025-05-31'],
    ['2025-03-01', '2025-03-01'],
    ['2024-02-20', '2024-03-05'],
    ['2024-02-29', '2024-02-29'],
    ['2025-01-01', '2025-03-31'],
  ];

  it.each(RANGES)('%s..%s agrees with PostgreSQL', async (start, end) => {
    const { rows } = await admin.query<Record<string, string>>(
      `select ($1::date - ($2::date - $1::date + 1))::text as pp_start, ($1::date - 1)::text as pp_end,
              case when extract(isodow from $1::date) = 1 and ($2::date - $1::date + 1) % 7 = 0
                   then ($1::date - 364)::text else ($1::date - interval '1 year')::date::text end as py_start,
              case when extract(isodow from $1::date) = 1 and ($2::date - $1::date + 1) % 7 = 0
                   then ($2::date - 364)::text else ($2::date - interval '1 year')::date::text end as py_end`,
      [start, end],
    );
    const truth = rows[0]!;
    expect(comparisonRange(start, end, 'previous_period')).toEqual({
      start_date: truth.pp_start,
      end_date: truth.pp_end,
    });
    expect(comparisonRange(start, end, 'previous_year')).toEqual({
      start_date: truth.py_start,
      end_date: truth.py_end,
    });
  });
});

describe('compare_to through a real client', () => {
  let scratch: ScratchDatabase;
  let data: SalesData;
  const harnesses = new Map<string, Harness>();
  /** Every statement each harness sent, with its parameters, in order. */
  const sent = new Map<string, Statement[]>();
  // UTC reads the rollups; Havana's clocks change at midnight; Kolkata's half hour reads the orders.
  const ZONES = ['UTC', 'America/Havana', 'Asia/Kolkata'];
  // 2025-06-18 12:00 UTC, a Wednesday: last_week is 9..15 June in every zone here.
  const NOW = Date.parse('2025-06-18T12:00:00Z');

  beforeAll(async () => {
    scratch = await createScratchDatabase('compare_check', { orders: 6000, until: '2025-06-30' });
    // EUR orders in both weeks compared, and in a region the USD data also has.
    const eur: [number, string, string, string][] = [
      [990101, 'paid', '2025-06-10T10:00:00Z', '120.00'],
      [990102, 'shipped', '2025-06-14T23:30:00Z', '80.50'],
      [990103, 'refunded', '2025-06-11T09:00:00Z', '999.00'],
      [990104, 'paid', '2025-06-03T12:00:00Z', '40.00'],
      // One a day through April, so that 90 days of daily sales make more than 100 rows.
      ...Array.from({ length: 30 }, (_, d): [number, string, string, string] => [
        990200 + d,
        'paid',
        `2025-04-${String(d + 1).padStart(2, '0')}T12:00:00Z`,
        '10.00',
      ]),
    ];
    for (const [id, status, at, amount] of eur) {
      await scratch.admin.query(
        `insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, 1, $2, $3, 'EUR', $4)`,
        [id, status, at, amount],
      );
      await scratch.admin.query(
        'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, 1, 1, $2)',
        [id, amount],
      );
    }
    data = await loadSalesData(scratch.admin);
    for (const timeZone of ZONES) {
      const harness = await startHarness({ readerUrl: scratch.readerUrl, timeZone, now: () => NOW });
      const statements: Statement[] = [];
      const execute = harness.reader.execute.bind(harness.reader);
      // Observed, not replaced: every statement still runs on the real reader.
      harness.reader.execute = (query, signal) => (statements.push(query), execute(query, signal));
      harnesses.set(timeZone, harness);
      sent.set(timeZone, statements);
    }
  });
  afterAll(async () => {
    for (const harness of harnesses.values()) await harness.close();
    await scratch?.drop();
  });

  const pct = (current: number, prior: number): number | null =>
    prior === 0 ? null : Math.round(((current - prior) / prior) * 1000) / 10;

  interface Counted {
    start_date: string;
    end_date: string;
    order_count: number;
    by_status?: Record<string, number>;
    comparison: {
      compare_to: Comparison;
      start_date: string;
      end_date: string;
      order_count: number;
      change_pct: number | null;
      change_note?: string;
      by_status?: Record<string, number>;
    };
  }

  it.each(ZONES)('query_order_count against the week before and the same week a year earlier, in %s', async (zone) => {
    const harness = harnesses.get(zone)!;
    const cases: [Comparison, string, string][] = [
      ['previous_period', '2025-06-02', '2025-06-08'],
      ['previous_year', '2024-06-10', '2024-06-16'], // 52 weeks earlier: a Monday again
    ];
    for (const [compareTo, priorStart, priorEnd] of cases) {
      const result = structured<Counted>(
        await harness.call('query_order_count', { period: 'last_week', compare_to: compareTo }),
      );
      const current = ordersBetween(data, '2025-06-09', '2025-06-15', zone);
      const prior = ordersBetween(data, priorStart, priorEnd, zone);
      expect(result.order_count).toBe(current.length);
      expect(result.comparison).toMatchObject({
        compare_to: compareTo,
        start_date: priorStart,
        end_date: priorEnd,
        order_count: prior.length,
        change_pct: pct(current.length, prior.length),
      });
      for (const status of ['pending', 'paid', 'shipped', 'cancelled', 'refunded']) {
        expect(result.comparison.by_status?.[status], status).toBe(prior.filter((o) => o.status === status).length);
      }
    }
    // With a status filter, the comparison counts the same status.
    const refunded = structured<Counted>(
      await harness.call('query_order_count', {
        period: 'last_week',
        status: 'refunded',
        compare_to: 'previous_period',
      }),
    );
    const prior = ordersBetween(data, '2025-06-02', '2025-06-08', zone).filter((o) => o.status === 'refunded');
    expect(refunded.comparison.order_count).toBe(prior.length);
    expect(refunded.comparison.by_status).toBeUndefined();
  });

  interface SoldRow {
    region?: string;
    category?: string;
    period?: string;
    currency: string;
    revenue: number;
    prior_revenue?: number | null;
    change_pct?: number | null;
    change_note?: string;
  }
  interface Sold {
    rows: SoldRow[];
    truncated: boolean;
    comparison: {
      start_date: string;
      end_date: string;
      totals: { currency: string; revenue: number; prior_revenue: number; change_pct: number | null }[] | null;
      totals_note?: string;
    };
  }

  /** Net revenue in cents per key and currency, from the raw orders (by region) or items (by category). */
  function revenue(start: string, end: string, zone: string, by: 'region' | 'category' | 'all'): Map<string, number> {
    const sums = new Map<string, number>();
    const add = (key: string, cents: number): void => void sums.set(key, (sums.get(key) ?? 0) + cents);
    const net = ordersBetween(data, start, end, zone).filter(isNet);
    if (by === 'category') {
      const orders = new Map(net.map((o) => [o.id, o]));
      for (const item of data.items) {
        const order = orders.get(item.orderId);
        if (order)
          add(`${data.products.get(item.productId)!.category}|${order.currency}`, item.quantity * item.priceCents);
      }
    } else {
      for (const o of net) {
        add(`${by === 'region' ? data.customers.get(o.customerId)!.region : ''}|${o.currency}`, o.totalCents);
      }
    }
    return sums;
  }

  it.each(ZONES)('query_sales by region and category against the comparison range, in %s', async (zone) => {
    const harness = harnesses.get(zone)!;
    for (const by of ['region', 'category'] as const) {
      const result = structured<Sold>(
        await harness.call('query_sales', { period: 'last_week', group_by: by, compare_to: 'previous_period' }),
      );
      const now = revenue('2025-06-09', '2025-06-15', zone, by);
      const before = revenue('2025-06-02', '2025-06-08', zone, by);
      expect(result.rows.length).toBe(now.size);
      for (const row of result.rows) {
        const key = `${row[by]}|${row.currency}`;
        expect(row.revenue, key).toBe(now.get(key)! / 100);
        const prior = before.get(key);
        expect(row.prior_revenue, key).toBe(prior === undefined ? null : prior / 100);
        expect(row.change_pct, key).toBe(pct(now.get(key)!, prior ?? 0));
        if (prior === undefined) expect(row.change_note, key).toMatch(/zero/);
      }
      // Totals per currency: EUR and USD never added.
      const all = revenue('2025-06-09', '2025-06-15', zone, 'all');
      const allBefore = revenue('2025-06-02', '2025-06-08', zone, 'all');
      expect(result.comparison.totals).toEqual(
        ['EUR', 'USD'].map((currency) => ({
          currency,
          revenue: all.get(`|${currency}`)! / 100,
          prior_revenue: allBefore.get(`|${currency}`)! / 100,
          change_pct: pct(all.get(`|${currency}`)!, allBefore.get(`|${currency}`)!),
        })),
      );
    }
  });

  it('a prior range with no orders gives no percentage, and says why', async () => {
    const harness = harnesses.get('UTC')!;
    // The seed's first orders are 730 days before 2025-06-30; a year before its first weeks there are none.
    const first = [...data.orders].sort((a, b) => a.orderedAt.getTime() - b.orderedAt.getTime())[0]!;
    const day = localDay(first.orderedAt, 'UTC');
    const end = new Date(Date.parse(`${day}T00:00:00Z`) + 13 * 86_400_000).toISOString().slice(0, 10);
    const result = structured<Counted>(
      await harness.call('query_order_count', { start_date: day, end_date: end, compare_to: 'previous_year' }),
    );
    expect(result.order_count).toBeGreaterThan(0);
    expect(result.comparison.order_count).toBe(0);
    expect(result.comparison.change_pct).toBeNull();
    expect(result.comparison.change_note).toMatch(/comparison range had zero/);
  });

  it('totals are withheld, with the reason, when a side has more rows than a result returns', async () => {
    const harness = harnesses.get('UTC')!;
    // 90 days of daily sales, in two currencies on 30 of them: more than the 100 rows a result holds.
    const args = { start_date: '2025-04-01', end_date: '2025-06-29', group_by: 'day', compare_to: 'previous_period' };
    const result = structured<Sold>(await harness.call('query_sales', args));
    const days = new Set(
      ordersBetween(data, '2025-04-01', '2025-06-29', 'UTC')
        .filter(isNet)
        .map((o) => `${localDay(o.orderedAt, 'UTC')}|${o.currency}`),
    );
    expect(days.size).toBeGreaterThan(100);
    expect(result.truncated).toBe(true);
    expect(result.comparison.totals).toBeNull();
    expect(result.comparison.totals_note).toMatch(/group by week or month/);
  });

  it('each statement covers at most 90 days, however long the two ranges together', async () => {
    const harness = harnesses.get('UTC')!;
    const statements = sent.get('UTC')!;
    statements.length = 0;
    const result = await harness.call('query_sales', {
      start_date: '2025-03-01',
      end_date: '2025-05-29',
      group_by: 'month',
      compare_to: 'previous_period',
    });
    expect(result.isError, textOf(result)).toBeFalsy();
    // The pack's high-water mark (data_through) is read first; it covers no range.
    const [mark, ...ranged] = statements;
    expect(mark?.sql).toMatch(/as "data_through"/);
    expect(mark?.parameters).toEqual([1]);
    expect(ranged).toHaveLength(2);
    for (const statement of ranged) {
      const days = statement.parameters
        .filter((p): p is string => typeof p === 'string' && /^\d{4}-\d\d-\d\d/.test(p))
        .map((p) => Date.parse(p.slice(0, 10)));
      const span = (Math.max(...days) - Math.min(...days)) / 86_400_000;
      expect(span).toBeGreaterThan(0);
      expect(span).toBeLessThanOrEqual(90);
    }
  });

  it('refuses an unknown comparison, naming the field', async () => {
    const result = await harnesses.get('UTC')!.call('query_sales', {
      period: 'last_week',
      group_by: 'day',
      compare_to: 'last_decade',
    });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(
      /compare_to: "last_decade" is not allowed; use one of previous_period, previous_year/,
    );
  });
});
