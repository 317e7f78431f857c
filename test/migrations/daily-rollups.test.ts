/**
 * The daily rollups (products, regions, categories) follow every change to the rows they sum, in the
 * same transaction; and the tools that read them give exactly what the raw rows give, in every zone,
 * where the whole UTC days come from a rollup and the hours around them from the orders and items.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { templates } from '../../queries/index.js';
import { createCompiler } from '../../src/db/connect.js';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { expectEmptiedBy, expectRebuildKeeps, expectRolledBack, type CheckedRollup } from '../support/rollup-checks.js';
import type { SalesRow } from '../support/sales-data.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
const harnesses = new Map<string, Harness>();

// Whole-hour, half-hour and 45-minute offsets; Berlin and Lord Howe change their clocks inside the ranges.
const ZONES = ['UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham', 'Australia/Lord_Howe'];
const RANGES = [
  { start_date: '2025-03-01', end_date: '2025-03-31' },
  { start_date: '2025-03-30', end_date: '2025-03-30' }, // 23 hours long in Berlin
  { start_date: '2025-04-06', end_date: '2025-04-06' }, // Lord Howe leaves summer time: 24.5 hours
  { start_date: '2025-02-01', end_date: '2025-05-01' },
];

beforeAll(async () => {
  // About 27 orders a day, so that the few hours at either end of a range hold orders too.
  scratch = await createScratchDatabase('daily_rollups_check', { orders: 20_000, until: '2025-05-31' });
  for (const timeZone of ZONES) harnesses.set(timeZone, await startHarness({ readerUrl: scratch.readerUrl, timeZone }));
});
afterAll(async () => {
  for (const harness of harnesses.values()) await harness.close();
  await scratch.drop();
});

/**
 * That a tool reads the whole UTC days of a range from a rollup: a row of it changed behind the
 * triggers (`change`) shows in the answer (`check`), and the rollup's rebuild takes the answer back.
 */
async function readsTheRollup<Answer>(
  rollup: string,
  answer: () => Promise<Answer>,
  change: (before: Answer) => Promise<unknown>,
  check: (before: Answer, after: Answer) => void,
): Promise<void> {
  const before = await answer();
  await change(before);
  try {
    check(before, await answer());
  } finally {
    await scratch.admin.query(`select sales.${rollup}_rebuild()`);
  }
  expect(await answer()).toEqual(before);
}

const march10 = { start_date: '2025-03-10', end_date: '2025-03-10' };

interface Row {
  day: string;
  product_id: string;
  status: string;
  units: string;
  revenue: string;
}

/** The rollup's rows, and the same sums straight from the items, both sorted. */
async function rollupAndItems(): Promise<{ rollup: Row[]; items: Row[] }> {
  const rollup = await scratch.admin.query<Row>(
    `select day::text, product_id::text, status, units::text, revenue::text from sales.product_days
      where units <> 0 or revenue <> 0 order by 1, 2, 3`,
  );
  const items = await scratch.admin.query<Row>(
    `select date_trunc('day', o.ordered_at, 'UTC')::text as day, i.product_id::text, o.status,
            sum(i.quantity)::text as units, sum(i.quantity * i.unit_price)::text as revenue
       from sales.orders o join sales.order_items i on i.order_id = o.id
      group by 1, 2, 3 order by 1, 2, 3`,
  );
  return { rollup: rollup.rows, items: items.rows };
}

const productRollup: CheckedRollup<Awaited<ReturnType<typeof rollupAndItems>>> = {
  admin: () => scratch.admin,
  state: rollupAndItems,
};

interface Product {
  sku: string;
  units: number;
  revenue: number;
}

/** Top products by revenue computed from the items, with the range read in the zone by PostgreSQL. */
async function fromItems(range: { start_date: string; end_date: string }, timeZone: string): Promise<Product[]> {
  const { rows } = await scratch.admin.query<{ sku: string; units: string; revenue: string }>(
    `select p.sku, sum(i.quantity)::text as units, round(sum(i.quantity * i.unit_price), 2)::text as revenue
       from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
      where o.ordered_at >= ($1::timestamp at time zone $3)
        and o.ordered_at < (($2::date + 1)::timestamp at time zone $3)
        and o.status not in ('cancelled', 'refunded')
      group by p.sku order by sum(i.quantity * i.unit_price) desc, sum(i.quantity) desc, p.sku`,
    [range.start_date, range.end_date, timeZone],
  );
  return rows.map((r) => ({ sku: r.sku, units: Number(r.units), revenue: Number(r.revenue) }));
}

async function served(range: { start_date: string; end_date: string }, timeZone: string): Promise<Product[]> {
  const result = structured<{ rows: Product[] }>(
    await harnesses.get(timeZone)!.call('query_top_products', { ...range, limit: 100 }),
  );
  return result.rows.map((r) => ({ sku: r.sku, units: r.units, revenue: r.revenue }));
}

