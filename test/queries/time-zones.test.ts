/**
 * Range edges and time zones, on hand-made rows placed exactly on the boundaries: a day is
 * [00:00, next day 00:00) in the reporting zone, across a daylight-saving change too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let utc: Harness;
let berlin: Harness;

// Europe/Berlin moved to summer time on 2025-03-30 at 02:00 local (01:00 UTC): that day has 23 hours,
// from 2025-03-29T23:00Z to 2025-03-30T22:00Z.
const ORDERS: Array<[at: string, status: string, amount: string]> = [
  ['2025-02-28T23:59:59.999Z', 'paid', '1.00'], // before March, in UTC and in Berlin (00:59 on 1 March!)
  ['2025-03-01T00:00:00.000Z', 'paid', '2.00'], // first instant of March in UTC
  ['2025-03-29T22:59:59.000Z', 'paid', '4.00'], // Berlin 23:59:59 on the 29th
  ['2025-03-29T23:00:00.000Z', 'paid', '8.00'], // Berlin 00:00 on the 30th; UTC still the 29th
  ['2025-03-30T21:59:59.000Z', 'shipped', '16.00'], // Berlin 23:59:59 on the 30th (summer time)
  ['2025-03-30T22:00:00.000Z', 'paid', '32.00'], // Berlin 00:00 on Monday the 31st; UTC Sunday the 30th
  ['2025-03-31T23:59:59.999Z', 'cancelled', '64.00'], // last instant of March in UTC
  ['2025-04-01T00:00:00.000Z', 'paid', '128.00'], // first instant of April in UTC
];

beforeAll(async () => {
  scratch = await createScratchDatabase('tz_check');
  await scratch.admin.query(
    "insert into sales.customers (id, name, email, phone, region) values (1, 'Ada Lovelace', 'ada@example.com', '+44 20 7946 0000', 'Europe')",
  );
  await scratch.admin.query(
    "insert into sales.products (id, sku, name, category, unit_price) values (1, 'SKU-1', 'Thing', 'Home', 1.00)",
  );
  for (const [i, [at, status, amount]] of ORDERS.entries()) {
    await scratch.admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values ($1, 1, $2, $3, $4)',
      [i + 1, status, at, amount],
    );
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, 1, $2, 1.00)',
      [i + 1, Number(amount)],
    );
  }
  utc = await startHarness({ readerUrl: scratch.readerUrl });
  berlin = await startHarness({ readerUrl: scratch.readerUrl, timeZone: 'Europe/Berlin' });
});
afterAll(async () => {
  await utc.close();
  await berlin.close();
  await scratch.drop();
});

const count = async (harness: Harness, start_date: string, end_date: string): Promise<number> =>
  structured<{ order_count: number }>(await harness.call('query_order_count', { start_date, end_date })).order_count;

describe('range edges', () => {
  it('include the first instant of the start day and the last of the end day, in UTC', async () => {
    expect(await count(utc, '2025-03-01', '2025-03-31')).toBe(6); // every order but the first and the last
    expect(await count(utc, '2025-03-31', '2025-03-31')).toBe(1);
    expect(await count(utc, '2025-04-01', '2025-04-01')).toBe(1);
    expect(await count(utc, '2025-02-28', '2025-02-28')).toBe(1);
  });

  it('move with the reporting time zone', async () => {
    // In Berlin, 28 Feb 23:59:59.999Z is already 1 March, and 31 March 23:59:59.999Z already 1 April.
    expect(await count(berlin, '2025-03-01', '2025-03-31')).toBe(6);
    expect(await count(berlin, '2025-04-01', '2025-04-01')).toBe(2);
    expect(await count(berlin, '2025-03-30', '2025-03-30')).toBe(2); // the short summer-time day
    expect(await count(berlin, '2025-03-29', '2025-03-29')).toBe(1);
    expect(await count(berlin, '2025-03-31', '2025-03-31')).toBe(1);
    expect(await count(utc, '2025-03-30', '2025-03-30')).toBe(2); // 21:59:59Z and 22:00Z
    expect(await count(utc, '2025-03-29', '2025-03-29')).toBe(2); // 22:59:59Z and 23:00Z
  });
});

describe('the resolved range', () => {
  it('is echoed as instants with their offsets, across the change to summer time', async () => {
    const out = structured<Record<string, unknown>>(
      await berlin.call('query_order_count', { start_date: '2025-03-30', end_date: '2025-03-30' }),
    );
    expect(out).toMatchObject({
      start_date: '2025-03-30',
      end_date: '2025-03-30',
      time_zone: 'Europe/Berlin',
      starts_at: '2025-03-30T00:00:00.000+01:00',
      ends_before: '2025-03-31T00:00:00.000+02:00',
    });
  });
});

describe('periods in the reporting time zone', () => {
  interface Row {
    period: string;
    order_count: number;
    revenue: number;
  }

  it('label days by the local calendar day', async () => {
    const rows = structured<{ rows: Row[] }>(
      await berlin.call('query_sales', { start_date: '2025-03-29', end_date: '2025-03-31', group_by: 'day' }),
    ).rows;
    expect(rows).toEqual([
      { period: '2025-03-29', currency: 'USD', order_count: 1, revenue: 4, avg_order_value: 4 },
      { period: '2025-03-30', currency: 'USD', order_count: 2, revenue: 24, avg_order_value: 12 },
      { period: '2025-03-31', currency: 'USD', order_count: 1, revenue: 32, avg_order_value: 32 }, // the cancelled order is not revenue
    ]);
  });

  it('put an order in the ISO week of its local day', async () => {
    const weeks = async (harness: Harness): Promise<Row[]> =>
      structured<{ rows: Row[] }>(
        await harness.call('query_sales', { start_date: '2025-03-24', end_date: '2025-04-06', group_by: 'week' }),
      ).rows;
    // 2025-03-30T22:00Z is Sunday in UTC (week of Monday 24 March) but Monday 31 March in Berlin.
    expect((await weeks(utc)).map((r) => [r.period, r.revenue])).toEqual([
      ['2025-03-24', 60],
      ['2025-03-31', 128],
    ]);
    expect((await weeks(berlin)).map((r) => [r.period, r.revenue])).toEqual([
      ['2025-03-24', 28],
      ['2025-03-31', 160],
    ]);
  });

  it('label months by their first local day', async () => {
    const months = structured<{ rows: Row[] }>(
      await berlin.call('query_sales', { start_date: '2025-02-01', end_date: '2025-04-30', group_by: 'month' }),
    ).rows;
    expect(months.map((r) => [r.period, r.order_count, r.revenue])).toEqual([
      ['2025-03-01', 6, 63], // 1+2+4+8+16+32: the 28 Feb order is March in Berlin; the cancelled one is out
      ['2025-04-01', 1, 128],
    ]);
  });
});

describe('half-hour clock changes (issue 30, Wanted 8)', () => {
  // Lord Howe Island goes back half an hour on 2026-04-05 at 02:00 (+11:00) to 01:30 (+10:30), at
  // 15:00 UTC on the 4th, and forward half an hour on 2026-10-04 at 02:00 (+10:30) to 02:30 (+11:00).
  const LORD_HOWE: Array<[id: number, at: string]> = [
    [101, '2026-04-04T14:45:00Z'], // 01:45+11:00, before the change
    [102, '2026-04-04T15:10:00Z'], // 01:40+10:30, the repeated half hour
    [103, '2026-04-04T15:40:00Z'], // 02:10+10:30
    [104, '2026-10-03T15:40:00Z'], // 02:40+11:00, the hour that begins at the change (02:30)
  ];
  let lordHowe: Harness;
  beforeAll(async () => {
    for (const [id, at] of LORD_HOWE) {
      await scratch.admin.query(
        "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values ($1, 1, 'paid', $2, 1.00)",
        [id, at],
      );
      await scratch.admin.query(
        'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, 1, 1, 1.00)',
        [id],
      );
    }
    lordHowe = await startHarness({ readerUrl: scratch.readerUrl, timeZone: 'Australia/Lord_Howe' });
  });
  afterAll(async () => {
    await lordHowe?.close();
  });

  it.each([
    ['2026-04-05', ['2026-04-04T14:00:00Z', '2026-04-04T15:00:00Z', '2026-04-04T15:30:00Z']],
    ['2026-10-04', ['2026-10-03T15:30:00Z']],
  ])('label each hour of %s by the first instant it holds, never before its orders', async (day, starts) => {
    const rows = structured<{ rows: { hour: string; orders: number }[] }>(
      await lordHowe.call('query_metrics', { metrics: ['orders'], group_by: ['hour'], start_date: day, end_date: day }),
    ).rows;
    // Each hour's orders, from the raw rows: those at or after its first instant and before the next hour's.
    const { rows: raw } = await scratch.admin.query<{ ms: string }>(
      `select (extract(epoch from ordered_at) * 1000)::bigint::text as ms from sales.orders where id = any($1::int[])`,
      [LORD_HOWE.map(([id]) => id)],
    );
    const instants = raw.map((r) => Number(r.ms));
    expect(rows.map((r) => Date.parse(r.hour))).toEqual(starts.map((s) => Date.parse(s)));
    rows.forEach((r, i) => {
      const from = Date.parse(r.hour);
      const to = Math.min(from + 3_600_000, Date.parse(rows[i + 1]?.hour ?? '9999-01-01'));
      expect(r.orders).toBe(instants.filter((t) => t >= from && t < to).length);
      expect(r.orders).toBeGreaterThan(0);
    });
  });
});
