/**
 * Issue 30, Wanted 5: answers that know how fresh the data is. The catalog's running-month example
 * (query_metrics revenue and orders, month_to_date against the year before) on a feed that stopped
 * yesterday evening, then on a live one, in UTC and in Europe/Berlin (whose March holds a clock change
 * on both sides). Every figure is held to sums over the raw orders through the admin connection, with
 * the bounds worked out by PostgreSQL's own time-zone arithmetic: [month start, cut) on each side, the
 * cut being the earlier of the current minute and the end of the newest order's minute, and a year
 * earlier at the same local time of day.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { NON_REVENUE_STATUSES } from '../../pack/statuses.js';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { addOrder } from '../support/sales-reports.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const ZONES = ['UTC', 'Europe/Berlin'];
/** The morning after the feed's last order, local time in each zone. */
const NOW_LOCAL = '2026-03-31 10:00:00';
/** The newest order of the stopped feed: yesterday evening in both zones (19:45 UTC, 21:45 in Berlin). */
const LAST_ORDER = '2026-03-30T19:45:30Z';
const EXAMPLE = { metrics: ['revenue', 'orders'], period: 'month_to_date', compare_to: 'previous_year' };

interface Totals {
  currency: string;
  revenue: number;
  orders: number;
  revenue_change_pct?: number | null;
  orders_change_pct?: number | null;
}
interface Answer {
  start_date: string;
  end_date: string;
  partial: boolean;
  until?: string;
  data_as_of: string;
  data_through: string | null;
  totals: Totals[];
  comparison: { start_date: string; end_date: string; partial: boolean; until?: string; totals: Totals[] };
}

