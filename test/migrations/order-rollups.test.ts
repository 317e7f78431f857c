/**
 * Migration 0022 on databases of the designs the squashed migrations left (test/support/rollup-designs.ts):
 * the rollups as 0012 left them (order_hours, product_days and region_days, with triggers written by
 * hand) and as 0021 left them (category_days and order_categories by hand, the rest the engine's),
 * each written through its own triggers, then migrated. Every rollup the design had is the same after as before, every rollup
 * equals the base rows summed here by the admin; no hand-written trigger or function is left, every
 * trigger on the sales tables runs a function the engine made for a declared rollup (on a fresh
 * install too) but one of the database's own, which stays; and writes after the move keep the
 * rollups exact.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { rollupNames } from '../../src/db/rollups/index.js';
import { silentLogger } from '../../src/lib/logger.js';
import { makeRollupDesign } from '../support/rollup-designs.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let admin: pg.Client;

/** Each rollup's rows as text, in one order; and the same sums computed from the orders. */
const ROLLUPS = {
  order_hours: `select hour::text || ' ' || status || ' ' || currency || ' ' || order_count || ' ' || total_amount
                  from sales.order_hours where order_count <> 0 or total_amount <> 0 order by 1`,
  region_days: `select day::text || ' ' || region || ' ' || status || ' ' || currency || ' ' || order_count || ' ' || total_amount
                  from sales.region_days where order_count <> 0 or total_amount <> 0 order by 1`,
  region_hours: `select hour::text || ' ' || region || ' ' || status || ' ' || currency || ' ' || order_count || ' ' || total_amount
                   from sales.region_hours where order_count <> 0 or total_amount <> 0 order by 1`,
  product_days: `select day::text || ' ' || product_id || ' ' || status || ' ' || currency || ' ' || units || ' ' || revenue
                   from sales.product_days where units <> 0 or revenue <> 0 order by 1`,
  order_categories: `select order_id || ' ' || category || ' ' || items || ' ' || revenue
                       from sales.order_categories where items <> 0 order by 1`,
  category_days: `select day::text || ' ' || category || ' ' || status || ' ' || currency || ' ' || order_count || ' ' || revenue
                    from sales.category_days where order_count <> 0 order by 1`,
  region_category_days: `select day::text || ' ' || region || ' ' || category || ' ' || status || ' ' || currency || ' ' || order_count || ' ' || revenue
                           from sales.region_category_days where order_count <> 0 order by 1`,
};
const FROM_ORDERS = {
  order_hours: `select date_trunc('hour', ordered_at, 'UTC')::text || ' ' || status || ' ' || currency || ' ' || count(*) || ' ' || sum(total_amount)
                  from sales.orders group by date_trunc('hour', ordered_at, 'UTC'), status, currency order by 1`,
  region_days: `select date_trunc('day', o.ordered_at, 'UTC')::text || ' ' || c.region || ' ' || o.status || ' ' || o.currency || ' ' || count(*) || ' ' || sum(o.total_amount)
                  from sales.orders o join sales.customers c on c.id = o.customer_id
                 group by date_trunc('day', o.ordered_at, 'UTC'), c.region, o.status, o.currency order by 1`,
  region_hours: `select date_trunc('hour', o.ordered_at, 'UTC')::text || ' ' || c.region || ' ' || o.status || ' ' || o.currency || ' ' || count(*) || ' ' || sum(o.total_amount)
                   from sales.orders o join sales.customers c on c.id = o.customer_id
                  group by date_trunc('hour', o.ordered_at, 'UTC'), c.region, o.status, o.currency order by 1`,
  product_days: `select date_trunc('day', o.ordered_at, 'UTC')::text || ' ' || i.product_id || ' ' || o.status || ' ' || o.currency || ' ' || sum(i.quantity) || ' ' || sum(i.quantity * i.unit_price)
                   from sales.order_items i join sales.orders o on o.id = i.order_id
                  group by date_trunc('day', o.ordered_at, 'UTC'), i.product_id, o.status, o.currency order by 1`,
  order_categories: `select i.order_id || ' ' || p.category || ' ' || count(*) || ' ' || sum(i.quantity * i.unit_price)
                       from sales.order_items i join sales.products p on p.id = i.product_id
                      group by i.order_id, p.category order by 1`,
  // Orders holding the category, each once however many of its items it holds.
  category_days: `select date_trunc('day', o.ordered_at, 'UTC')::text || ' ' || p.category || ' ' || o.status || ' ' || o.currency || ' ' || count(distinct o.id) || ' ' || sum(i.quantity * i.unit_price)
                    from sales.order_items i join sales.orders o on o.id = i.order_id join sales.products p on p.id = i.product_id
                   group by date_trunc('day', o.ordered_at, 'UTC'), p.category, o.status, o.currency order by 1`,
  region_category_days: `select date_trunc('day', o.ordered_at, 'UTC')::text || ' ' || c.region || ' ' || p.category || ' ' || o.status || ' ' || o.currency || ' ' || count(distinct o.id) || ' ' || sum(i.quantity * i.unit_price)
                           from sales.order_items i join sales.orders o on o.id = i.order_id join sales.products p on p.id = i.product_id
                           join sales.customers c on c.id = o.customer_id
                          group by date_trunc('day', o.ordered_at, 'UTC'), c.region, p.category, o.status, o.currency order by 1`,
};
type Rollup = keyof typeof ROLLUPS;
const NAMES = Object.keys(ROLLUPS) as Rollup[];

