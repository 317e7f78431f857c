/**
 * Issue 19, section 1: a period that has not ended, compared. The clock is fixed at local instants
 * (just after midnight, midday, the last minute of a day, days the clocks change) in three zones, and
 * every figure is held to sums over the raw orders through the admin connection, with bounds worked
 * out by PostgreSQL's own time-zone arithmetic: [range start, cut) on each side, the cut being the
 * current minute, and a year (or the range's length) earlier at the same local time of day.
 * The scratch data runs past the fixed "now", so rows later than it exist and must not count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { addOrder } from '../support/sales-reports.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const ZONES = ['UTC', 'Europe/Berlin', 'Asia/Kolkata'];
/** Local wall-clock instants: just after midnight, midday, the last minute, and two clock-change days in Berlin. */
const INSTANTS = [
  '2026-12-01 00:07:31',
  '2026-12-02 12:00:00',
  '2026-12-02 23:59:59',
  '2026-10-25 12:00:00',
  '2026-03-29 23:59:10',
];
const CASES = ZONES.flatMap((zone) => INSTANTS.map((local) => [zone, local] as const));

interface Side {
  start_date: string;
  end_date: string;
  partial: boolean;
  until?: string;
}

describe('19.1 a running period against a whole one', () => {
  let scratch: ScratchDatabase;
  const harnesses = new Map<string, Harness>();
  let clock = 0;

  beforeAll(async () => {
    scratch = await createScratchDatabase('running_periods', { orders: 8000, until: '2027-01-20' });
    // Eight Thursdays before Thursday 16 July 2026 with 30 extra paid orders each, so that their revenue
    // has a tight spread and a Thursday barely begun stands far below it.
    for (let week = 1; week <= 8; week++) {
      const day = new Date(Date.parse('2026-07-16T10:00:00Z') - week * 7 * 86_400_000).toISOString();
      for (let k = 0; k < 30; k++) {
        await addOrder(scratch.admin, {
          id: 970000 + week * 100 + k,
          status: 'paid',
          at: day,
          currency: 'USD',
          product: 1,
          amount: '100.00',
        });
      }
    }
    // Just after midnight on 1 December 2026 UTC: an order of a category, so that one sold then.
    await addOrder(scratch.admin, {
      id: 979999,
      status: 'paid',
      at: '2026-12-01T00:03:00Z',
      currency: 'USD',
      product: 1,
      amount: '75.00',
    });
    for (const zone of ZONES)
      harnesses.set(zone, await startHarness({ readerUrl: scratch.readerUrl, timeZone: zone, now: () => clock }));
  });
  afterAll(async () => {
    for (const harness of harnesses.values()) await harness.close();
    await scratch?.drop();
  });

  /**
   * The bounds of both sides, by PostgreSQL: the period's first day, the cut (now to the minute), the
   * prior range's first day and its cut at the same local time (`shift` is a timestamp interval, so
   * wall-clock arithmetic; a year earlier is what `interval '1 year'` gives).
   */
  async function bounds(zone: string, local: string, period: 'month' | 'week', shift: string | 'length') {
    const { rows } = await scratch.admin.query<Record<string, string>>(
      `with n as (select date_trunc('minute', $1::timestamp) as cut_local, date_trunc($3, $1::timestamp) as start_local,
                         (date_trunc($3, $1::timestamp) + ('1 ' || $3)::interval - interval '1 day')::date as end_day),
            s as (select *, case when $4 = 'length' then (end_day - start_local::date + 1) * interval '1 day' else $4::interval end as back from n)
       select (start_local at time zone $2)::text as start_at, (cut_local at time zone $2)::text as cut_at,
              start_local::date::text as start_date, end_day::text as end_date,
              ((start_local - back) at time zone $2)::text as prior_start_at, ((cut_local - back) at time zone $2)::text as prior_cut_at,
              (start_local - back)::date::text as prior_start_date, (end_day - back)::date::text as prior_end_date
       from s`,
      [local, zone, period, shift],
    );
    return rows[0]!;
  }

  /** Net revenue (text, exact) per currency and region, and every order, in [from, to). */
  async function truth(from: string, to: string) {
    const revenue = await scratch.admin.query<{ currency: string; region: string; revenue: string }>(
      `select o.currency, c.region, sum(o.total_amount)::text as revenue from sales.orders o join sales.customers c on c.id = o.customer_id
        where o.ordered_at >= $1 and o.ordered_at < $2 and o.status not in ('cancelled', 'refunded') group by 1, 2`,
      [from, to],
    );
    const orders = await scratch.admin.query<{ n: string }>(
      'select count(*)::text as n from sales.orders where ordered_at >= $1 and ordered_at < $2',
      [from, to],
    );
    return { revenue: revenue.rows, orders: Number(orders.rows[0]!.n) };
  }

  const atMs = async (timestamptz: string): Promise<number> => {
    const { rows } = await scratch.admin.query<{ ms: string }>(
      'select (extract(epoch from $1::timestamptz) * 1000)::bigint::text as ms',
      [timestamptz],
    );
    return Number(rows[0]!.ms);
  };
  const pct = (now: number, before: number): number | null =>
    before === 0 ? null : Math.round(((now - before) / before) * 1000) / 10;
  const sumOf = (rows: { revenue: string }[]): number =>
    rows.reduce((sum, r) => sum + Math.round(Number(r.revenue) * 100), 0) / 100;

  async function fixClock(zone: string, local: string): Promise<void> {
    const { rows } = await scratch.admin.query<{ ms: string }>(
      `select (extract(epoch from ($1::timestamp at time zone $2)) * 1000)::bigint::text as ms`,
      [local, zone],
    );
    clock = Number(rows[0]!.ms);
  }

  async function expectCut(side: Side, atText: string, zone: string): Promise<void> {
    expect(side.partial).toBe(true);
    expect(side.until).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000[+-]\d\d:\d\d$/);
    expect(Date.parse(side.until!)).toBe(await atMs(atText));
    // Written in the zone's own offset at that instant.
    const { rows } = await scratch.admin.query<{ local: string }>(
      `select to_char($1::timestamptz at time zone $2, 'YYYY-MM-DD"T"HH24:MI') as local`,
      [atText, zone],
    );
    expect(side.until!.slice(0, 16)).toBe(rows[0]!.local);
  }

  it.each(CASES)(
    '19.1.1 19.1.2 query_sales month_to_date by region against the year before, cut at the same local minute, in %s at %s',
    async (zone, local) => {
      await fixClock(zone, local);
      const b = await bounds(zone, local, 'month', '1 year');
      const result = structured<
        Side & {
          rows: {
            region: string;
            currency: string;
            revenue: number;
            prior_revenue: number | null;
            change_pct: number | null;
          }[];
          truncated: boolean;
          comparison: Side & {
            totals: { currency: string; revenue: number; prior_revenue: number; change_pct: number | null }[];
          };
        }
      >(
        await harnesses
          .get(zone)!
          .call('query_sales', { period: 'month_to_date', group_by: 'region', compare_to: 'previous_year' }),
      );
      const now = await truth(b.start_at!, b.cut_at!);
      const before = await truth(b.prior_start_at!, b.prior_cut_at!);
      expect(result.start_date).toBe(b.start_date);
      expect(result.comparison.start_date).toBe(b.prior_start_date);
      await expectCut(result, b.cut_at!, zone);
      await expectCut(result.comparison, b.prior_cut_at!, zone);
      const usd = result.comparison.totals.find((t) => t.currency === 'USD');
      const [nowUsd, beforeUsd] = [sumOf(now.revenue), sumOf(before.revenue)];
      if (now.revenue.length + before.revenue.length === 0) expect(usd).toBeUndefined();
      else expect(usd).toMatchObject({ revenue: nowUsd, prior_revenue: beforeUsd, change_pct: pct(nowUsd, beforeUsd) });
      // Each region with its own figures on both sides, and every region that sold on either side.
      const regions = new Set([...now.revenue, ...before.revenue].map((r) => r.region));
      expect(new Set(result.rows.map((r) => r.region))).toEqual(regions);
      for (const row of result.rows) {
        const cur = sumOf(now.revenue.filter((r) => r.region === row.region));
        const pri = sumOf(before.revenue.filter((r) => r.region === row.region));
        expect(row, row.region).toMatchObject({ revenue: cur, prior_revenue: pri, change_pct: pct(cur, pri) });
      }
    },
  );

  it.each(CASES)(
    '19.1.1 19.1.2 query_order_count this_week against the week before, both cut at the same local minute, in %s at %s',
    async (zone, local) => {
      await fixClock(zone, local);
      const b = await bounds(zone, local, 'week', 'length');
      const result = structured<Side & { order_count: number; comparison: Side & { order_count: number } }>(
        await harnesses.get(zone)!.call('query_order_count', { period: 'this_week', compare_to: 'previous_period' }),
      );
      const now = await truth(b.start_at!, b.cut_at!);
      const before = await truth(b.prior_start_at!, b.prior_cut_at!);
      expect([result.start_date, result.end_date]).toEqual([b.start_date, b.end_date]);
      expect([result.comparison.start_date, result.comparison.end_date]).toEqual([
        b.prior_start_date,
        b.prior_end_date,
      ]);
      await expectCut(result, b.cut_at!, zone);
      await expectCut(result.comparison, b.prior_cut_at!, zone);
      expect(result.order_count).toBe(now.orders);
      expect(result.comparison.order_count).toBe(before.orders);
    },
  );

  it('19.1.5 a day barely begun is never judged a notable day, however far below its weekdays it stands', async () => {
    await fixClock('UTC', '2026-07-16 00:07:00');
    // The rule, on the raw rows: today so far against the eight Thursdays before, whole.
    const revenue = async (from: string, to: string): Promise<number> => {
      const { rows } = await scratch.admin.query<{ cents: string }>(
        `select coalesce(sum(total_amount * 100), 0)::bigint::text as cents from sales.orders
          where ordered_at >= $1 and ordered_at < $2 and currency = 'USD' and status not in ('cancelled', 'refunded')`,
        [from, to],
      );
      return Number(rows[0]!.cents) / 100;
    };
    const today = await revenue('2026-07-16T00:00:00Z', '2026-07-16T00:07:00Z');
    const baseline: number[] = [];
    for (let week = 1; week <= 8; week++) {
      const day = Date.parse('2026-07-16T00:00:00Z') - week * 7 * 86_400_000;
      baseline.push(await revenue(new Date(day).toISOString(), new Date(day + 86_400_000).toISOString()));
    }
    const median = (xs: number[]): number => {
      const s = [...xs].sort((a, b) => a - b);
      return (s[3]! + s[4]!) / 2;
    };
    const m = median(baseline);
    const mad = median(baseline.map((b) => Math.abs(b - m)));
    // Judged, today would be a notable low day: the case the rule must leave alone.
    expect(mad).toBeGreaterThan(0);
    expect((0.6745 * (today - m)) / mad).toBeLessThan(-3.5);
    const r = structured<{ partial: boolean; through_date: string; notable_days: { date: string }[] }>(
      await harnesses.get('UTC')!.call('weekly_sales_report', { week: 'this_week' }),
    );
    expect(r).toMatchObject({ partial: true, through_date: '2026-07-16' });
    expect(r.notable_days.filter((d) => d.date === '2026-07-16')).toEqual([]);
  });

  it('19.2.1 query_sales by category with compare_to lists a category that sold before and nothing now, at revenue 0 and -100 %', async () => {
    await fixClock('UTC', '2026-12-02 00:07:31');
    const { rows } = await scratch.admin.query<{ side: string; category: string; revenue: string }>(
      `select case when o.ordered_at >= '2026-12-02' then 'now' else 'before' end as side, p.category,
              sum(oi.quantity * oi.unit_price)::text as revenue
         from sales.orders o join sales.order_items oi on oi.order_id = o.id join sales.products p on p.id = oi.product_id
        where ((o.ordered_at >= '2026-12-01' and o.ordered_at < '2026-12-01 00:07:00+00')
            or (o.ordered_at >= '2026-12-02' and o.ordered_at < '2026-12-02 00:07:00+00'))
          and o.status not in ('cancelled', 'refunded') and o.currency = 'USD'
        group by 1, 2`,
    );
    const side = (name: string) =>
      new Map(rows.filter((r) => r.side === name).map((r) => [r.category, Number(r.revenue)]));
    const [now, before] = [side('now'), side('before')];
    const fallen = [...before.keys()].filter((c) => !now.has(c));
    expect(fallen.length).toBeGreaterThan(0);
    const result = structured<{
      rows: {
        category: string;
        revenue: number;
        order_count: number;
        avg_order_value: number | null;
        prior_revenue: number | null;
        change_pct: number | null;
      }[];
    }>(
      await harnesses
        .get('UTC')!
        .call('query_sales', { period: 'today', group_by: 'category', compare_to: 'previous_period' }),
    );
    expect(new Set(result.rows.map((r) => r.category))).toEqual(new Set([...now.keys(), ...before.keys()]));
    for (const category of fallen) {
      expect(result.rows.find((r) => r.category === category)).toMatchObject({
        revenue: 0,
        order_count: 0,
        avg_order_value: null,
        prior_revenue: before.get(category),
        change_pct: -100,
      });
    }
    // Groups that fell to nothing come after those that sold, within the currency.
    const firstFallen = result.rows.findIndex((r) => r.revenue === 0);
    expect(result.rows.slice(firstFallen).every((r) => r.revenue === 0)).toBe(true);
  });

  interface Bucket {
    period: string;
    currency: string;
    revenue: number;
    partial?: boolean;
    first_day?: string;
    last_day?: string;
    until?: string;
  }
  const netUsd = async (from: string, to: string): Promise<number> => {
    const { rows } = await scratch.admin.query<{ revenue: string }>(
      `select coalesce(sum(total_amount), 0)::text as revenue from sales.orders
        where ordered_at >= $1 and ordered_at < $2 and currency = 'USD' and status not in ('cancelled', 'refunded')`,
      [from, to],
    );
    return Number(rows[0]!.revenue);
  };

  it.each(ZONES)(
    '19.1.3 a day, week or month the range covers in part says so with the days it counts and its cut, in %s',
    async (zone) => {
      await fixClock(zone, '2026-12-02 12:00:30');
      const { rows } = await scratch.admin.query<Record<string, string>>(
        `select ('2026-12-01'::timestamp at time zone $1)::text as dec1, ('2026-12-02'::timestamp at time zone $1)::text as dec2,
                ('2026-12-02 12:00'::timestamp at time zone $1)::text as cut`,
        [zone],
      );
      const at = rows[0]!;
      const call = async (args: object): Promise<Bucket[]> =>
        structured<{ rows: Bucket[] }>(await harnesses.get(zone)!.call('query_sales', args)).rows.filter(
          (r) => r.currency === 'USD',
        );
      // By day this week: Monday and Tuesday whole, today up to the minute.
      const days = await call({ period: 'this_week', group_by: 'day' });
      for (const row of days.filter((r) => r.period < '2026-12-02')) expect(row.partial, row.period).toBeUndefined();
      const today = days.find((r) => r.period === '2026-12-02')!;
      expect(today).toMatchObject({ partial: true, first_day: '2026-12-02', last_day: '2026-12-02' });
      expect(Date.parse(today.until!)).toBe(await atMs(at.cut!));
      expect(today.revenue).toBe(await netUsd(at.dec2!, at.cut!));
      // By week this month: the week of Monday 30 November counts 1 and 2 December only, up to the minute.
      const [week] = await call({ period: 'month_to_date', group_by: 'week' });
      expect(week).toMatchObject({
        period: '2026-11-30',
        partial: true,
        first_day: '2026-12-01',
        last_day: '2026-12-02',
      });
      expect(Date.parse(week!.until!)).toBe(await atMs(at.cut!));
      expect(week!.revenue).toBe(await netUsd(at.dec1!, at.cut!));
      // By month: December so far.
      const [month] = await call({ period: 'month_to_date', group_by: 'month' });
      expect(month).toMatchObject({
        period: '2026-12-01',
        partial: true,
        first_day: '2026-12-01',
        last_day: '2026-12-02',
      });
      // A range that has ended, starting on a Wednesday and ending on a Monday: its first and last weeks are partial.
      const weeks = await call({ start_date: '2026-11-04', end_date: '2026-11-30', group_by: 'week' });
      expect(weeks.map((r) => [r.period, r.partial ?? false, r.first_day, r.last_day, r.until])).toEqual([
        ['2026-11-02', true, '2026-11-04', '2026-11-08', undefined],
        ['2026-11-09', false, undefined, undefined, undefined],
        ['2026-11-16', false, undefined, undefined, undefined],
        ['2026-11-23', false, undefined, undefined, undefined],
        ['2026-11-30', true, '2026-11-30', '2026-11-30', undefined],
      ]);
    },
  );

  it('19.1.1 a running range holding 29 February is refused against the year before, naming compare_to and why; one it cannot shorten is answered', async () => {
    // A live feed in 2028: an order after every clock below, so that no range is cut where the data stop.
    await addOrder(scratch.admin, {
      id: 979998,
      status: 'paid',
      at: '2028-03-10T10:00:00Z',
      currency: 'USD',
      product: 1,
      amount: '75.00',
    });
    for (const zone of ZONES) {
      await fixClock(zone, '2028-03-02 12:00:00');
      const refused = await harnesses.get(zone)!.call('query_sales', {
        start_date: '2028-02-20',
        end_date: '2028-03-05',
        group_by: 'region',
        compare_to: 'previous_year',
      });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/compare_to: the range is still running and holds 29 February/);
      expect(textOf(refused)).toMatch(/use previous_period/);
      // The same range a period earlier, or a range from 29 February itself, keeps equal elapsed time.
      for (const args of [
        { start_date: '2028-02-20', end_date: '2028-03-05', compare_to: 'previous_period' },
        { start_date: '2028-03-01', end_date: '2028-03-05', compare_to: 'previous_year' },
      ]) {
        const result = await harnesses.get(zone)!.call('query_order_count', args);
        expect(result.isError, JSON.stringify(args)).toBeFalsy();
        expect(structured<Side>(result).partial).toBe(true);
      }
      await fixClock(zone, '2028-02-29 12:00:00');
      const today = await harnesses
        .get(zone)!
        .call('query_order_count', { period: 'today', compare_to: 'previous_year' });
      expect(structured<{ comparison: Side }>(today).comparison.start_date).toBe('2027-02-28');
      const month = await harnesses
        .get(zone)!
        .call('query_order_count', { period: 'month_to_date', compare_to: 'previous_year' });
      expect(textOf(month)).toMatch(/compare_to: the range is still running and holds 29 February/);
    }
  });

  it('19.1.2 a range that has ended says neither partial nor until, nor does its comparison', async () => {
    await fixClock('UTC', '2026-12-02 12:00:00');
    const result = structured<Side & { comparison: Side }>(
      await harnesses.get('UTC')!.call('query_order_count', { period: 'last_week', compare_to: 'previous_year' }),
    );
    expect(result.partial).toBeUndefined(); // an ended range says nothing of a cut
    expect(result.until).toBeUndefined();
    expect(result.comparison.partial).toBeUndefined();
    expect(result.comparison.until).toBeUndefined();
  });
});