describe('top products through the daily rollup', () => {
  for (const timeZone of ZONES) {
    it(`give what the items give, in ${timeZone}`, async () => {
      for (const range of RANGES) {
        const expected = await fromItems(range, timeZone);
        expect(expected.length, JSON.stringify(range)).toBeGreaterThan(0);
        expect(await served(range, timeZone), `${timeZone} ${JSON.stringify(range)}`).toEqual(expected.slice(0, 100));
      }
    });
  }

  it('read whole UTC days from the rollup: a rollup changed behind the triggers shows in the answer', async () => {
    await readsTheRollup(
      'product_days',
      () => served(march10, 'UTC'),
      ([top]) =>
        scratch.admin.query(
          `update sales.product_days set units = units + 1000
            where day = '2025-03-10T00:00:00Z' and product_id = (select id from sales.products where sku = $1) and status = 'paid'`,
          [top!.sku],
        ),
      ([top], after) => expect(after.find((p) => p.sku === top!.sku)?.units).toBe(top!.units + 1000),
    );
  });
});

/**
 * The category rollup's non-empty rows, and each order's items per category (which its triggers keep
 * beside it), against the same figures straight from the items, an order counted once per category it
 * holds items of: the rows found on one side only (a few, so that a failure reads quickly).
 */
async function categoryDifferences(): Promise<string[]> {
  const { rows } = await scratch.admin.query<{ row: string }>(
    `with kept as (
       select 'category_days' as what, day::text || ' ' || category || ' ' || status || ' ' || currency as key,
              order_count::text as n, revenue::text as amount
         from sales.category_days where order_count <> 0 or revenue <> 0
       union all
       select 'order_categories', order_id::text || ' ' || category, items::text, revenue::text
         from sales.order_categories
     ), items as (
       select 'category_days' as what,
              date_trunc('day', o.ordered_at, 'UTC')::text || ' ' || p.category || ' ' || o.status || ' ' || o.currency as key,
              count(distinct o.id)::text as n, sum(i.quantity * i.unit_price)::text as amount
         from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
        group by 2
       union all
       select 'order_categories', i.order_id::text || ' ' || p.category, count(*)::text, sum(i.quantity * i.unit_price)::text
         from sales.order_items i join sales.products p on p.id = i.product_id
        group by 2
     )
     select row from (
       select 'kept only: ' || k.what || ' ' || k.key || ' ' || k.n || ' ' || k.amount as row
         from (select * from kept except all select * from items) k
       union all
       select 'items only: ' || i.what || ' ' || i.key || ' ' || i.n || ' ' || i.amount
         from (select * from items except all select * from kept) i
     ) d order by 1 limit 20`,
  );
  return rows.map((r) => r.row);
}

/** A fingerprint of the category rollup and of each order's items per category, to tell a change. */
async function categoryState(): Promise<{ rollup: string; kept: string; rows: number }> {
  const { rows } = await scratch.admin.query<{ rollup: string; kept: string; rows: number }>(
    `select (select md5(string_agg(d::text, ',' order by day, category, status, currency))
               from sales.category_days d where order_count <> 0 or revenue <> 0) as rollup,
            (select md5(string_agg(c::text, ',' order by order_id, category)) from sales.order_categories c) as kept,
            (select count(*)::int from sales.category_days where order_count <> 0) as rows`,
  );
  return rows[0]!;
}

const categoryRollup: CheckedRollup<Awaited<ReturnType<typeof categoryState>>> = {
  admin: () => scratch.admin,
  state: categoryState,
};

async function expectCategoryRollupExact(): Promise<void> {
  expect(await categoryDifferences()).toEqual([]);
}

/** query_sales's rows by category, as its SQL returns them (text), before the registry shapes them. */
interface CategorySales {
  group_key: string;
  currency: string;
  order_count: string;
  revenue: string;
  avg_order_value: string;
}

/**
 * Net sales by category computed from the items, as query_sales computed them before the rollup (the
 * same expressions, so the same text), with the range read in the zone by PostgreSQL.
 */
async function categoriesFromItems(
  range: { start_date: string; end_date: string },
  timeZone: string,
): Promise<CategorySales[]> {
  const { rows } = await scratch.admin.query<CategorySales>(
    `select p.category as group_key, o.currency, count(distinct o.id)::text as order_count,
            round(sum(i.quantity * i.unit_price), 2)::text as revenue,
            round(sum(i.quantity * i.unit_price) / count(distinct o.id), 2)::text as avg_order_value
       from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
      where o.ordered_at >= ($1::timestamp at time zone $3)
        and o.ordered_at < (($2::date + 1)::timestamp at time zone $3)
        and o.status not in ('cancelled', 'refunded')
      group by p.category, o.currency order by o.currency, sum(i.quantity * i.unit_price) desc, p.category`,
    [range.start_date, range.end_date, timeZone],
  );
  return rows;
}