async function rows(statement: string): Promise<string[]> {
  const { rows: out } = await admin.query<{ '?column?': string }>(statement);
  return out.map((r) => Object.values(r)[0] as string);
}

/** The rollups the database has, each as its rows. */
async function snapshot(): Promise<Partial<Record<Rollup, string[]>>> {
  const out: Partial<Record<Rollup, string[]>> = {};
  for (const n of NAMES) {
    const { rows: there } = await admin.query<{ t: string | null }>('select to_regclass($1) as t', [`sales.${n}`]);
    if (there[0]!.t !== null) out[n] = await rows(ROLLUPS[n]);
  }
  return out;
}

/** The same rollups computed from the base rows. */
async function fromOrders(only: readonly string[] = NAMES): Promise<Partial<Record<Rollup, string[]>>> {
  const out: Partial<Record<Rollup, string[]>> = {};
  for (const n of NAMES) if (only.includes(n)) out[n] = await rows(FROM_ORDERS[n]);
  return out;
}

/** The base rows, written through the design's own triggers. */
async function fill(): Promise<void> {
  await admin.query(
    `insert into sales.products (sku, name, category, unit_price)
     select 'SKU-' || lpad(g::text, 5, '0'), 'Product ' || g, (array['Books', 'Games', 'Garden', 'Toys'])[1 + g % 4], 5 + g
       from generate_series(1, 20) as g`,
  );
  await admin.query(
    `insert into sales.customers (name, email, phone, region)
     select 'Customer ' || g, 'c' || g || '@example.com', '+44 20 7946 ' || lpad(g::text, 4, '0'),
            (array['north', 'south', 'east', 'west'])[1 + g % 4]
       from generate_series(1, 50) as g`,
  );
  await admin.query(
    `insert into sales.orders (customer_id, status, ordered_at, currency, total_amount)
     select 1 + g % 50, (array['pending', 'paid', 'shipped', 'cancelled', 'refunded'])[1 + g % 5],
            '2025-05-01T00:00:00Z'::timestamptz + make_interval(mins => g * 37), (array['USD', 'EUR'])[1 + g % 2], 10 + g % 90
       from generate_series(1, 1500) as g`,
  );
  await admin.query(
    `insert into sales.order_items (order_id, product_id, quantity, unit_price)
     select o.id, 1 + (o.id * k) % 20, 1 + (o.id + k) % 3, 5 + (o.id * k) % 20
       from sales.orders o cross join generate_series(1, 2) as k
     on conflict do nothing`,
  );
}

