/**
 * Migrations 0020 and 0021 on a database of the old design: migrated to 0019, seeded, and written
 * through the hand-written triggers of order_hours, region_days, region_hours and product_days, then
 * migrated. Every row of the
 * three rollups is the same after as before, and each equals the orders summed here by the admin;
 * no hand-written trigger or function of theirs is left, the engine's are there; and writes after the
 * move keep the rollups exact.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { silentLogger } from '../../src/logger.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let admin: pg.Client;
let adminUrl: string;

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
};
type Rollup = keyof typeof ROLLUPS;
const NAMES = Object.keys(ROLLUPS) as Rollup[];

async function rows(statement: string): Promise<string[]> {
  const { rows: out } = await admin.query<{ '?column?': string }>(statement);
  return out.map((r) => Object.values(r)[0] as string);
}

async function snapshot(): Promise<Record<Rollup, string[]>> {
  const out = {} as Record<Rollup, string[]>;
  for (const n of NAMES) out[n] = await rows(ROLLUPS[n]);
  return out;
}

async function fromOrders(): Promise<Record<Rollup, string[]>> {
  const out = {} as Record<Rollup, string[]>;
  for (const n of NAMES) out[n] = await rows(FROM_ORDERS[n]);
  return out;
}

/** The triggers on the orders and the customers, with the function each runs. */
async function triggers(): Promise<string[]> {
  return rows(
    `select tgrelid::regclass::text || ' ' || tgname || ' ' || tgfoid::regproc::text from pg_trigger
      where not tgisinternal and tgrelid in ('sales.orders'::regclass, 'sales.customers'::regclass, 'sales.order_items'::regclass)
      order by 1`,
  );
}

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
  await admin.query('commit');
}

beforeAll(async () => {
  scratch = await createScratchDatabase('order_rollups', undefined, '0019-rollup-range-rebuild');
  admin = scratch.admin;
  adminUrl = scratch.adminUrl;
  // Rows written through the old design's own triggers (the seed writes the rollups as they are now).
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
}, 180_000);
afterAll(async () => scratch?.drop());

describe('0020 and 0021: the rollups of the orders and product_days move from hand-written triggers to the engine', () => {
  it('keeps every figure, drops every hand-written trigger, and keeps the rollups exact after', async () => {
    // The old design, written through its own triggers.
    await write(0);
    const handWritten = await triggers();
    expect(handWritten).toContain('sales.orders orders_order_hours sales.order_hours_apply');
    expect(handWritten).toContain('sales.customers customers_region_days sales.region_days_customers');
    expect(handWritten).toContain('sales.order_items order_items_product_days sales.product_days_items');
    const before = await snapshot();
    expect(before).toEqual(await fromOrders());
    expect(before.order_hours.length).toBeGreaterThan(500);

    await migrateToLatest(adminUrl, salesPack, DEFAULT_READER_ROLE, silentLogger);

    expect(await snapshot()).toEqual(before);
    const after = await triggers();
    const gone = [
      'order_hours_apply',
      'region_days_orders',
      'region_days_customers',
      'region_hours_orders',
      'product_days_items',
      'product_days_orders',
    ];
    expect(after.filter((t) => gone.some((fn) => t.endsWith(`sales.${fn}`)))).toEqual([]);
    for (const rollup of ['order_hours', 'region_days', 'region_hours']) {
      expect(after).toContain(`sales.orders orders_${rollup}_sums sales.${rollup}_facts`);
    }
    expect(after).toContain('sales.customers customers_region_days_moves sales.region_days_on_customers');
    expect(after).toContain('sales.order_items order_items_product_days_sums sales.product_days_facts');
    const { rows: functions } = await admin.query<{ name: string }>(
      `select proname as name from pg_proc where pronamespace = 'sales'::regnamespace
          and proname in ('order_hours_apply', 'region_days_orders', 'region_days_customers', 'region_hours_orders',
                          'region_hours_customers', 'product_days_items', 'product_days_orders')`,
    );
    expect(functions).toEqual([]);

    // Written through the engine's triggers now.
    await write(5);
    expect(await snapshot()).toEqual(await fromOrders());
  }, 180_000);
});