/** The template's own SQL for the range and zone, run through the admin connection: the text it yields. */
async function categoriesCompiled(
  range: { start_date: string; end_date: string },
  timeZone: string,
): Promise<CategorySales[]> {
  const template = templates.find((t) => t.name === 'query_sales')!;
  const args = template.input.parse({ ...range, group_by: 'category' });
  const { sql, parameters } = template.query(createCompiler(), args, { timeZone }).limit(101).compile();
  return (await scratch.admin.query<CategorySales>(sql, parameters as unknown[])).rows;
}

async function categoriesServed(
  range: { start_date: string; end_date: string },
  timeZone: string,
): Promise<SalesRow[]> {
  return structured<{ rows: SalesRow[] }>(
    await harnesses.get(timeZone)!.call('query_sales', { ...range, group_by: 'category' }),
  ).rows;
}

const asServed = (rows: CategorySales[]): SalesRow[] =>
  rows.map((r) => ({
    category: r.group_key,
    currency: r.currency,
    order_count: Number(r.order_count),
    revenue: Number(r.revenue),
    avg_order_value: Number(r.avg_order_value),
  }));

describe('sales by category through the daily rollup', () => {
  for (const timeZone of ZONES) {
    it(`give what the items give, to the digit, in ${timeZone}`, async () => {
      for (const range of RANGES) {
        const expected = await categoriesFromItems(range, timeZone);
        expect(expected.length, JSON.stringify(range)).toBeGreaterThan(0);
        const where = `${timeZone} ${JSON.stringify(range)}`;
        expect(await categoriesCompiled(range, timeZone), where).toEqual(expected);
        expect(await categoriesServed(range, timeZone), where).toEqual(asServed(expected));
      }
    });
  }

  it('read whole UTC days from the rollup: a rollup changed behind the triggers shows in the answer', async () => {
    await readsTheRollup(
      'category_days',
      () => categoriesServed(march10, 'UTC'),
      ([top]) =>
        scratch.admin.query(
          `update sales.category_days set order_count = order_count + 1000
            where day = '2025-03-10T00:00:00Z' and category = $1 and currency = $2 and status = (
              select status from sales.category_days where day = '2025-03-10T00:00:00Z' and category = $1
                 and currency = $2 and status not in ('cancelled', 'refunded') limit 1)`,
          [top!.category, top!.currency],
        ),
      ([top], after) =>
        expect(after.find((r) => r.category === top!.category)?.order_count).toBe(top!.order_count + 1000),
    );
  });
});