/** The triggers on the tables of the sales schema, with the function each runs. */
async function triggers(db: pg.Client = admin): Promise<string[]> {
  const { rows: out } = await db.query<{ t: string }>(
    `select t.tgrelid::regclass::text || ' ' || t.tgname || ' ' || t.tgfoid::regproc::text as t
       from pg_trigger t join pg_class c on c.oid = t.tgrelid
      where not t.tgisinternal and c.relnamespace = 'sales'::regnamespace order by 1`,
  );
  return out.map((r) => r.t);
}

/** The trigger functions the engine makes for the sales pack's declared rollups. */
function engineFunctions(): Set<string> {
  const out = new Set<string>();
  for (const d of salesPack.rollups ?? []) {
    const names = rollupNames(d);
    const chain = [d.facts, ...d.parents.map((p) => p.table)];
    for (const fn of [
      names.facts,
      names.deleted,
      names.truncate,
      ...chain.map((t) => names.touch(t)),
      ...d.parents.map((p) => names.parent(p.table)),
    ]) {
      out.add(fn.replaceAll('"', ''));
    }
  }
  return out;
}

/** The triggers that run a function the engine did not make for a declared rollup. */
const notTheEngines = (list: readonly string[]): string[] => {
  const made = engineFunctions();
  return list.filter((t) => !made.has(t.split(' ')[2]!));
};

/** Writes through whichever triggers there are: an order placed, one that changes status and hour, one deleted, a customer who moves. */
async function write(tag: number): Promise<void> {
  await admin.query('begin');
  await admin.query(
    `insert into sales.orders (customer_id, status, ordered_at, total_amount, currency)
     select id, 'paid', '2025-06-10T10:15:00Z'::timestamptz + make_interval(mins => $1), 12.5, 'EUR'
       from sales.customers order by id limit 3`,
    [tag],
  );
  await admin.query(
    `insert into sales.order_items (order_id, product_id, quantity, unit_price)
     select o.id, p.id, 2, 9.99 from sales.orders o, sales.products p
      where o.ordered_at >= '2025-06-10' and not exists (select 1 from sales.order_items i where i.order_id = o.id and i.product_id = p.id)
      order by o.id, p.id limit 1 offset $1`,
    [tag],
  );
  await admin.query(
    `update sales.orders set status = 'refunded', ordered_at = ordered_at + interval '70 minutes'
      where id in (select id from sales.orders where status = 'paid' order by id limit 2 offset $1)`,
    [tag],
  );
  await admin.query(`delete from sales.orders where id in (select id from sales.orders order by id desc limit 1)`);
  await admin.query(
    `update sales.customers set region = case region when 'north' then 'south' else 'north' end
      where id = (select customer_id from sales.orders order by id limit 1 offset $1)`,
    [tag],
  );
  // A product moved to another category; an order's item taken out, and one changed.
  await admin.query(
    `update sales.products set category = case category when 'Books' then 'Toys' else 'Books' end where id = 1 + $1`,
    [tag],
  );
  await admin.query(
    `delete from sales.order_items where (order_id, product_id) = (select order_id, product_id from sales.order_items order by 1, 2 limit 1 offset $1)`,
    [tag],
  );
  await admin.query(
    `update sales.order_items set quantity = quantity + 1, product_id = 20 - $1
      where (order_id, product_id) = (select order_id, product_id from sales.order_items i
                                       where not exists (select 1 from sales.order_items j where j.order_id = i.order_id and j.product_id = 20 - $1)
                                       order by 1 desc, 2 limit 1)`,
    [tag],
  );
  await admin.query('commit');
}

const DESIGNS = [
  {
    upTo: '0012-stored-masks',
    rollups: ['order_hours', 'product_days', 'region_days'],
    handWritten: [
      'sales.orders orders_order_hours sales.order_hours_apply',
      'sales.customers customers_region_days sales.region_days_customers',
      'sales.order_items order_items_product_days sales.product_days_items',
      'sales.order_items order_items_touch_order sales.order_items_touch_order',
    ],
  },
  {
    upTo: '0021-product-days',
    rollups: NAMES,
    handWritten: [
      'sales.products products_category_days sales.category_days_products',
      'sales.order_items order_items_category_days sales.category_days_items',
      'sales.orders orders_category_days_delete sales.category_days_order_deleted',
      'sales.orders orders_touch_customer sales.orders_touch_customer',
    ],
  },
] as const;

