/**
 * A daily rollup of orders by customer region and status, kept exact by triggers in the same
 * transaction as every change to sales.orders and to a customer's region. Sales by region over 90
 * days then read at most 90 x regions x 5 rows, however many orders there are. Days are UTC days; a
 * range in another zone reads its partial first and last UTC day from the orders themselves.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import {
  createRowTriggers,
  dropEmptiedWith,
  dropRollupFunctions,
  dropRowTriggers,
  emptiedWith,
  exposeToReader,
  runAsOwner,
  type RowTrigger,
} from './rollup-support.js';

/** Trigger functions: they run as the owner, so a writer needs no rights on the rollup. */
const FUNCTIONS = ['region_days_orders', 'region_days_customers', 'region_days_truncate'];
/** Called only from the trigger functions. */
const HELPERS = ['sales.region_days_add(timestamptz, text, text, bigint, numeric)'];
const TRIGGERS: readonly RowTrigger[] = [
  {
    table: 'orders',
    name: 'orders_region_days',
    when: 'after insert or delete or update of ordered_at, status, total_amount, customer_id',
    fn: 'region_days_orders',
  },
  {
    table: 'customers',
    name: 'customers_region_days',
    when: 'after update of id, region',
    fn: 'region_days_customers',
  },
];

export function regionDays(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`
        create table sales.region_days (
          day timestamptz not null,
          region text not null,
          status text not null,
          order_count bigint not null,
          total_amount numeric(18, 2) not null,
          primary key (day, region, status)
        )`.execute(db);
      await sql`
        create function sales.region_days_add(p_day timestamptz, p_region text, p_status text, p_count bigint, p_amount numeric)
        returns void language sql as $$
          insert into sales.region_days (day, region, status, order_count, total_amount)
          values (p_day, p_region, p_status, p_count, p_amount)
          on conflict (day, region, status) do update
            set order_count = sales.region_days.order_count + excluded.order_count,
                total_amount = sales.region_days.total_amount + excluded.total_amount;
        $$`.execute(db);
      // An order counts in the region of its customer at the time. The customer is locked FOR SHARE, so
      // that a move to another region at the same time waits for this transaction, or this one for it.
      await sql`
        create function sales.region_days_orders() returns trigger language plpgsql as $$
        declare
          r text;
        begin
          -- Locked first, then used: a locking select re-reads a row it had to wait for, and would
          -- apply a side effect in its select list twice.
          if tg_op in ('UPDATE', 'DELETE') then
            select region into r from sales.customers where id = old.customer_id for share;
            if found then
              perform sales.region_days_add(date_trunc('day', old.ordered_at, 'UTC'), r, old.status, -1, -old.total_amount);
            end if;
          end if;
          if tg_op in ('INSERT', 'UPDATE') then
            select region into r from sales.customers where id = new.customer_id for share;
            if found then
              perform sales.region_days_add(date_trunc('day', new.ordered_at, 'UTC'), r, new.status, 1, new.total_amount);
            end if;
          end if;
          return null;
        end $$`.execute(db);
      // A customer who moves takes their orders to the new region (and one whose id changes, the orders
      // that now point at it: subtracted by the old id, added by the new).
      await sql`
        create function sales.region_days_customers() returns trigger language plpgsql as $$
        begin
          if old.region is not distinct from new.region and old.id = new.id then
            return null;
          end if;
          perform sales.region_days_add(g.day, old.region, g.status, -g.n, -g.amount)
             from (select date_trunc('day', o.ordered_at, 'UTC') as day, o.status, count(*) as n, sum(o.total_amount) as amount
                     from sales.orders o where o.customer_id = old.id group by 1, 2) g;
          perform sales.region_days_add(g.day, new.region, g.status, g.n, g.amount)
             from (select date_trunc('day', o.ordered_at, 'UTC') as day, o.status, count(*) as n, sum(o.total_amount) as amount
                     from sales.orders o where o.customer_id = new.id group by 1, 2) g;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.region_days_truncate() returns trigger language plpgsql as $$
        begin
          truncate sales.region_days;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.region_days_rebuild() returns void language sql as $$
          delete from sales.region_days;
          insert into sales.region_days (day, region, status, order_count, total_amount)
          select date_trunc('day', o.ordered_at, 'UTC'), c.region, o.status, count(*), sum(o.total_amount)
            from sales.orders o join sales.customers c on c.id = o.customer_id
           group by 1, 2, 3;
        $$`.execute(db);
      await runAsOwner(db, FUNCTIONS, HELPERS);
      await createRowTriggers(db, TRIGGERS);
      await emptiedWith(db, 'region_days', ['orders', 'customers']);
      await sql`select sales.region_days_rebuild()`.execute(db);
      await exposeToReader(
        db,
        'region_days',
        ['day', 'region', 'status', 'order_count', 'total_amount'],
        'order_count > 0',
        role,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop view reporting.region_days`.execute(db);
      await dropEmptiedWith(db, 'region_days', ['orders', 'customers']);
      await dropRowTriggers(db, TRIGGERS);
      await dropRollupFunctions(db, 'region_days', FUNCTIONS, HELPERS);
      await sql`drop table sales.region_days`.execute(db);
    },
  };
}
