/**
 * Item 3: no figure ever adds two currencies. Orders in JPY and EUR sit beside the seed's USD orders,
 * at the edges of UTC, Kolkata and Berlin days, and every money figure of every tool is held to sums
 * computed per currency straight from the sales tables; so are the rollups, after writes that move an
 * order from one currency to another, and after the migration that keys them by currency is undone.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates } from '../../queries/index.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { silentLogger } from '../../src/lib/logger.js';
import { createRegistry } from '../../src/registry/index.js';
import type { SalesRow } from '../support/sales-data.js';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { makeRollupDesign } from '../support/rollup-designs.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';
import { salesPack } from '../../pack/index.js';

let scratch: ScratchDatabase;
const harnesses = new Map<string, Harness>();

// A whole-hour zone read from the hourly rollup, a half-hour one read from the orders, and one
// whose days start at 23:00Z or 22:00Z, so that the daily rollups serve its middle and the orders its edges.
const ZONES = ['UTC', 'Asia/Kolkata', 'Europe/Berlin'];
const RANGES = [
  { start_date: '2025-03-01', end_date: '2025-03-31' },
  { start_date: '2025-03-10', end_date: '2025-03-10' },
  { start_date: '2025-03-10', end_date: '2025-03-11' },
];
const GROUPINGS = ['day', 'week', 'month', 'region', 'category'] as const;

type Item = [product: number, quantity: number, unitPrice: string];
/** Hand-made orders in other currencies, each total the sum of its items. */
const ORDERS: Array<[id: number, customer: number, status: string, at: string, currency: string, items: Item[]]> = [
  // The case: one JPY order of 150,000 on a day of USD sales.
  [
    990001,
    1,
    'paid',
    '2025-03-10T12:00:00Z',
    'JPY',
    [
      [1, 2, '50000'],
      [2, 1, '50000'],
    ],
  ],
  [990002, 2, 'shipped', '2025-03-10T23:30:00Z', 'JPY', [[3, 3, '1000']]], // Berlin: 00:30 on the 11th
  [990003, 3, 'cancelled', '2025-03-10T13:00:00Z', 'JPY', [[1, 1, '99999']]], // not revenue
  [990004, 1, 'paid', '2025-03-10T20:00:00Z', 'EUR', [[1, 1, '42.50']]], // Kolkata: 01:30 on the 11th
  [
    990005,
    4,
    'paid',
    '2025-03-11T00:15:00Z',
    'EUR',
    [
      [4, 1, '19.99'],
      [1, 2, '0.25'],
    ],
  ],
  [990006, 5, 'refunded', '2025-03-20T18:45:00Z', 'EUR', [[2, 1, '10.00']]],
  [990007, 2, 'paid', '2025-03-31T22:30:00Z', 'EUR', [[5, 4, '25.00']]], // Berlin: 1 April
  [990008, 6, 'shipped', '2025-03-01T00:10:00Z', 'EUR', [[3, 1, '7.77']]],
  [990009, 3, 'pending', '2025-02-28T20:00:00Z', 'EUR', [[6, 1, '3.00']]], // Kolkata: 1 March
];

beforeAll(async () => {
  scratch = await createScratchDatabase('currency_check', { orders: 8000, until: '2025-04-30' });
  for (const timeZone of ZONES) harnesses.set(timeZone, await startHarness({ readerUrl: scratch.readerUrl, timeZone }));
});
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch?.drop();
});

async function addOrders(): Promise<void> {
  for (const [id, customer, status, at, currency, items] of ORDERS) {
    const total = items.reduce((sum, [, quantity, price]) => sum + quantity * Math.round(Number(price) * 100), 0);
    await scratch.admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
      [id, customer, status, at, currency, (total / 100).toFixed(2)],
    );
    for (const [product, quantity, price] of items) {
      await scratch.admin.query(
        'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, $2, $3, $4)',
        [id, product, quantity, price],
      );
    }
  }
}