describe.each(DESIGNS)('0022 on the rollups as $upTo left them', ({ upTo, rollups, handWritten }) => {
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    scratch = await createScratchDatabase(`rollups_${upTo.slice(0, 4)}`, undefined, upTo);
    admin = scratch.admin;
    await makeRollupDesign(admin, upTo);
    await fill();
  }, 180_000);
  afterAll(async () => scratch?.drop());

  it('keeps every figure, drops every hand-written trigger, and keeps the rollups exact after', async () => {
    // The old design, written through its own triggers.
    await write(0);
    // A trigger of the database's own on a sales table, which 0022 must leave alone.
    await admin.query(`create table sales.order_log (order_id bigint not null);
      create function sales.log_order() returns trigger language plpgsql as $$
        begin insert into sales.order_log values (new.id); return null; end $$;
      create trigger orders_log after insert on sales.orders for each row execute function sales.log_order()`);
    const own = 'sales.orders orders_log sales.log_order';
    const before = await triggers();
    for (const trigger of handWritten) expect(before).toContain(trigger);
    expect(notTheEngines(before).length).toBeGreaterThan(5);
    const kept = await snapshot();
    expect(Object.keys(kept).sort()).toEqual([...rollups].sort());
    expect(kept).toEqual(await fromOrders(rollups));
    expect(kept.order_hours!.length).toBeGreaterThan(500);

    await migrateToLatest(scratch.adminUrl, salesPack, DEFAULT_READER_ROLE, silentLogger);

    const after = await snapshot();
    expect(after).toEqual(await fromOrders());
    for (const n of rollups) expect(after[n], n).toEqual(kept[n]);
    expect(after.category_days!.length).toBeGreaterThan(100);
    const list = await triggers();
    expect(notTheEngines(list)).toEqual([own]);
    for (const rollup of ['order_hours', 'region_days', 'region_hours']) {
      expect(list).toContain(`sales.orders orders_${rollup}_sums sales.${rollup}_facts`);
    }
    expect(list).toContain('sales.customers customers_region_days_moves sales.region_days_on_customers');
    expect(list).toContain('sales.order_items order_items_product_days_sums sales.product_days_facts');
    expect(list).toContain('sales.order_items order_items_order_categories_sums sales.order_categories_facts');
    expect(list).toContain('sales.order_categories order_categories_category_days_sums sales.category_days_facts');
    expect(list).toContain('sales.orders orders_category_days_delete sales.category_days_deleted');
    const { rows: functions } = await admin.query<{ name: string }>(
      `select proname as name from pg_proc where pronamespace = 'sales'::regnamespace
          and proname in ('order_hours_apply', 'region_days_orders', 'region_days_customers', 'region_hours_orders',
                          'region_hours_customers', 'product_days_items', 'product_days_orders', 'category_days_items',
                          'category_days_touch', 'category_days_item', 'category_days_products',
                          'order_items_touch_order', 'orders_touch_customer')`,
    );
    expect(functions).toEqual([]);
    const { rows: tables } = await admin.query(`select to_regclass('sales.product_touches') as t`);
    expect(tables).toEqual([{ t: null }]);

    // Written through the engine's triggers now, and through the database's own.
    const logged = async (): Promise<number> =>
      (await admin.query<{ n: number }>('select count(*)::int as n from sales.order_log')).rows[0]!.n;
    const loggedBefore = await logged();
    await write(5);
    expect(await snapshot()).toEqual(await fromOrders());
    expect(await logged()).toBe(loggedBefore + 3);
  }, 180_000);
});

describe('a fresh install', () => {
  it('builds only the triggers the engine makes for a declared rollup', async () => {
    const fresh = await createScratchDatabase('fresh_rollups');
    try {
      const list = await triggers(fresh.admin);
      expect(list.length).toBeGreaterThan(40);
      expect(notTheEngines(list)).toEqual([]);
    } finally {
      await fresh.drop();
    }
  });
});