describe('the daily category rollup', () => {
  it('agrees with the items after the seed, where orders hold several items of one category', async () => {
    const { rows } = await scratch.admin.query<{ n: number }>(
      `select count(*)::int as n from (select 1 from sales.order_items i join sales.products p on p.id = i.product_id
        group by i.order_id, p.category having count(*) > 1) twice`,
    );
    expect(rows[0]!.n).toBeGreaterThan(100);
    expect((await categoryState()).rows).toBeGreaterThan(1000);
    await expectCategoryRollupExact();
  });

  it('counts an order once per category, and keeps it counted while an item of the category remains', async () => {
    // Products 1 and 9 share a category (the seed deals them out eight categories round), product 2 has another.
    const { rows: products } = await scratch.admin.query<{ id: string; category: string }>(
      'select id::text, category from sales.products where id in (1, 2, 9) order by id',
    );
    expect(products[0]!.category).toBe(products[2]!.category);
    expect(products[1]!.category).not.toBe(products[0]!.category);
    const category = products[0]!.category;
    const cell = async (): Promise<{ n: string; revenue: string } | undefined> =>
      (
        await scratch.admin.query<{ n: string; revenue: string }>(
          `select order_count::text as n, revenue::text from sales.category_days
            where day = '2031-01-01T00:00:00Z' and category = $1 and status = 'paid' and currency = 'USD'`,
          [category],
        )
      ).rows[0];
    await scratch.admin.query(
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (930001, 1, 'paid', '2031-01-01T10:00:00Z', 0)",
    );
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values (930001, 1, 2, 10.00), (930001, 9, 1, 5.00), (930001, 2, 1, 1.00)',
    );
    expect(await cell()).toEqual({ n: '1', revenue: '25.00' });
    await scratch.admin.query('delete from sales.order_items where order_id = 930001 and product_id = 1');
    expect(await cell()).toEqual({ n: '1', revenue: '5.00' });
    await scratch.admin.query('delete from sales.order_items where order_id = 930001 and product_id = 9');
    expect(await cell()).toEqual({ n: '0', revenue: '0.00' });
    // Two items of the category taken out by one statement: the order leaves the count once.
    await scratch.admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values (930001, 1, 1, 3.00), (930001, 9, 1, 4.00)',
    );
    expect(await cell()).toEqual({ n: '1', revenue: '7.00' });
    await scratch.admin.query('delete from sales.order_items where order_id = 930001 and product_id in (1, 9)');
    expect(await cell()).toEqual({ n: '0', revenue: '0.00' });
    await scratch.admin.query('delete from sales.orders where id = 930001');
    await expectCategoryRollupExact();
  });

  it('follows items added, changed, moved and deleted, orders that change day or status or go, and products that change category', async () => {
    const order = (id: number, status: string, at: string): string => `(${id}, 1, '${status}', '${at}', 0)`;
    await scratch.admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values
        ${order(930002, 'paid', '2025-03-10T23:59:59Z')}, ${order(930003, 'pending', '2025-03-11T00:00:00Z')}`,
    );
    await scratch.admin.query(
      `insert into sales.order_items (order_id, product_id, quantity, unit_price) values
        (930002, 1, 2, 10.50), (930002, 9, 1, 3.33), (930002, 2, 1, 1.00), (930003, 1, 5, 10.50), (930003, 3, 1, 0.01)`,
    );
    await scratch.admin.query('update sales.order_items set quantity = 7 where order_id = 930002 and product_id = 1');
    await scratch.admin.query(
      'update sales.order_items set unit_price = 9.99 where order_id = 930003 and product_id = 1',
    );
    await scratch.admin.query('update sales.order_items set product_id = 4 where order_id = 930002 and product_id = 9');
    await scratch.admin.query(
      'update sales.order_items set order_id = 930003 where order_id = 930002 and product_id = 4',
    );
    await scratch.admin.query("update sales.orders set status = 'refunded' where id = 930002");
    await scratch.admin.query("update sales.orders set ordered_at = '2025-03-12T00:00:00Z' where id = 930003");
    // (Orders that change currency: test/queries/currency.test.ts; this file's other checks sum across currencies.)
    await scratch.admin.query(
      "update sales.orders set status = 'shipped', ordered_at = '2025-01-01T12:00:00Z' where id = 930003",
    );
    await scratch.admin.query('delete from sales.order_items where order_id = 930003 and product_id = 3');
    // A product with many orders changes category; two categories merge into one, so that orders
    // holding items of both now count once; and one product goes back to where it was.
    await scratch.admin.query("update sales.products set category = 'Stationery' where id = 5");
    const { rows } = await scratch.admin.query<{ a: string; b: string }>(
      'select (select category from sales.products where id = 1) as a, (select category from sales.products where id = 2) as b',
    );
    await scratch.admin.query('update sales.products set category = $1 where category = $2', [rows[0]!.a, rows[0]!.b]);
    await scratch.admin.query('update sales.products set category = $1 where id = 2', [rows[0]!.b]);
    // Orders deleted with their items (the foreign key cascades), and a batch touching many orders at once.
    await scratch.admin.query(
      "delete from sales.orders where id in (select id from sales.orders where status = 'shipped' and ordered_at >= '2025-03-01' order by id limit 5)",
    );
    await scratch.admin.query(
      "update sales.orders set status = 'cancelled' where id in (select id from sales.orders where status = 'paid' and ordered_at >= '2025-04-01' order by id limit 20)",
    );
    await expectCategoryRollupExact();
    // And so do the answers, in zones that read the edges from the items.
    for (const timeZone of ['Europe/Berlin', 'Asia/Kolkata']) {
      const expected = await categoriesFromItems(RANGES[0]!, timeZone);
      expect(expected.some((r) => r.group_key === 'Stationery')).toBe(true);
      expect(await categoriesServed(RANGES[0]!, timeZone), timeZone).toEqual(asServed(expected));
    }
  });

  it('is rolled back with the transaction that changed the items or a category', async () => {
    await expectRolledBack(
      categoryRollup,
      [
        "insert into sales.order_items (order_id, product_id, quantity, unit_price) select id, 150, 3, 1 from sales.orders where status = 'paid' order by id limit 10 on conflict do nothing",
        "update sales.products set category = 'Gone' where id <= 20",
      ],
      { visibleInside: true },
    );
  });

  it('can be rebuilt, and is emptied by a truncate', async () => {
    await expectRebuildKeeps(categoryRollup, 'category_days');
    // In transactions rolled back, so that the suites below keep their items.
    await expectEmptiedBy(
      categoryRollup,
      ['truncate sales.order_items', 'truncate sales.products cascade'],
      (state) => state,
      { rollup: null, kept: null, rows: 0 },
      { rolledBack: true },
    );
  });
});

describe('the daily rollups under concurrent writers and any session time zone', () => {
  /** Runs `first` in an open transaction, starts `second` on another connection, then commits `first`. */
  async function overlapping(first: string, second: string): Promise<void> {
    const other = new pg.Client({ connectionString: scratch.adminUrl });
    await other.connect();
    try {
      await scratch.admin.query('begin');
      await scratch.admin.query(first);
      const running = other.query(second); // waits for the first transaction's row lock, or not
      await new Promise((resolve) => setTimeout(resolve, 200));
      await scratch.admin.query('commit');
      await running;
    } finally {
      await other.end();
    }
  }

  it('stay exact when an order changes status while an item is added to it', async () => {
    await scratch.admin.query(
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (920001, 1, 'pending', '2025-03-15T12:00:00Z', 0)",
    );
    await overlapping(
      "update sales.orders set status = 'cancelled' where id = 920001",
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values (920001, 5, 2, 7.50)',
    );
    const { rollup, items } = await rollupAndItems();
    expect(rollup).toEqual(items);
  });

  it('stay exact when a product changes category while an item of it is added', async () => {
    await scratch.admin.query(
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (920003, 1, 'paid', '2025-03-17T12:00:00Z', 0)",
    );
    await overlapping(
      "update sales.products set category = 'Moon' where id = 6",
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values (920003, 6, 2, 7.50)',
    );
    await expectCategoryRollupExact();
    const { rows } = await scratch.admin.query<{ n: number }>(
      "select order_count::int as n from sales.category_days where day = '2025-03-17T00:00:00Z' and category = 'Moon' and status = 'paid'",
    );
    expect(rows[0]!.n).toBeGreaterThan(0);
  });

  it('let two SERIALIZABLE transactions add items of different products to different orders at once', async () => {
    // Every item's writer reads sales.products, which at 150 rows PostgreSQL reads whole: were the item
    // to write its product (rather than its row of sales.order_categories_products_touches), the later would be refused.
    await scratch.admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values
        (920004, 1, 'paid', '2025-03-18T12:00:00Z', 0), (920005, 2, 'pending', '2025-03-19T12:00:00Z', 0)`,
    );
    const other = new pg.Client({ connectionString: scratch.adminUrl });
    await other.connect();
    try {
      await scratch.admin.query('begin isolation level serializable; select 1');
      await other.query(
        'begin isolation level serializable; insert into sales.order_items values (920004, 7, 1, 1.00); commit',
      );
      await scratch.admin.query('insert into sales.order_items values (920005, 8, 1, 2.00); commit');
    } catch (err) {
      await scratch.admin.query('rollback');
      throw err;
    } finally {
      await other.end();
    }
    await expectCategoryRollupExact();
  });

  it('stay exact when a customer moves while an order is placed for them', async () => {
    await overlapping(
      "update sales.customers set region = 'Moon' where id = 2",
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (920002, 2, 'paid', '2025-03-16T12:00:00Z', 9.99)",
    );
    const { rollup, orders } = await regionRollupAndOrders();
    expect(orders.some((r) => r.region === 'Moon')).toBe(true);
    expect(rollup).toEqual(orders);
  });

  it('cut a range the same way whatever the session time zone (a pooler may drop TimeZone=UTC)', async () => {
    // Cape Verde is UTC-1: its 9 March starts at 01:00Z, while New York's clocks change that day.
    const template = templates.find((t) => t.name === 'query_top_products')!;
    const args = template.input.parse({ start_date: '2025-03-09', end_date: '2025-03-10', limit: 100 });
    const { sql, parameters } = template
      .query(createCompiler(), args, { timeZone: 'Atlantic/Cape_Verde' })
      .limit(101)
      .compile();
    const inZone = async (zone: string): Promise<unknown[]> => {
      await scratch.admin.query(`set timezone = '${zone}'`);
      return (await scratch.admin.query(sql, parameters as unknown[])).rows;
    };
    try {
      const utc = await inZone('UTC');
      expect(utc.length).toBeGreaterThan(10);
      expect(await inZone('America/New_York')).toEqual(utc);
      expect(await inZone('Pacific/Kiritimati')).toEqual(utc);
      expect(
        (utc as { sku: string; units: string; revenue: string }[]).map((r) => ({
          sku: r.sku,
          units: Number(r.units),
          revenue: Number(r.revenue),
        })),
      ).toEqual(await fromItems({ start_date: '2025-03-09', end_date: '2025-03-10' }, 'Atlantic/Cape_Verde'));
    } finally {
      await scratch.admin.query('reset timezone');
    }
  });
});

