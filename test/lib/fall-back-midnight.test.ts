/**
 * Item 2 of issue 8, end to end: zones whose clocks fall back across midnight. Atlantic/Azores goes
 * from 01:00 (UTC+0) back to 00:00 (UTC-1) on 2025-10-26, and America/Havana from 01:00 (UTC-4) to
 * 00:00 (UTC-5) on 2025-11-02: local midnight happens twice, and the day starts at the first. Orders
 * sit in every hour around those midnights; the expected figures are counted by PostgreSQL from each
 * order's local date (an instant has one local date, so that count needs no notion of a day's start).
 * Item 4: years 1 to 99 and offsets with seconds, echoed exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
const harnesses: Record<string, Harness> = {};
const ZONES = ['Atlantic/Azores', 'America/Havana', 'Asia/Kolkata', 'UTC'] as const;

beforeAll(async () => {
  scratch = await createScratchDatabase('fall_back');
  await scratch.admin.query(
    "insert into sales.customers (id, name, email, phone, region) values (1, 'Ada Lovelace', 'ada@example.com', '+351 000', 'Europe'), (2, 'Bo Li', 'bo@example.com', '+53 000', 'Americas')",
  );
  await scratch.admin.query(
    "insert into sales.products (id, sku, name, category, unit_price) values (1, 'SKU-1', 'Thing', 'Home', 1.00), (2, 'SKU-2', 'Other', 'Garden', 1.00), (3, 'SKU-3', 'Third', 'Home', 0.50)",
  );
  // An order every 20 minutes from 2025-10-24 to 2025-11-04 UTC, with amounts that tell them apart,
  // alternating products and customers.
  await scratch.admin.query(`
    insert into sales.orders (id, customer_id, status, ordered_at, total_amount)
    select n, 1 + n % 2, 'paid', timestamptz '2025-10-24 00:00:00+00' + (n - 1) * interval '20 minutes', n
      from generate_series(1, 12 * 72) as n`);
  await scratch.admin.query(`
    insert into sales.order_items (order_id, product_id, quantity, unit_price)
    select id, 1 + id % 2, id, 1.00 from sales.orders`);
  // Every third order of product 1 holds a second Home item: it counts once in Home, by category.
  await scratch.admin.query(`
    insert into sales.order_items (order_id, product_id, quantity, unit_price)
    select id, 3, 1, 0.50 from sales.orders where id % 6 = 0`);
  for (const zone of ZONES) harnesses[zone] = await startHarness({ readerUrl: scratch.readerUrl, timeZone: zone });
});
afterAll(async () => {
  for (const harness of Object.values(harnesses)) await harness.close();
  await scratch.drop();
});

const byLocalDay = async (zone: string, from: string, to: string): Promise<Map<string, { n: number; sum: number }>> => {
  const { rows } = await scratch.admin.query<{ day: string; n: string; sum: string }>(
    `select (ordered_at at time zone $1)::date::text as day, count(*) as n, sum(total_amount) as sum
       from sales.orders where (ordered_at at time zone $1)::date between $2 and $3 group by 1 order by 1`,
    [zone, from, to],
  );
  return new Map(rows.map((row) => [row.day, { n: Number(row.n), sum: Number(row.sum) }]));
};

describe('item 2: a day whose midnight happens twice', () => {
  it.each([
    ['Atlantic/Azores', '2025-10-25', '2025-10-26', '2025-10-27'],
    ['America/Havana', '2025-11-01', '2025-11-02', '2025-11-03'],
  ])('item 2: %s counts each day as PostgreSQL dates its orders', async (zone, before, day, after) => {
    const expected = await byLocalDay(zone, before, after);
    for (const d of [before, day, after]) {
      const out = structured<{ order_count: number }>(
        await harnesses[zone]!.call('query_order_count', { start_date: d, end_date: d }),
      );
      expect([d, out.order_count]).toEqual([d, expected.get(d)!.n]);
    }
    // The day that gains an hour holds 25 hours of orders, three an hour.
    expect(expected.get(day)!.n).toBe(75);
  });

  it.each([
    ['Atlantic/Azores', '2025-10-24', '2025-10-25'],
    ['America/Havana', '2025-10-31', '2025-11-01'],
  ])('item 2: %s by day lists only the days asked for, with their figures', async (zone, start, end) => {
    const expected = await byLocalDay(zone, start, end);
    const rows = structured<{ rows: Array<{ period: string; order_count: number; revenue: number }> }>(
      await harnesses[zone]!.call('query_sales', { start_date: start, end_date: end, group_by: 'day' }),
    ).rows;
    expect(rows.map((r) => [r.period, r.order_count, r.revenue])).toEqual(
      [...expected].map(([d, { n, sum }]) => [d, n, sum]),
    );
  });

  it('item 2: top products and regions in Atlantic/Azores match the items by local day', async () => {
    const zone = 'Atlantic/Azores';
    const { rows } = await scratch.admin.query<{ sku: string; units: string }>(
      `select p.sku, sum(i.quantity) as units from sales.orders o
         join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
        where (o.ordered_at at time zone $1)::date = '2025-10-26' group by p.sku order by p.sku`,
      [zone],
    );
    const top = structured<{ rows: Array<{ sku: string; units: number }> }>(
      await harnesses[zone]!.call('query_top_products', {
        start_date: '2025-10-26',
        end_date: '2025-10-26',
        metric: 'units',
      }),
    ).rows;
    expect(top.map((r) => [r.sku, r.units]).sort()).toEqual(rows.map((r) => [r.sku, Number(r.units)]));
    const regions = structured<{ rows: Array<{ order_count: number }> }>(
      await harnesses[zone]!.call('query_sales', {
        start_date: '2025-10-26',
        end_date: '2025-10-26',
        group_by: 'region',
      }),
    ).rows;
    expect(regions.reduce((sum, r) => sum + r.order_count, 0)).toBe(75);
  });

  it.each([
    ['Atlantic/Azores', '2025-10-25', '2025-10-26', '2025-10-27'],
    ['America/Havana', '2025-11-01', '2025-11-02', '2025-11-03'],
    ['Asia/Kolkata', '2025-10-25', '2025-10-26', '2025-10-27'],
    ['UTC', '2025-10-25', '2025-10-26', '2025-10-27'],
  ])('item 2: %s by category counts each day as PostgreSQL dates its orders', async (zone, before, day, after) => {
    for (const [start, end] of [
      [before, before],
      [day, day],
      [after, after],
      [before, after],
    ]) {
      const { rows } = await scratch.admin.query<{ category: string; n: string; revenue: string; avg: string }>(
        `select p.category, count(distinct o.id) as n, round(sum(i.quantity * i.unit_price), 2) as revenue,
                round(sum(i.quantity * i.unit_price) / count(distinct o.id), 2) as avg
           from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
          where (o.ordered_at at time zone $1)::date between $2 and $3
          group by p.category order by sum(i.quantity * i.unit_price) desc, p.category`,
        [zone, start, end],
      );
      expect(rows.length).toBe(2);
      const served = structured<{ rows: Array<Record<string, unknown>> }>(
        await harnesses[zone]!.call('query_sales', { start_date: start, end_date: end, group_by: 'category' }),
      ).rows;
      expect(served, `${zone} ${start}..${end}`).toEqual(
        rows.map((r) => ({
          category: r.category,
          currency: 'USD',
          order_count: Number(r.n),
          revenue: Number(r.revenue),
          avg_order_value: Number(r.avg),
        })),
      );
    }
  });

  it('item 2: the echo names the instant the SQL cut at', async () => {
    const out = structured<Record<string, unknown>>(
      await harnesses['Atlantic/Azores']!.call('query_order_count', {
        start_date: '2025-10-26',
        end_date: '2025-10-26',
      }),
    );
    // The first of the two midnights, still in summer time (UTC+0); the next day's, in winter time.
    expect(out).toMatchObject({
      starts_at: '2025-10-26T00:00:00.000+00:00',
      ends_before: '2025-10-27T00:00:00.000-01:00',
    });
    // And the first order of the day is the one placed at that instant.
    const { rows } = await scratch.admin.query<{ first: Date }>(
      "select min(ordered_at) as first from sales.orders where (ordered_at at time zone 'Atlantic/Azores')::date = '2025-10-26'",
    );
    expect(rows[0]!.first.toISOString()).toBe('2025-10-26T00:00:00.000Z');
  });

  it('item 2: a zone whose offset is not whole hours reads the orders, with the same day cut', async () => {
    const expected = await byLocalDay('Asia/Kolkata', '2025-10-25', '2025-10-27');
    const rows = structured<{ rows: Array<{ period: string; order_count: number }> }>(
      await harnesses['Asia/Kolkata']!.call('query_sales', {
        start_date: '2025-10-25',
        end_date: '2025-10-27',
        group_by: 'day',
      }),
    ).rows;
    expect(rows.map((r) => [r.period, r.order_count])).toEqual([...expected].map(([d, { n }]) => [d, n]));
  });
});

describe('item 4: old dates are echoed exactly', () => {
  it('item 4: 0050-06-01 is the year 50, not 1950', async () => {
    const out = structured<Record<string, unknown>>(
      await harnesses.UTC!.call('query_order_count', { start_date: '0050-06-01', end_date: '0050-06-02' }),
    );
    expect(out).toMatchObject({
      order_count: 0,
      starts_at: '0050-06-01T00:00:00.000+00:00',
      ends_before: '0050-06-03T00:00:00.000+00:00',
    });
  });

  it('item 4: 0001-01-01 east of Greenwich starts in 1 BC, and the call still answers', async () => {
    const result = await harnesses['Asia/Kolkata']!.call('query_sales', {
      start_date: '0001-01-01',
      end_date: '0001-01-02',
      group_by: 'day',
    });
    expect(result.isError).toBeFalsy();
    const { rows } = await scratch.admin.query<{ start: string }>(
      "select to_char(('0001-01-01'::timestamp at time zone 'Asia/Kolkata') at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS BC') as start",
    );
    expect(rows[0]!.start).toBe('0001-12-31 18:06:32 BC'); // 1 BC, which ISO 8601 numbers 0000
    expect(structured<Record<string, unknown>>(result)).toMatchObject({
      starts_at: '0000-12-31T18:06:32.000Z',
      rows: [],
    });
  });

  it('item 4: Kolkata in 1880 keeps the seconds of its offset (+05:21:10), echoed in UTC', async () => {
    const out = structured<Record<string, unknown>>(
      await harnesses['Asia/Kolkata']!.call('query_order_count', { start_date: '1880-06-01', end_date: '1880-06-01' }),
    );
    const { rows } = await scratch.admin.query<{ start: Date; end: Date }>(
      "select ('1880-06-01'::timestamp at time zone 'Asia/Kolkata') as start, ('1880-06-02'::timestamp at time zone 'Asia/Kolkata') as end",
    );
    expect(out).toMatchObject({ starts_at: rows[0]!.start.toISOString(), ends_before: rows[0]!.end.toISOString() });
    expect(out.starts_at).toBe('1880-05-31T18:38:50.000Z');
  });
});