describe('30.5 answers that know how fresh the data is', () => {
  let scratch: ScratchDatabase;
  const harnesses = new Map<string, Harness>();
  let clock = 0;
  let live: Promise<void> | undefined;

  beforeAll(async () => {
    // Two years of USD orders up to 29 March 2026, then one EUR order on the evening of 30 March.
    scratch = await createScratchDatabase('data_through', { orders: 6000, until: '2026-03-29' });
    await addOrder(scratch.admin, {
      id: 990001,
      status: 'paid',
      at: LAST_ORDER,
      currency: 'EUR',
      product: 1,
      amount: '80.00',
    });
    // A year earlier, the last hours of 30 March and the morning of 31 March in EUR too: a comparison
    // cut at the current minute would count them, one cut where the data stop must not.
    for (const [k, at] of ['2025-03-30T20:30:00Z', '2025-03-30T23:10:00Z', '2025-03-31T05:00:00Z'].entries()) {
      await addOrder(scratch.admin, {
        id: 990010 + k,
        status: 'paid',
        at,
        currency: 'EUR',
        product: 1,
        amount: '40.00',
      });
    }
    for (const zone of ZONES)
      harnesses.set(zone, await startHarness({ readerUrl: scratch.readerUrl, timeZone: zone, now: () => clock }));
  });
  afterAll(async () => {
    for (const harness of harnesses.values()) await harness.close();
    await scratch?.drop();
  });

  const msOf = async (sqlText: string, params: unknown[]): Promise<number> => {
    const { rows } = await scratch.admin.query<{ ms: string }>(
      `select (extract(epoch from (${sqlText})) * 1000)::bigint::text as ms`,
      params,
    );
    return Number(rows[0]!.ms);
  };

  /** Net revenue (cents) and every order per currency, in [from, to) (instants in ms). */
  async function truth(fromMs: number, toMs: number): Promise<Map<string, { revenue: number; orders: number }>> {
    const { rows } = await scratch.admin.query<{ currency: string; revenue: string; orders: string }>(
      `select o.currency,
              coalesce(sum(i.quantity * i.unit_price) filter (where o.status <> all($3::text[])), 0)::text as revenue,
              count(distinct o.id)::text as orders
         from sales.orders o join sales.order_items i on i.order_id = o.id
        where o.ordered_at >= to_timestamp($1::double precision / 1000) and o.ordered_at < to_timestamp($2::double precision / 1000)
        group by 1`,
      [fromMs, toMs, [...NON_REVENUE_STATUSES]],
    );
    return new Map(rows.map((r) => [r.currency, { revenue: Number(r.revenue), orders: Number(r.orders) }]));
  }

  /** Both sides' bounds: the month's first instant and the cut, and a year earlier at the same local time. */
  async function bounds(zone: string, cutMs: number) {
    const local = `to_timestamp($1::double precision / 1000) at time zone $2`;
    return {
      start: await msOf(`date_trunc('month', ${local}) at time zone $2`, [cutMs, zone]),
      priorStart: await msOf(`(date_trunc('month', ${local}) - interval '1 year') at time zone $2`, [cutMs, zone]),
      priorCut: await msOf(`((${local}) - interval '1 year') at time zone $2`, [cutMs, zone]),
    };
  }

  async function expectComparedAt(zone: string, cutMs: number, dataThroughMs: number): Promise<Answer> {
    const result = await harnesses.get(zone)!.call('query_metrics', EXAMPLE);
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const answer = structured<Answer>(result);
    expect(Date.parse(answer.data_through!)).toBe(dataThroughMs);
    expect(answer.data_as_of).toBeDefined();
    const { start, priorStart, priorCut } = await bounds(zone, cutMs);
    expect([answer.start_date, answer.end_date]).toEqual(['2026-03-01', '2026-03-31']);
    expect([answer.comparison.start_date, answer.comparison.end_date]).toEqual(['2025-03-01', '2025-03-31']);
    expect([answer.partial, Date.parse(answer.until!)]).toEqual([true, cutMs]);
    expect([answer.comparison.partial, Date.parse(answer.comparison.until!)]).toEqual([true, priorCut]);
    const now = await truth(start, cutMs);
    const before = await truth(priorStart, priorCut);
    const expected = (side: Map<string, { revenue: number; orders: number }>) =>
      [...side].sort(([a], [b]) => a.localeCompare(b)).map(([currency, t]) => ({ currency, ...t }));
    expect(answer.totals.map(({ currency, revenue, orders }) => ({ currency, revenue, orders }))).toEqual(
      expected(now),
    );
    expect(answer.comparison.totals.map(({ currency, revenue, orders }) => ({ currency, revenue, orders }))).toEqual(
      // Every currency of either side: one sold only now was 0 before.
      expected(new Map([...[...now.keys()].map((c) => [c, { revenue: 0, orders: 0 }] as const), ...before])),
    );
    for (const t of answer.comparison.totals) {
      const current = now.get(t.currency)!;
      const pct = (a: number, b: number): number | null => (b === 0 ? null : Math.round(((a - b) / b) * 1000) / 10);
      expect(t.orders_change_pct).toBe(pct(current.orders, t.orders));
      expect(t.revenue_change_pct).toBe(pct(current.revenue, t.revenue));
    }
    return answer;
  }

  it.each(ZONES)(
    '30.5 on a feed that stopped yesterday evening, both sides are cut where the data stop, in %s',
    async (zone) => {
      clock = await msOf(`$1::timestamp at time zone $2`, [NOW_LOCAL, zone]);
      const newest = await msOf('select max(ordered_at) from sales.orders', []);
      expect(newest).toBe(Date.parse(LAST_ORDER));
      // The end of the newest order's minute: 19:46 UTC, every order up to the newest counted.
      const cut = Math.floor(newest / 60_000) * 60_000 + 60_000;
      const answer = await expectComparedAt(zone, cut, newest);
      // The year before holds orders between that cut and the current minute, which must not count.
      const { priorCut } = await bounds(zone, cut);
      const { priorCut: priorNow } = await bounds(zone, clock);
      const skipped = await truth(priorCut, priorNow);
      expect(skipped.get('EUR')?.orders).toBeGreaterThan(0);
      expect(answer.comparison.totals.find((t) => t.currency === 'EUR')?.orders ?? 0).toBe(0);
      expect(answer.totals.find((t) => t.currency === 'EUR')).toMatchObject({ orders: 1, revenue: 80 });
    },
  );

  it.each(ZONES)('30.5 on a live feed, both sides are cut at the current minute, in %s', async (zone) => {
    // Orders after yesterday evening: one this morning, one in two days (data may run ahead of the clock).
    live ??= (async () => {
      for (const [id, at, amount] of [
        [990002, '2026-03-31T06:30:00Z', '20.00'],
        [990003, '2026-04-02T12:00:00Z', '30.00'],
      ] as const) {
        await addOrder(scratch.admin, { id, status: 'paid', at, currency: 'EUR', product: 1, amount });
      }
    })();
    await live;
    clock = (await msOf(`$1::timestamp at time zone $2`, [NOW_LOCAL, zone])) + 12_345;
    const answer = await expectComparedAt(
      zone,
      Math.floor(clock / 60_000) * 60_000,
      Date.parse('2026-04-02T12:00:00Z'),
    );
    expect(answer.totals.find((t) => t.currency === 'EUR')).toMatchObject({ orders: 2, revenue: 100 });
    expect(answer.comparison.totals.find((t) => t.currency === 'EUR')).toMatchObject({ orders: 3, revenue: 120 });
  });

  it('30.5 every template of the sales pack says data_through, the newest order', async () => {
    clock = Date.parse('2026-03-31T12:00:00Z');
    const harness = harnesses.get('UTC')!;
    const newest = await msOf('select max(ordered_at) from sales.orders', []);
    expect(salesPack.templates.length).toBeGreaterThan(4);
    for (const tool of salesPack.templates) {
      const result = await harness.call(tool.name, tool.examples[0]);
      expect(result.isError, `${tool.name}: ${JSON.stringify(result.content)}`).toBeFalsy();
      expect(Date.parse(structured<Answer>(result).data_through!), tool.name).toBe(newest);
    }
  });
});