/**
 * The declared region rollups (pack/rollups.ts, made by the engine) against the same sums written here
 * from the items, their orders, customers and products: the rows found on one side only.
 */
async function regionRollupDifferences(): Promise<unknown[]> {
  const { rows } = await scratch.admin.query(
    `with kept as (
       select 'product' as rollup, region, day, product_id::text as what, status, currency,
              lines::text || ' ' || units::text as n, revenue::text as amount
         from sales.region_product_days where lines <> 0 or units <> 0 or revenue <> 0
       union all
       select 'category', region, day, category, status, currency, order_count::text, revenue::text
         from sales.region_category_days where order_count <> 0 or revenue <> 0
     ), base as (
       select 'product' as rollup, c.region, date_trunc('day', o.ordered_at, 'UTC') as day, i.product_id::text as what,
              o.status, o.currency, count(*)::text || ' ' || sum(i.quantity)::text as n,
              sum(i.quantity * i.unit_price)::text as amount
         from sales.order_items i join sales.orders o on o.id = i.order_id join sales.customers c on c.id = o.customer_id
        group by 2, 3, 4, 5, 6
       union all
       select 'category', c.region, date_trunc('day', o.ordered_at, 'UTC'), p.category, o.status, o.currency,
              count(distinct o.id)::text, sum(i.quantity * i.unit_price)::text
         from sales.order_items i join sales.orders o on o.id = i.order_id join sales.customers c on c.id = o.customer_id
         join sales.products p on p.id = i.product_id
        group by 2, 3, 4, 5, 6
     )
     (select 'kept only' as side, * from kept except all select 'kept only', * from base)
     union all (select 'base only', * from base except all select 'base only', * from kept)`,
  );
  return rows;
}

