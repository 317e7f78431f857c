/** The reader role, reached directly with crafted SQL: it can read the reporting views and change nothing. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connectAdmin } from './support/harness.js';

let reader: pg.Client;
let admin: pg.Client;
beforeAll(async () => {
  reader = new pg.Client({ connectionString: inject('readerUrl') });
  await reader.connect();
  admin = await connectAdmin();
});
afterAll(async () => {
  await reader.end();
  await admin.end();
});

async function refused(statement: string): Promise<string> {
  const error = await reader.query(statement).then(
    () => undefined,
    (err: { code?: string }) => err,
  );
  await reader.query('rollback').catch(() => undefined); // leave no aborted transaction behind
  expect(error, `expected the reader to be refused: ${statement}`).toBeDefined();
  return error!.code ?? '';
}

describe('the reader role', () => {
  it('reads the reporting views', async () => {
    const { rows } = await reader.query('select count(*)::int as n from reporting.orders');
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it('is not a superuser, cannot bypass RLS, and has the pinned settings', async () => {
    const { rows } = await admin.query(
      "select rolsuper, rolbypassrls, rolcreatedb, rolcreaterole, rolconfig from pg_roles where rolname = 'querygate_reader'",
    );
    expect(rows[0]).toMatchObject({ rolsuper: false, rolbypassrls: false, rolcreatedb: false, rolcreaterole: false });
    expect(rows[0].rolconfig).toEqual(
      expect.arrayContaining([
        'default_transaction_read_only=on',
        'search_path=reporting',
        expect.stringMatching(/^statement_timeout=/),
      ]),
    );
  });

  it.each([
    'insert into sales.orders (customer_id, status, ordered_at, total_amount) values (1, $$paid$$, now(), 1)',
    'update sales.orders set total_amount = 0',
    'delete from sales.order_items',
    'truncate sales.orders',
    'select * from sales.customers',
    'insert into reporting.products (sku, name, category, unit_price) values ($$x$$, $$x$$, $$x$$, 1)',
    'commit; insert into sales.orders (customer_id, status, ordered_at, total_amount) values (1, $$paid$$, now(), 1)',
    'set transaction read write; delete from sales.orders',
    'set default_transaction_read_only = off; create table public.evil (x int)',
    'begin read write; create table public.evil (x int)',
    'begin read write; create table reporting.evil (x int)',
    'begin read write; create temporary table evil (x int)',
    'begin read write; create schema evil',
    "select pg_read_file('/etc/passwd')",
    "copy reporting.orders to '/tmp/querygate-evil'",
    'alter role querygate_reader superuser',
    'grant select on sales.customers to querygate_reader',
  ])('is refused: %s', async (statement) => {
    await refused(statement);
  });

  it('changed nothing through any of those attempts', async () => {
    const { rows } = await admin.query(
      "select (select count(*) from sales.orders)::int as orders, (select count(*) from sales.order_items)::int as items, to_regclass('public.evil') as evil",
    );
    const { rows: orders } = await admin.query('select count(*)::int as n from sales.orders where total_amount = 0');
    expect(rows[0]).toMatchObject({ evil: null });
    expect(rows[0].orders).toBe(4000);
    expect(rows[0].items).toBeGreaterThan(4000);
    expect(orders[0].n).toBe(0);
  });
});