type Range = { start_date: string; end_date: string };
/** Orders placed in the range, read in the zone by PostgreSQL: $1 start, $2 end, $3 zone. */
const IN_RANGE = `o.ordered_at >= ($1::timestamp at time zone $3) and o.ordered_at < (($2::date + 1)::timestamp at time zone $3)`;
const NET = `o.status not in ('cancelled', 'refunded')`;

/** query_sales's rows, summed per group and currency from the sales tables. */
async function expectedSales(range: Range, timeZone: string, groupBy: (typeof GROUPINGS)[number]): Promise<SalesRow[]> {
  const byPeriod = groupBy !== 'region' && groupBy !== 'category';
  const params: string[] = [range.start_date, range.end_date, timeZone];
  let query: string;
  if (groupBy === 'category') {
    query = `select p.category as key, o.currency, count(distinct o.id)::text as n,
                    round(sum(i.quantity * i.unit_price), 2)::text as revenue,
                    round(sum(i.quantity * i.unit_price) / count(distinct o.id), 2)::text as avg
               from sales.orders o join sales.order_items i on i.order_id = o.id
                    join sales.products p on p.id = i.product_id
              where ${IN_RANGE} and ${NET} group by 1, 2`;
  } else {
    if (byPeriod) params.push(groupBy);
    const key = byPeriod ? `to_char(date_trunc($4, o.ordered_at at time zone $3), 'YYYY-MM-DD')` : 'c.region';
    // The last day of the period, for the rows of a period the range covers in part.
    const end = byPeriod
      ? `max(to_char(date_trunc($4, o.ordered_at at time zone $3) + ('1 ' || $4)::interval - interval '1 day', 'YYYY-MM-DD'))`
      : 'null';
    query = `select ${key} as key, o.currency, count(*)::text as n, round(sum(o.total_amount), 2)::text as revenue,
                    round(sum(o.total_amount) / count(*), 2)::text as avg, ${end} as period_end
               from sales.orders o join sales.customers c on c.id = o.customer_id
              where ${IN_RANGE} and ${NET} group by 1, 2`;
  }
  const { rows } = await scratch.admin.query<{
    key: string;
    currency: string;
    n: string;
    revenue: string;
    avg: string;
    period_end?: string | null;
  }>(query, params);
  const name = byPeriod ? 'period' : groupBy;
  const part = (first: string, last: string | null | undefined) => {
    if (!last) return {};
    const [from, to] = [
      first < range.start_date ? range.start_date : first,
      last > range.end_date ? range.end_date : last,
    ];
    return from === first && to === last ? {} : { partial: true, first_day: from, last_day: to };
  };
  return rows
    .map((r) => ({
      [name]: r.key,
      ...part(r.key, r.period_end),
      currency: r.currency,
      order_count: Number(r.n),
      revenue: Number(r.revenue),
      avg_order_value: Number(r.avg),
    }))
    .sort((a, b) => {
      const [ka, kb] = [(a as Record<string, unknown>)[name] as string, (b as Record<string, unknown>)[name] as string];
      // Periods in time order, each with its currencies; regions and categories currency by currency.
      if (byPeriod) return compare(ka, kb) || compare(a.currency, b.currency);
      return compare(a.currency, b.currency) || b.revenue - a.revenue || compare(ka, kb);
    }) as SalesRow[];
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

interface ProductRow {
  sku: string;
  name: string;
  category: string;
  currency: string;
  units: number;
  revenue: number;
}

/** Every product's net units and revenue per currency, from the items. */
async function productsPerCurrency(range: Range, timeZone: string): Promise<ProductRow[]> {
  const { rows } = await scratch.admin.query<{
    sku: string;
    name: string;
    category: string;
    currency: string;
    units: string;
    revenue: string;
  }>(
    `select p.sku, p.name, p.category, o.currency, sum(i.quantity)::text as units,
            round(sum(i.quantity * i.unit_price), 2)::text as revenue
       from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
      where ${IN_RANGE} and ${NET}
      group by p.sku, p.name, p.category, o.currency`,
    [range.start_date, range.end_date, timeZone],
  );
  return rows.map((r) => ({ ...r, units: Number(r.units), revenue: Number(r.revenue) }));
}

/** The top `limit` of each currency, currencies in alphabetical order, and whether anything was left out. */
function expectedTop(
  products: ProductRow[],
  metric: 'revenue' | 'units',
  limit: number,
): { rows: ProductRow[]; truncated: boolean } {
  const other = metric === 'revenue' ? 'units' : 'revenue';
  const currencies = [...new Set(products.map((p) => p.currency))].sort(compare);
  const ranked = currencies.map((currency) =>
    products
      .filter((p) => p.currency === currency)
      .sort((a, b) => b[metric] - a[metric] || b[other] - a[other] || compare(a.sku, b.sku)),
  );
  const rows = ranked.flatMap((list) => list.slice(0, limit));
  return { rows: rows.slice(0, 100), truncated: rows.length > 100 || ranked.some((list) => list.length > limit) };
}

async function call<T>(timeZone: string, tool: string, args: Record<string, unknown>): Promise<T> {
  return structured<T>(await harnesses.get(timeZone)!.call(tool, args));
}

/** Every money figure of every tool, in every zone and range, against the per-currency sums. */
async function checkEveryTool(): Promise<void> {
  for (const timeZone of ZONES) {
    for (const range of RANGES) {
      const where = `${timeZone} ${range.start_date}..${range.end_date}`;
      for (const group_by of GROUPINGS) {
        const expected = await expectedSales(range, timeZone, group_by);
        expect(new Set(expected.map((r) => r.currency)).size, `${where} ${group_by}`).toBeGreaterThan(1);
        const out = await call<{ rows: SalesRow[]; truncated: boolean }>(timeZone, 'query_sales', {
          ...range,
          group_by,
        });
        expect(out.rows, `${where} ${group_by}`).toEqual(expected);
        expect(out.truncated).toBeUndefined(); // not cut: no flag
      }
      const products = await productsPerCurrency(range, timeZone);
      for (const metric of ['revenue', 'units'] as const) {
        for (const limit of [1, 3, 10, 100]) {
          const expected = expectedTop(products, metric, limit);
          const out = await call<{ rows: ProductRow[]; row_count: number; truncated: boolean }>(
            timeZone,
            'query_top_products',
            { ...range, metric, limit },
          );
          expect(out.rows, `${where} ${metric} ${limit}`).toEqual(expected.rows);
          expect(out.row_count).toBe(expected.rows.length);
          expect(out.truncated ?? false, `${where} ${metric} ${limit}`).toBe(expected.truncated);
          if (!expected.truncated) expect(out.truncated).toBeUndefined();
        }
      }
      const { rows: orders } = await scratch.admin.query<{ status: string; currency: string; total: string }>(
        `select o.status, o.currency, o.total_amount::text as total from sales.orders o
          where ${IN_RANGE} order by o.ordered_at desc, o.id desc limit 100`,
        [range.start_date, range.end_date, timeZone],
      );
      const recent = await call<{ rows: Array<{ status: string; currency: string; total_amount: number }> }>(
        timeZone,
        'query_recent_orders',
        { ...range, limit: 100 },
      );
      expect(
        recent.rows.map((r) => [r.status, r.currency, r.total_amount]),
        where,
      ).toEqual(orders.map((o) => [o.status, o.currency, Number(o.total)]));
      const { rows: counted } = await scratch.admin.query<{ n: number }>(
        `select count(*)::int as n from sales.orders o where ${IN_RANGE}`,
        [range.start_date, range.end_date, timeZone],
      );
      expect((await call<{ order_count: number }>(timeZone, 'query_order_count', range)).order_count).toBe(
        counted[0]!.n,
      );
    }
  }
}

interface RollupCheck {
  readonly table: string;
  /** The rollup's rows that hold anything, keyed and sorted. */
  readonly rows: string;
  /** The same sums straight from the sales tables. */
  readonly fromSales: string;
}

const ROLLUP_CHECKS: readonly RollupCheck[] = [
  {
    table: 'order_hours',
    rows: `select hour::text as at, status, currency::text, order_count::text as n, total_amount::text as amount
             from sales.order_hours where order_count <> 0 or total_amount <> 0 order by 1, 2, 3`,
    fromSales: `select date_trunc('hour', ordered_at, 'UTC')::text as at, status, currency::text,
                       count(*)::text as n, sum(total_amount)::text as amount
                  from sales.orders group by 1, 2, 3 order by 1, 2, 3`,
  },
  {
    table: 'product_days',
    rows: `select day::text as at, product_id::text as key, status, currency::text, units::text as n, revenue::text as amount
             from sales.product_days where units <> 0 or revenue <> 0 order by 1, 2, 3, 4`,
    fromSales: `select date_trunc('day', o.ordered_at, 'UTC')::text as at, i.product_id::text as key, o.status,
                       o.currency::text, sum(i.quantity)::text as n, sum(i.quantity * i.unit_price)::text as amount
                  from sales.orders o join sales.order_items i on i.order_id = o.id
                 group by 1, 2, 3, 4 order by 1, 2, 3, 4`,
  },
  {
    table: 'region_days',
    rows: `select day::text as at, region as key, status, currency::text, order_count::text as n, total_amount::text as amount
             from sales.region_days where order_count <> 0 or total_amount <> 0 order by 1, 2, 3, 4`,
    fromSales: `select date_trunc('day', o.ordered_at, 'UTC')::text as at, c.region as key, o.status, o.currency::text,
                       count(*)::text as n, sum(o.total_amount)::text as amount
                  from sales.orders o join sales.customers c on c.id = o.customer_id
                 group by 1, 2, 3, 4 order by 1, 2, 3, 4`,
  },
  {
    table: 'category_days',
    rows: `select day::text as at, category as key, status, currency::text, order_count::text as n, revenue::text as amount
             from sales.category_days where order_count <> 0 or revenue <> 0 order by 1, 2, 3, 4`,
    fromSales: `select date_trunc('day', o.ordered_at, 'UTC')::text as at, p.category as key, o.status, o.currency::text,
                       count(distinct o.id)::text as n, sum(i.quantity * i.unit_price)::text as amount
                  from sales.orders o join sales.order_items i on i.order_id = o.id
                       join sales.products p on p.id = i.product_id
                 group by 1, 2, 3, 4 order by 1, 2, 3, 4`,
  },
];

/** Each rollup equals the per-currency sums of the sales tables, and a rebuild changes nothing. */
async function checkRollups(client: pg.Client = scratch.admin): Promise<void> {
  for (const { table, rows, fromSales } of ROLLUP_CHECKS) {
    const kept = (await client.query(rows)).rows;
    expect(kept.length, table).toBeGreaterThan(0);
    expect(kept, `${table} against the sales tables`).toEqual((await client.query(fromSales)).rows);
    await client.query(`select sales.${table}_rebuild()`);
    expect((await client.query(rows)).rows, `${table} against its rebuild`).toEqual(kept);
  }
}

describe('item 3: money figures never add two currencies', () => {
  it('item 3: the seed loads its rollups keyed by currency, as a rebuild makes them', async () => {
    const { rows } = await scratch.admin.query<{ currency: string }>(
      'select distinct currency::text from sales.orders',
    );
    expect(rows).toEqual([{ currency: 'USD' }]);
    await checkRollups();
  });

  it('item 3: a JPY order of 150,000 beside a day of USD sales is a row of its own, not added to the dollars', async () => {
    await addOrders();
    const day = { start_date: '2025-03-10', end_date: '2025-03-10' };
    const { rows } = await scratch.admin.query<{ usd: string }>(
      `select round(sum(total_amount), 2)::text as usd from sales.orders
        where ordered_at >= '2025-03-10T00:00:00Z' and ordered_at < '2025-03-11T00:00:00Z'
          and currency = 'USD' and status not in ('cancelled', 'refunded')`,
    );
    const out = await call<{ rows: SalesRow[] }>('UTC', 'query_sales', { ...day, group_by: 'day' });
    expect(out.rows.map((r) => [r.period, r.currency, r.revenue])).toEqual([
      ['2025-03-10', 'EUR', 42.5],
      ['2025-03-10', 'JPY', 150_000 + 3_000], // the cancelled JPY order is not revenue
      ['2025-03-10', 'USD', Number(rows[0]!.usd)],
    ]);
  });

  it('item 3: every money figure of every tool, every group_by and both rankings, in UTC, Kolkata and Berlin', async () => {
    await checkEveryTool();
  });

  it('item 3: top products rank each currency on its own; limit counts per currency', async () => {
    const range = { start_date: '2025-03-10', end_date: '2025-03-11' };
    const out = await call<{ rows: ProductRow[]; truncated: boolean }>('UTC', 'query_top_products', {
      ...range,
      limit: 2,
    });
    const perCurrency: Record<string, ProductRow[]> = {};
    for (const row of out.rows) (perCurrency[row.currency] ??= []).push(row);
    expect(out.rows.map((r) => r.currency)).toEqual(['EUR', 'EUR', 'JPY', 'JPY', 'USD', 'USD']);
    // Product 1 sold 2 units for 100,000 JPY and 1 + 2 units for 43.00 EUR: a row in each, never one sum.
    const sku1 = (await scratch.admin.query<{ sku: string }>('select sku from sales.products where id = 1')).rows[0]!
      .sku;
    expect(perCurrency.JPY![0]).toMatchObject({ sku: sku1, units: 2, revenue: 100_000 });
    expect(perCurrency.EUR![0]).toMatchObject({ sku: sku1, units: 3, revenue: 43 });
    expect(perCurrency.EUR).toHaveLength(2); // EUR sold 2 products that day: nothing left out of it
    expect(out.truncated).toBe(true); // but USD sold more than 2
  });

  it('item 3: the rollups follow orders that change currency, and equal a rebuild per currency', async () => {
    // A USD order with items becomes EUR; the 150,000 JPY order becomes USD and moves a day;
    // one order changes currency and status at once, another only its items; a customer with orders
    // in several currencies moves region; an EUR order goes.
    const { rows } = await scratch.admin.query<{ id: string }>(
      `select o.id::text from sales.orders o where o.currency = 'USD' and o.status = 'paid'
          and o.ordered_at >= '2025-03-10T01:00:00Z' and exists (select 1 from sales.order_items i where i.order_id = o.id)
        order by o.id limit 2`,
    );
    await scratch.admin.query("update sales.orders set currency = 'EUR' where id = $1", [rows[0]!.id]);
    await scratch.admin.query(
      "update sales.orders set currency = 'USD', ordered_at = ordered_at + interval '1 day' where id = 990001",
    );
    await scratch.admin.query("update sales.orders set currency = 'JPY', status = 'shipped' where id = $1", [
      rows[1]!.id,
    ]);
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values (990002, 7, 1, 500)',
    );
    await scratch.admin.query('update sales.orders set total_amount = total_amount + 500 where id = 990002');
    await scratch.admin.query(
      "update sales.customers set region = case when region = 'Europe' then 'Africa' else 'Europe' end where id = 2",
    );
    await scratch.admin.query('delete from sales.orders where id = 990005');
    await scratch.admin.query("update sales.orders set currency = 'GBP' where id = 990004");
    await checkRollups();
    await checkEveryTool();
  });
});