describe('the declared region rollups (region_product_days, region_category_days)', () => {
  it('agree with the items after the writes of the category suites above: items, orders, products that change category', async () => {
    const { rows } = await scratch.admin.query<{ products: number; categories: number }>(
      `select (select count(*)::int from sales.region_product_days) as products,
              (select count(*)::int from sales.region_category_days) as categories`,
    );
    expect(rows[0]!.products).toBeGreaterThan(1000);
    expect(rows[0]!.categories).toBeGreaterThan(1000);
    expect(await regionRollupDifferences()).toEqual([]);
  });

  it('follow a customer with many orders who moves region, and an order that moves to another customer', async () => {
    const { rows } = await scratch.admin.query<{ id: string }>(
      'select customer_id::text as id from sales.orders group by 1 order by count(*) desc, 1 limit 1',
    );
    await scratch.admin.query("update sales.customers set region = 'Antarctica' where id = $1", [rows[0]!.id]);
    await scratch.admin.query(
      'update sales.orders set customer_id = $1 where id = (select min(id) from sales.orders where customer_id <> $1)',
      [rows[0]!.id],
    );
    expect(await regionRollupDifferences()).toEqual([]);
    const { rows: moved } = await scratch.admin.query<{ n: number }>(
      "select count(*)::int as n from sales.region_category_days where region = 'Antarctica' and order_count > 0",
    );
    expect(moved[0]!.n).toBeGreaterThan(0);
  });

  it('are emptied by a truncate of the items, in a transaction rolled back', async () => {
    await scratch.admin.query('begin');
    try {
      await scratch.admin.query('truncate sales.order_items');
      const { rows } = await scratch.admin.query<{ n: number }>(
        'select (select count(*) from sales.region_product_days) + (select count(*) from sales.region_category_days) as n',
      );
      expect(Number(rows[0]!.n)).toBe(0);
    } finally {
      await scratch.admin.query('rollback');
    }
    expect(await regionRollupDifferences()).toEqual([]);
  });

  it('a row changed behind the triggers is a difference: the check can fail', async () => {
    await scratch.admin.query(
      'update sales.region_product_days set units = units + 1 where (region, day, product_id) = (select region, day, product_id from sales.region_product_days limit 1)',
    );
    try {
      expect(await regionRollupDifferences()).toHaveLength(2);
    } finally {
      await scratch.admin.query('select sales.region_product_days_rebuild()');
    }
    expect(await regionRollupDifferences()).toEqual([]);
  });
});

