/**
 * The order and the customer as units of analysis, each question in one call of query_metrics or
 * query_recent_orders, held to figures computed here in plain JavaScript from the raw sales tables
 * (read through the admin connection): orders above an amount, the largest orders, percentiles and
 * amount bands of an order's value, repeat, new and top customers, the value of refunded orders,
 * per-row comparisons, and the 100-row limit. In UTC and in America/Havana (clocks skip midnight on
 * 2025-03-09), with orders in two currencies, for a caller who sees everything and one scoped to two
 * regions, on a fixed clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CALLERS, SCOPE, startHarnessGrid, structured, textOf, type Harness } from '../support/harness.js';
import { isNet, loadSalesData, localDay, type RawOrder, type SalesData } from '../support/sales-data.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const ZONES = ['UTC', 'America/Havana'] as const;
const MARCH = { start_date: '2025-03-01', end_date: '2025-03-31' };
const FEBRUARY = { start_date: '2025-02-01', end_date: '2025-02-28' };
const NOW = Date.parse('2025-06-17T15:45:00Z');

type Figures = Record<string, unknown>;
interface Answer {
  rows?: Figures[];
  totals: Figures[];
  truncated: boolean;
  comparison?: { totals: Figures[] };
}

let scratch: ScratchDatabase;
let data: SalesData;
let harnesses = new Map<string, Harness>();

beforeAll(async () => {
  scratch = await createScratchDatabase('order_units', { orders: 6000, until: '2025-06-30' });
  // EUR orders in March and February: some customers twice, amounts on band edges, every status,
  // and one a minute after Havana's skipped midnight.
  const { rows } = await scratch.admin.query<{ id: string; region: string }>(
    `select id, region from sales.customers order by id limit 12`,
  );
  const statuses = ['paid', 'shipped', 'refunded', 'cancelled', 'pending', 'paid'];
  const amounts = ['25.00', '24.99', '50.00', '100.00', '250.00', '500.00', '499.99', '12.34', '1200.00', '75.50'];
  let id = 992000;
  for (let i = 0; i < 40; i++) {
    const customer = Number(rows[i % 7]!.id);
    const month = i % 4 === 0 ? '02' : '03';
    const at =
      i === 5
        ? '2025-03-09T05:01:00Z'
        : `2025-${month}-${String(1 + ((i * 7) % 27)).padStart(2, '0')}T1${i % 10}:15:00Z`;
    const amount = amounts[i % amounts.length]!;
    await scratch.admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
      [++id, customer, statuses[i % statuses.length], at, 'EUR', amount],
    );
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, $2, 1, $3)',
      [id, 1 + (i % 5), amount],
    );
  }
  // Three customers new in February: two order again in March, one in two currencies.
  const firsts: Array<[customer: number, region: string, at: string, currency: string, amount: string]> = [
    [990001, 'Europe', '2025-02-10T09:00:00Z', 'USD', '80.00'],
    [990001, 'Europe', '2025-03-03T09:00:00Z', 'EUR', '45.00'],
    [990002, 'Africa', '2025-02-28T23:30:00Z', 'USD', '20.00'], // Havana: 18:30 on the 28th
    [990002, 'Africa', '2025-03-20T12:00:00Z', 'USD', '60.00'],
    [990003, 'Asia Pacific', '2025-02-01T04:30:00Z', 'EUR', '300.00'], // Havana: 23:30 on 31 January
  ];
  for (const [customer, region, at, currency, amount] of firsts) {
    await scratch.admin.query(
      `insert into sales.customers (id, name, email, phone, region) values ($1, 'New Customer', $2, '+1 555 0100', $3)
       on conflict (id) do nothing`,
      [customer, `new${customer}@example.com`, region],
    );
    await scratch.admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
      [++id, customer, 'paid', at, currency, amount],
    );
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, 1, 1, $2)',
      [id, amount],
    );
  }
  data = await loadSalesData(scratch.admin);
  harnesses = await startHarnessGrid(scratch.readerUrl, ZONES, CALLERS, () => NOW);
}, 240_000);
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

const regionOf = (o: RawOrder): string => data.customers.get(o.customerId)!.region;

function ordersIn(range: { start_date: string; end_date: string }, timeZone: string, scoped: boolean): RawOrder[] {
  return data.orders.filter((o) => {
    const day = localDay(o.orderedAt, timeZone);
    return day >= range.start_date && day <= range.end_date && (!scoped || SCOPE.includes(regionOf(o)));
  });
}

function groupBy<T>(list: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of list) out.set(key(t), [...(out.get(key(t)) ?? []), t]);
  return out;
}
const currencies = (orders: RawOrder[]): string[] => [...new Set(orders.map((o) => o.currency))].sort();
const cents = (orders: RawOrder[]): number => orders.reduce((sum, o) => sum + o.totalCents, 0);

/** PostgreSQL's percentile_cont, in cents: interpolated between the two nearest values. */
function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = fraction * (sorted.length - 1);
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