describe('item 3: a database whose rollups summed across currencies, as before 0010', () => {
  let own: ScratchDatabase;

  beforeAll(async () => {
    own = await createScratchDatabase('currency_migration', undefined, '0009-rollup-isolation');
    await makeRollupDesign(own.admin, '0009-rollup-isolation');
    await own.admin.query(
      `insert into sales.customers (id, name, email, phone, region) values
         (1, 'A B', 'a@example.com', '+1 555 000-0001', 'north'), (2, 'C D', 'c@example.com', '+1 555 000-0002', 'south');
       insert into sales.products (id, sku, name, category, unit_price) values (1, 'P-1', 'One', 'Home', 10)`,
    );
  });
  afterAll(async () => {
    await own?.drop();
  });

  it('item 3: sums across currencies through its own triggers until migrated, then keys every rollup by currency', async () => {
    await own.admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount)
       values (990101, 1, 'paid', '2025-04-01T10:00:00Z', 'JPY', 150000), (990102, 1, 'paid', '2025-04-01T10:30:00Z', 'USD', 10),
              (990103, 2, 'paid', '2025-04-01T10:45:00Z', 'EUR', 5)`,
    );
    await own.admin.query(
      `insert into sales.order_items (order_id, product_id, quantity, unit_price)
       values (990101, 1, 1, 150000), (990102, 1, 1, 10), (990103, 1, 1, 5)`,
    );
    const { rows: columns } = await own.admin.query<{ n: number }>(
      `select count(*)::int as n from information_schema.columns
        where table_schema in ('sales', 'reporting') and column_name = 'currency'
          and table_name in ('order_hours', 'product_days', 'region_days')`,
    );
    expect(columns[0]!.n).toBe(0);
    const { rows: hour } = await own.admin.query<{ n: string; amount: string }>(
      `select order_count::text as n, total_amount::text as amount from sales.order_hours
        where hour = '2025-04-01T10:00:00Z' and status = 'paid'`,
    );
    expect(hour).toEqual([{ n: '3', amount: '150015.00' }]); // the old rollups did add the currencies up

    await migrateToLatest(own.adminUrl, salesPack, DEFAULT_READER_ROLE, silentLogger);
    await own.admin.query("update sales.orders set currency = 'GBP' where id = 990102");
    await checkRollups(own.admin);
    const reader = new pg.Client({ connectionString: own.readerUrl });
    await reader.connect();
    try {
      const { rows } = await reader.query<{ currency: string; amount: string }>(
        `select currency::text, total_amount::text as amount from reporting.order_hours
          where hour = '2025-04-01T10:00:00Z' order by 1`,
      );
      expect(rows).toEqual([
        { currency: 'EUR', amount: '5.00' },
        { currency: 'GBP', amount: '10.00' },
        { currency: 'JPY', amount: '150000.00' },
      ]);
    } finally {
      await reader.end();
    }
  });
});

describe('item 3: the answer schemas say which currency each money figure is in', () => {
  // Said once for every tool, in the server's instructions, not on each field of each output schema.
  // The listing gives each answer as an object; the whole answer schema, the public
  // contract's, types every column.
  it('item 3: every money column sits beside a required currency field, and the instructions say money is in it', () => {
    const { client } = harnesses.get('UTC')!;
    expect(client.getInstructions()).toContain('Money is in the currency (ISO 4217) of its row or total');
    const { answerSchemas } = createRegistry(templates);
    let checked = 0;
    for (const template of templates) {
      const money = Object.entries(template.columns).filter(([, column]) => column.type === 'money');
      if (money.length === 0) continue;
      const schema = answerSchemas.get(template.name) as unknown as {
        properties: { rows: { items: { properties: Record<string, { type?: unknown }>; required: string[] } } };
      };
      const row = schema.properties.rows.items;
      // query_metrics' rows are keyed by the metrics asked for, so its schema lists no fields:
      // test/queries/query-metrics.test.ts holds the currency beside each of its money figures.
      if (template.name === 'query_metrics' && row.properties === undefined) continue;
      expect(row.required, template.name).toContain('currency');
      expect(row.properties.currency!.type, template.name).toBe('string');
      for (const [name] of money) {
        expect([row.properties[name]!.type].flat(), `${template.name}.${name}`).toContain('number');
        checked++;
      }
    }
    expect(checked).toBe(4); // revenue and avg_order_value, revenue, total_amount
  });
});
