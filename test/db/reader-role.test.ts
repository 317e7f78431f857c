/** The reader role, reached directly with crafted SQL: it can read the reporting views and change nothing. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connectAdmin } from '../support/harness.js';

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

  // 42501: insufficient privilege; 25006: read-only transaction. Either refusal is safe; which one
  // PostgreSQL reports first depends on the statement.
  it.each([
    'insert into sales.orders (customer_id, status, ordered_at, total_amount) values (1, $$paid$$, now(), 1)',
    'update sales.orders set total_amount = 0',
    'delete from sales.order_items',
    'truncate sales.orders',
    'select * from sales.customers',
    'select name, email, phone from sales.customers',
    'select created_at from reporting.customers',
    'insert into reporting.products (sku, name, category, unit_price) values ($$x$$, $$x$$, $$x$$, 1)',
    'commit; insert into sales.orders (customer_id, status, ordered_at, total_amount) values (1, $$paid$$, now(), 1)',
    'set transaction read write; delete from sales.orders',
    'set default_transaction_read_only = off; create table public.evil (x int)',
    "select pg_read_file('/etc/passwd')",
    "copy (select 1) to '/tmp/querygate-evil'",
    'alter role querygate_reader superuser',
    'grant select on sales.customers to querygate_reader',
  ])('is refused: %s', async (statement) => {
    expect(['42501', '25006']).toContain(await refused(statement));
  });

  // With read-only mode switched off, the privileges alone still refuse every write.
  it.each([
    'begin read write; insert into reporting.products (sku, name, category, unit_price) values ($$x$$, $$x$$, $$x$$, 1)',
    'begin read write; update reporting.orders set total_amount = 0',
    'begin read write; delete from reporting.order_items',
    'begin read write; truncate sales.orders',
    'begin read write; create table public.evil (x int)',
    'begin read write; create table reporting.evil (x int)',
    'begin read write; create temporary table evil (x int)',
    'begin read write; create schema evil',
    "begin read write; copy (select 1) to '/tmp/querygate-evil'",
    'begin read write; grant select on sales.customers to querygate_reader',
  ])('is refused for lack of privilege: %s', async (statement) => {
    expect(await refused(statement)).toBe('42501');
  });

  it('holds no write privilege on any relation and no CREATE on any schema', async () => {
    const { rows } = await reader.query(`
      select
        (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
           cross join unnest(array['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) as p (privilege)
          where n.nspname not in ('pg_catalog', 'information_schema') and c.relkind in ('r', 'p', 'v', 'm', 'f')
            and has_table_privilege(c.oid, p.privilege)) as writable,
        (select count(*)::int from pg_namespace where has_schema_privilege(oid, 'CREATE')) as creatable,
        has_database_privilege(current_database(), 'TEMPORARY') as temporary`);
    expect(rows[0]).toEqual({ writable: 0, creatable: 0, temporary: false });
  });

  it('changed nothing through any of those attempts', async () => {
    const { rows } = await admin.query(
      "select (select count(*) from sales.orders)::int as orders, (select count(*) from sales.order_items)::int as items, to_regclass('public.evil') as evil, to_regclass('reporting.evil') as evil2, to_regnamespace('evil') as evil3",
    );
    const { rows: orders } = await admin.query('select count(*)::int as n from sales.orders where total_amount = 0');
    expect(rows[0]).toMatchObject({ evil: null, evil2: null, evil3: null });
    expect(rows[0].orders).toBe(4000);
    expect(rows[0].items).toBeGreaterThan(4000);
    expect(orders[0].n).toBe(0);
  });
});