const BANDS = [2500, 5000, 10000, 25000, 50000];
const LABELS = ['under 25', '25-50', '50-100', '100-250', '250-500', '500 and over'];
const bandOf = (o: RawOrder): string => LABELS[BANDS.filter((edge) => o.totalCents >= edge).length]!;

async function ask(harness: Harness, tool: string, args: Record<string, unknown>): Promise<Answer> {
  const result = await harness.call(tool, args);
  if (result.isError) throw new Error(`${tool} ${JSON.stringify(args)} failed: ${textOf(result)}`);
  return structured<Answer>(result);
}

for (const timeZone of ZONES) {
  for (const { name, caller } of CALLERS) {
    const scoped = 'dataScope' in caller;
    describe(`orders and customers as units in ${timeZone}, ${name}`, () => {
      const h = (): Harness => harnesses.get(`${timeZone} ${name}`)!;
      const metrics = (args: Record<string, unknown>): Promise<Answer> => ask(h(), 'query_metrics', args);

      it('counts the orders at or above an amount, and below another, per currency', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped).filter((o) => o.totalCents >= 10000 && o.totalCents < 50000);
        const out = await metrics({
          metrics: ['orders', 'revenue'],
          min_order_value: 100,
          max_order_value: 500,
          ...MARCH,
        });
        expect(out.totals).toEqual(
          currencies(orders).map((currency) => {
            const of = orders.filter((o) => o.currency === currency);
            return { currency, orders: of.length, revenue: cents(of.filter(isNet)) / 100 };
          }),
        );
      });

      it('lists the largest orders of a currency first, above an amount', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped)
          .filter((o) => o.currency === 'EUR' && o.totalCents >= 5000)
          .sort((a, b) => b.totalCents - a.totalCents || b.orderedAt.getTime() - a.orderedAt.getTime() || b.id - a.id)
          .slice(0, 5);
        const out = (await ask(h(), 'query_recent_orders', {
          order_by: 'largest',
          currency: 'EUR',
          min_order_value: 50,
          limit: 5,
          ...MARCH,
        })) as unknown as { rows: Figures[] };
        expect(out.rows.map((r) => [r.total_amount, r.ordered_at])).toEqual(
          orders.map((o) => [o.totalCents / 100, o.orderedAt.toISOString()]),
        );
        expect(orders.length).toBeGreaterThan(1);
      });

      it('gives the median and percentiles of an order value per currency, of net orders', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped).filter(isNet);
        const out = await metrics({
          metrics: ['median_order_value', 'p90_order_value', 'avg_order_value'],
          ...MARCH,
        });
        const expected = currencies(orders).map((currency) => {
          const values = orders.filter((o) => o.currency === currency).map((o) => o.totalCents);
          return {
            currency,
            median: percentile(values, 0.5) / 100,
            p90: percentile(values, 0.9) / 100,
          };
        });
        expect(out.totals.map((t) => t.currency)).toEqual(expected.map((e) => e.currency));
        for (const [i, e] of expected.entries()) {
          const t = out.totals[i]!;
          // Rounded to cents by the database from a float: within half a cent of the exact value.
          expect(Math.abs(Number(t.median_order_value) - e.median)).toBeLessThanOrEqual(0.005 + 1e-9);
          expect(Math.abs(Number(t.p90_order_value) - e.p90)).toBeLessThanOrEqual(0.005 + 1e-9);
        }
      });

      it('counts orders in amount bands, per currency, by region', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped).filter((o) => o.currency === 'EUR');
        const out = await metrics({ metrics: ['orders'], group_by: ['order_value_band'], ...MARCH });
        const eur = (out.rows ?? []).filter((r) => r.currency === 'EUR');
        const by = groupBy(orders, bandOf);
        expect(new Map(eur.map((r) => [r.order_value_band, r.orders]))).toEqual(
          new Map([...by].map(([band, list]) => [band, list.length])),
        );
        expect(by.has('500 and over') && by.has('under 25')).toBe(true);
      });

      it('refuses a percentile by category, naming the fields, an unknown metric by its name, and a filter on a derived dimension', async () => {
        const refused = await h().call('query_metrics', {
          metrics: ['median_order_value'],
          group_by: ['category'],
          ...MARCH,
        });
        expect(refused.isError).toBe(true);
        expect(textOf(refused)).toMatch(/median_order_value.*category/);
        const unknown = await h().call('query_metrics', { metrics: ['median_revenue'], ...MARCH });
        expect(unknown.isError).toBe(true);
        expect(textOf(unknown)).toContain('"median_revenue" is not a metric');
        const filtered = await h().call('query_metrics', {
          metrics: ['customers'],
          filters: { customer_type: ['repeat'] },
          ...MARCH,
        });
        expect(filtered.isError).toBe(true);
        expect(textOf(filtered)).toMatch(/filters.*customer_type.*not a known filter/s);
      });

      it('splits customers into one-time and repeat, and by how many orders they placed in the range', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped);
        const perCustomer = groupBy(orders, (o) => String(o.customerId));
        const repeat = [...perCustomer.values()].filter((l) => l.length > 1);
        const type = await metrics({ metrics: ['customers', 'orders'], group_by: ['customer_type'], ...MARCH });
        expect(new Map((type.rows ?? []).map((r) => [r.customer_type, [r.customers, r.orders]]))).toEqual(
          new Map([
            ['repeat', [repeat.length, repeat.flat().length]],
            ['one_time', [perCustomer.size - repeat.length, orders.length - repeat.flat().length]],
          ]),
        );
        expect(type.totals).toEqual([{ customers: perCustomer.size, orders: orders.length }]);
        const counts = await metrics({ metrics: ['customers'], group_by: ['customer_orders'], ...MARCH });
        const byCount = groupBy([...perCustomer.values()], (l) => (l.length >= 10 ? '10+' : String(l.length)));
        expect(new Map((counts.rows ?? []).map((r) => [r.customer_orders, r.customers]))).toEqual(
          new Map([...byCount].map(([n, l]) => [n, l.length])),
        );
        expect(repeat.length).toBeGreaterThan(0);
      });

      it("splits customers by their count of the call's own orders: money per currency, a filter narrowing the count", async () => {
        for (const statuses of [undefined, ['paid', 'shipped']]) {
          const orders = ordersIn(MARCH, timeZone, scoped).filter((o) => !statuses || statuses.includes(o.status));
          const count = new Map<number, number>();
          for (const o of orders) count.set(o.customerId, (count.get(o.customerId) ?? 0) + 1);
          const typeOf = (o: RawOrder): string => (count.get(o.customerId)! > 1 ? 'repeat' : 'one_time');
          const expected = [...groupBy(orders, (o) => `${typeOf(o)}|${o.currency}`)].map(([k, l]) => {
            const [customer_type, currency] = k.split('|');
            const customers = new Set(l.map((o) => o.customerId)).size;
            return { customer_type, currency, customers, revenue: cents(l.filter(isNet)) / 100 };
          });
          const out = await metrics({
            metrics: ['customers', 'revenue'],
            group_by: ['customer_type'],
            ...(statuses ? { filters: { status: statuses } } : {}),
            ...MARCH,
          });
          const sort = (a: Figures, b: Figures): number =>
            `${a.currency}|${a.customer_type}`.localeCompare(`${b.currency}|${b.customer_type}`);
          expect([...(out.rows ?? [])].sort(sort)).toEqual(expected.sort(sort));
          expect(expected.some((r) => r.customer_type === 'repeat')).toBe(true);
        }
      });

      it('counts the customers whose first order ever fell in the range, over all history', async () => {
        const seen = scoped ? data.orders.filter((o) => SCOPE.includes(regionOf(o))) : data.orders;
        const first = new Map<number, number>();
        for (const o of seen) {
          const t = o.orderedAt.getTime();
          if (!first.has(o.customerId) || t < first.get(o.customerId)!) first.set(o.customerId, t);
        }
        const orders = ordersIn(FEBRUARY, timeZone, scoped);
        const inRange = new Set(orders.map((o) => o.customerId));
        const newOnes = [...inRange].filter((c) =>
          ordersIn(FEBRUARY, timeZone, scoped).some(
            (o) => o.customerId === c && o.orderedAt.getTime() === first.get(c),
          ),
        );
        const out = await metrics({ metrics: ['customers', 'orders'], group_by: ['customer_since'], ...FEBRUARY });
        const rows = new Map((out.rows ?? []).map((r) => [r.customer_since, r.customers]));
        expect(rows.get('new')).toBe(newOnes.length);
        expect(rows.get('returning')).toBe(inRange.size - newOnes.length);
        expect(newOnes.length).toBeGreaterThan(0);
      });

      it('ranks the top customers by revenue per currency, as opaque tokens that match the row lists', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped).filter((o) => o.currency === 'USD' && isNet(o));
        const revenue = [...groupBy(orders, (o) => String(o.customerId))]
          .map(([c, l]) => [Number(c), cents(l)] as const)
          .sort((a, b) => b[1] - a[1]);
        const out = await metrics({
          metrics: ['revenue', 'net_orders'],
          group_by: ['customer'],
          order_by: 'revenue',
          limit: 5,
          ...MARCH,
        });
        const usd = (out.rows ?? []).filter((r) => r.currency === 'USD');
        expect(usd.map((r) => r.revenue)).toEqual(revenue.slice(0, 5).map(([, c]) => c / 100));
        // Each currency its own first five, and totals of every customer's net orders, not of the five.
        const net = ordersIn(MARCH, timeZone, scoped).filter(isNet);
        for (const currency of currencies(net)) {
          const mine = net.filter((o) => o.currency === currency);
          const ranked = [...groupBy(mine, (o) => String(o.customerId)).values()].map(cents).sort((a, b) => b - a);
          const listed = (out.rows ?? []).filter((r) => r.currency === currency);
          expect(listed.map((r) => r.revenue)).toEqual(ranked.slice(0, 5).map((c) => c / 100));
          expect(out.totals.find((t) => t.currency === currency)).toEqual({
            currency,
            revenue: cents(mine) / 100,
            net_orders: mine.length,
          });
        }
        expect(currencies(net)).toEqual(['EUR', 'USD']);
        expect(out.truncated).toBe(true);
        for (const r of usd) expect(r.customer).toMatch(/^cus_[\w-]{16}$/);
        // The top customer's token is the customer_ref the row list gives for that customer's orders.
        const top = revenue[0]![0];
        const topOrder = orders.find((o) => o.customerId === top)!;
        const listed = (await ask(h(), 'query_recent_orders', {
          start_date: localDay(topOrder.orderedAt, timeZone),
          end_date: localDay(topOrder.orderedAt, timeZone),
          customer_fields: ['ref'],
          limit: 20,
        })) as unknown as { rows: Figures[] };
        const refs = listed.rows
          .filter((r) => r.ordered_at === topOrder.orderedAt.toISOString())
          .map((r) => r.customer_ref);
        expect(refs).toContain(usd[0]!.customer);
        expect(JSON.stringify(out)).not.toMatch(new RegExp(`"${top}"`));
      });

      it('gives the value of orders in every status, the refunded ones included', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped);
        const out = await metrics({ metrics: ['gross_amount', 'orders'], group_by: ['status'], ...MARCH });
        const expected = [...groupBy(orders, (o) => `${o.currency}|${o.status}`)].map(([k, l]) => {
          const [currency, status] = k.split('|');
          return { status, currency, gross_amount: cents(l) / 100, orders: l.length };
        });
        const sort = (a: Figures, b: Figures): number =>
          `${a.currency}|${a.status}`.localeCompare(`${b.currency}|${b.status}`);
        expect([...(out.rows ?? [])].sort(sort)).toEqual(expected.sort(sort));
        const refunded = await metrics({ metrics: ['gross_amount'], filters: { status: ['refunded'] }, ...MARCH });
        expect(refunded.totals).toEqual(
          currencies(orders).map((currency) => ({
            currency,
            gross_amount: cents(orders.filter((o) => o.currency === currency && o.status === 'refunded')) / 100,
          })),
        );
      });

      it('gives every row its prior figure and change, and keeps the groups that fell to zero', async () => {
        const now = ordersIn(MARCH, timeZone, scoped);
        const before = ordersIn(FEBRUARY, timeZone, scoped);
        const out = await metrics({
          metrics: ['orders'],
          group_by: ['order_value_band'],
          filters: { status: ['cancelled', 'refunded'] },
          start_date: '2025-03-01',
          end_date: '2025-03-28',
          compare_to: 'previous_period',
        });
        const inMarch = now.filter((o) => localDay(o.orderedAt, timeZone) <= '2025-03-28');
        const key = (o: RawOrder): string => `${bandOf(o)}|${o.currency}`;
        const cur = groupBy(
          inMarch.filter((o) => !isNet(o)),
          key,
        );
        const prev = groupBy(
          before.filter((o) => !isNet(o)),
          key,
        );
        const expected = new Map(
          [...new Set([...cur.keys(), ...prev.keys()])].map((k) => {
            const n = cur.get(k)?.length ?? 0;
            const p = prev.get(k)?.length ?? 0;
            return [k, [n, p, p === 0 ? null : Math.round(((n - p) / p) * 1000) / 10]];
          }),
        );
        expect(
          new Map(
            (out.rows ?? []).map((r) => [
              `${r.order_value_band}|${r.currency}`,
              [r.orders, r.orders_prior, r.orders_change_pct],
            ]),
          ),
        ).toEqual(expected);
      });

      it('gives 100 rows for limit 100, with the totals beside them', async () => {
        const orders = ordersIn(MARCH, timeZone, scoped);
        const out = await metrics({ metrics: ['orders'], group_by: ['customer'], limit: 100, ...MARCH });
        expect(out.rows).toHaveLength(100);
        expect(out.truncated).toBe(true);
        expect(out.totals).toEqual([{ orders: orders.length }]);
      });
    });
  }
}