describe('the daily product rollup', () => {
  it('agrees with the items after the seed', async () => {
    const { rollup, items } = await rollupAndItems();
    expect(items.length).toBeGreaterThan(1000);
    expect(rollup).toEqual(items);
  });

  it('follows items added, changed, moved and deleted, and orders that change day or status or go', async () => {
    const order = (id: number, status: string, at: string): string => `(${id}, 1, '${status}', '${at}', 0)`;
    await scratch.admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values
        ${order(900001, 'paid', '2025-03-10T23:59:59Z')}, ${order(900002, 'pending', '2025-03-11T00:00:00Z')}`,
    );
    await scratch.admin.query(
      `insert into sales.order_items (order_id, product_id, quantity, unit_price) values
        (900001, 1, 2, 10.50), (900001, 2, 1, 3.33), (900002, 1, 5, 10.50), (900002, 3, 1, 0.01)`,
    );
    await scratch.admin.query('update sales.order_items set quantity = 7 where order_id = 900001 and product_id = 1');
    await scratch.admin.query(
      'update sales.order_items set unit_price = 9.99 where order_id = 900002 and product_id = 1',
    );
    await scratch.admin.query('update sales.order_items set product_id = 4 where order_id = 900001 and product_id = 2');
    await scratch.admin.query(
      'update sales.order_items set order_id = 900002 where order_id = 900001 and product_id = 4',
    );
    await scratch.admin.query("update sales.orders set status = 'refunded' where id = 900001");
    await scratch.admin.query("update sales.orders set ordered_at = '2025-03-12T00:00:00Z' where id = 900002");
    await scratch.admin.query(
      "update sales.orders set status = 'shipped', ordered_at = '2025-01-01T12:00:00Z' where id = 900002",
    );
    await scratch.admin.query('delete from sales.order_items where order_id = 900002 and product_id = 3');
    // Orders deleted with their items (the foreign key cascades), and a batch touching many orders at once.
    await scratch.admin.query(
      "delete from sales.orders where id in (select id from sales.orders where status = 'shipped' and ordered_at >= '2025-03-01' order by id limit 5)",
    );
    await scratch.admin.query(
      "update sales.orders set status = 'cancelled' where id in (select id from sales.orders where status = 'paid' and ordered_at >= '2025-04-01' order by id limit 20)",
    );
    const { rollup, items } = await rollupAndItems();
    expect(rollup).toEqual(items);
    // And so do the answers, in a zone that reads the edges from the items.
    expect(await served(RANGES[0]!, 'Europe/Berlin')).toEqual(
      (await fromItems(RANGES[0]!, 'Europe/Berlin')).slice(0, 100),
    );
  });

  it('is rolled back with the transaction that changed the items', async () => {
    await expectRolledBack(productRollup, [
      "insert into sales.order_items (order_id, product_id, quantity, unit_price) select id, 150, 3, 1 from sales.orders where status = 'paid' order by id limit 10 on conflict do nothing",
    ]);
  });

  it('can be rebuilt, and is emptied by a truncate', async () => {
    await expectRebuildKeeps(productRollup, 'product_days');
    await expectEmptiedBy(productRollup, ['truncate sales.order_items'], (state) => state.rollup, []);
  });
});

interface RegionRow {
  grain: string;
  day: string;
  region: string;
  status: string;
  n: string;
  amount: string;
}

/** Both region rollups (region_days per UTC day, region_hours per UTC hour) and the orders summed the same ways. */
async function regionRollupAndOrders(): Promise<{ rollup: RegionRow[]; orders: RegionRow[] }> {
  const rollup = await scratch.admin.query<RegionRow>(
    `select 'day' as grain, day::text as day, region, status, order_count::text as n, total_amount::text as amount
       from sales.region_days where order_count <> 0 or total_amount <> 0
     union all
     select 'hour', hour::text, region, status, order_count::text, total_amount::text
       from sales.region_hours where order_count <> 0 or total_amount <> 0
     order by 1, 2, 3, 4`,
  );
  const orders = await scratch.admin.query<RegionRow>(
    `select g.grain, date_trunc(g.grain, o.ordered_at, 'UTC')::text as day, c.region, o.status,
            count(*)::text as n, sum(o.total_amount)::text as amount
       from sales.orders o join sales.customers c on c.id = o.customer_id cross join (values ('day'), ('hour')) g(grain)
      group by 1, 2, 3, 4 order by 1, 2, 3, 4`,
  );
  return { rollup: rollup.rows, orders: orders.rows };
}

const regionRollup: CheckedRollup<Awaited<ReturnType<typeof regionRollupAndOrders>>> = {
  admin: () => scratch.admin,
  state: regionRollupAndOrders,
};

interface Region {
  region: string;
  currency: string;
  order_count: number;
  revenue: number;
  avg_order_value: number;
}

/** Net sales by region computed from the orders, with the range read in the zone by PostgreSQL. */
async function regionsFromOrders(range: { start_date: string; end_date: string }, timeZone: string): Promise<Region[]> {
  const { rows } = await scratch.admin.query<{
    region: string;
    currency: string;
    n: string;
    revenue: string;
    avg: string;
  }>(
    `select c.region, o.currency, count(*)::text as n, round(sum(o.total_amount), 2)::text as revenue,
            round(sum(o.total_amount) / count(*), 2)::text as avg
       from sales.orders o join sales.customers c on c.id = o.customer_id
      where o.ordered_at >= ($1::timestamp at time zone $3)
        and o.ordered_at < (($2::date + 1)::timestamp at time zone $3)
        and o.status not in ('cancelled', 'refunded')
      group by c.region, o.currency order by o.currency, sum(o.total_amount) desc, c.region`,
    [range.start_date, range.end_date, timeZone],
  );
  return rows.map((r) => ({
    region: r.region,
    currency: r.currency,
    order_count: Number(r.n),
    revenue: Number(r.revenue),
    avg_order_value: Number(r.avg),
  }));
}

async function regionsServed(range: { start_date: string; end_date: string }, timeZone: string): Promise<Region[]> {
  return structured<{ rows: Region[] }>(
    await harnesses.get(timeZone)!.call('query_sales', { ...range, group_by: 'region' }),
  ).rows;
}

describe('sales by region through the daily rollup', () => {
  for (const timeZone of ZONES) {
    it(`give what the orders give, in ${timeZone}`, async () => {
      for (const range of RANGES) {
        const expected = await regionsFromOrders(range, timeZone);
        expect(expected.length, JSON.stringify(range)).toBeGreaterThan(0);
        expect(await regionsServed(range, timeZone), `${timeZone} ${JSON.stringify(range)}`).toEqual(expected);
      }
    });
  }

  it('read whole UTC days from the rollup: a rollup changed behind the triggers shows in the answer', async () => {
    await readsTheRollup(
      'region_days',
      () => regionsServed(march10, 'UTC'),
      ([top]) =>
        scratch.admin.query(
          `update sales.region_days set order_count = order_count + 1000
            where day = '2025-03-10T00:00:00Z' and region = $1 and status = (
              select status from sales.region_days where day = '2025-03-10T00:00:00Z' and region = $1
                 and status not in ('cancelled', 'refunded') limit 1)`,
          [top!.region],
        ),
      ([top], after) => expect(after.find((r) => r.region === top!.region)?.order_count).toBe(top!.order_count + 1000),
    );
  });
});

describe('the region rollups, daily and hourly', () => {
  it('agrees with the orders after the seed', async () => {
    const { rollup, orders } = await regionRollupAndOrders();
    expect(orders.length).toBeGreaterThan(1000);
    expect(rollup).toEqual(orders);
  });

  it('follows orders added, changed and deleted, and customers who move', async () => {
    await scratch.admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values
        (910001, 1, 'paid', '2025-03-10T23:59:59Z', 12.34), (910002, 2, 'pending', '2025-03-11T00:00:00Z', 5)`,
    );
    await scratch.admin.query("update sales.orders set status = 'refunded' where id = 910001");
    await scratch.admin.query(
      "update sales.orders set ordered_at = '2025-03-12T00:00:00Z', total_amount = 6 where id = 910002",
    );
    await scratch.admin.query('update sales.orders set customer_id = 3 where id = 910002');
    await scratch.admin.query('delete from sales.orders where id = 910001');
    // A customer with many orders moves region; another keeps theirs (an update of the same value).
    const { rows } = await scratch.admin.query<{ id: string; region: string }>(
      'select c.id::text, c.region from sales.customers c where exists (select 1 from sales.orders o where o.customer_id = c.id) order by c.id limit 2',
    );
    await scratch.admin.query(
      "update sales.customers set region = case when region = 'Europe' then 'Africa' else 'Europe' end where id = $1",
      [rows[0]!.id],
    );
    await scratch.admin.query('update sales.customers set region = region where id = $1', [rows[1]!.id]);
    await scratch.admin.query(
      "delete from sales.orders where id in (select id from sales.orders where status = 'shipped' and ordered_at >= '2025-03-01' order by id limit 5)",
    );
    const { rollup, orders } = await regionRollupAndOrders();
    expect(rollup).toEqual(orders);
    expect(await regionsServed(RANGES[0]!, 'Asia/Kolkata')).toEqual(
      await regionsFromOrders(RANGES[0]!, 'Asia/Kolkata'),
    );
  });

  it('stays exact when a customer id moves to another customer in one statement', async () => {
    const { rows } = await scratch.admin.query<{ id: string }>(
      'select customer_id::text as id from sales.orders group by customer_id order by count(*) desc limit 1',
    );
    const id = Number(rows[0]!.id);
    await scratch.admin.query(
      "insert into sales.customers (id, name, email, phone, region) values (99999, 'Mara Mars', 'm@example.com', '+1 555 000-0000', 'Mars')",
    );
    await scratch.admin.query(
      'update sales.customers set id = case id when $1::bigint then 100000 else $1::bigint end where id in ($1::bigint, 99999)',
      [id],
    );
    const { rollup, orders } = await regionRollupAndOrders();
    expect(orders.some((r) => r.region === 'Mars')).toBe(true);
    expect(rollup).toEqual(orders);
  });

  it('is rolled back with the transaction, can be rebuilt, and is emptied by a truncate', async () => {
    await expectRolledBack(regionRollup, ["update sales.customers set region = 'Antarctica' where id <= 50"]);
    await expectRebuildKeeps(regionRollup, 'region_days');
    await expectRebuildKeeps(regionRollup, 'region_hours');
    await expectEmptiedBy(regionRollup, ['truncate sales.order_items, sales.orders'], (state) => state.rollup, []);
  });
});
