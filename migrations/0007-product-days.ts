/**
 * A daily rollup of order items by product and order status, kept exact by triggers in the same
 * transaction as every change to sales.order_items and to the orders they belong to. Top products
 * over 90 days then read at most 90 x products x 5 rows, however many orders there are. Days are UTC
 * days; a range in another zone reads its partial first and last UTC day from the items themselves.
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

const FUNCTIONS = ['product_days_items', 'product_days_orders', 'product_days_order_deleted', 'product_days_truncate'];
/** Called only from the trigger functions above, which run as the owner. */
const HELPERS = [
  'sales.product_days_order(bigint, timestamptz, text, integer)',
  'sales.product_days_add(timestamptz, bigint, text, bigint, numeric)',
];
const TRIGGERS: readonly RowTrigger[] = [
  {
    table: 'order_items',
    name: 'order_items_product_days',
    when: 'after insert or delete or update',
    fn: 'product_days_items',
  },
  {
    table: 'orders',
    name: 'orders_product_days',
    when: 'after update of id, ordered_at, status',
    fn: 'product_days_orders',
  },
  { table: 'orders', name: 'orders_product_days_delete', when: 'before delete', fn: 'product_days_order_deleted' },
];

export function productDays(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`
        create table sales.product_days (
          day timestamptz not null,
          product_id bigint not null,
          status text not null,
          units bigint not null,
          revenue numeric(18, 2) not null,
          primary key (day, product_id, status)
        )`.execute(db);
      // One item in or out of the (day, product, status) its order puts it in.
      await sql`
        create function sales.product_days_add(p_day timestamptz, p_product bigint, p_status text, p_units bigint, p_revenue numeric)
        returns void language sql as $$
          insert into sales.product_days (day, product_id, status, units, revenue)
          values (p_day, p_product, p_status, p_units, p_revenue)
          on conflict (day, product_id, status) do update
            set units = sales.product_days.units + excluded.units,
                revenue = sales.product_days.revenue + excluded.revenue;
        $$`.execute(db);
      // All the items of one order in or out (p_sign 1 or -1) of the day and status given.
      await sql`
        create function sales.product_days_order(p_order bigint, p_at timestamptz, p_status text, p_sign integer)
        returns void language plpgsql as $$
        begin
          perform sales.product_days_add(date_trunc('day', p_at, 'UTC'), i.product_id, p_status,
                                         p_sign * i.quantity, p_sign * i.quantity * i.unit_price)
             from sales.order_items i where i.order_id = p_order;
        end $$`.execute(db);
      // Items: the order is looked up for its day and status, and locked FOR SHARE: a transaction that
      // changes the order's day or status at the same time then waits for this one (or this one for
      // it), so neither can move the items without seeing the other's. An item deleted with its order
      // (the foreign key cascades) finds no order; product_days_order_deleted took it out already.
      await sql`
        create function sales.product_days_items() returns trigger language plpgsql as $$
        declare
          o record;
        begin
          if tg_op in ('UPDATE', 'DELETE') then
            select ordered_at, status into o from sales.orders where id = old.order_id for share;
            if found then
              perform sales.product_days_add(date_trunc('day', o.ordered_at, 'UTC'), old.product_id, o.status,
                                             -old.quantity, -(old.quantity * old.unit_price));
            end if;
          end if;
          if tg_op in ('INSERT', 'UPDATE') then
            select ordered_at, status into o from sales.orders where id = new.order_id for share;
            if found then
              perform sales.product_days_add(date_trunc('day', o.ordered_at, 'UTC'), new.product_id, o.status,
                                             new.quantity, new.quantity * new.unit_price);
            end if;
          end if;
          return null;
        end $$`.execute(db);
      // An order that moves to another UTC day or status moves its items with it.
      await sql`
        create function sales.product_days_orders() returns trigger language plpgsql as $$
        begin
          if date_trunc('day', old.ordered_at, 'UTC') = date_trunc('day', new.ordered_at, 'UTC')
             and old.status = new.status and old.id = new.id then
            return null;
          end if;
          perform sales.product_days_order(old.id, old.ordered_at, old.status, -1);
          perform sales.product_days_order(new.id, new.ordered_at, new.status, 1);
          return null;
        end $$`.execute(db);
      // Before an order goes, while its items can still be read: they leave with it.
      await sql`
        create function sales.product_days_order_deleted() returns trigger language plpgsql as $$
        begin
          perform sales.product_days_order(old.id, old.ordered_at, old.status, -1);
          return old;
        end $$`.execute(db);
      await sql`
        create function sales.product_days_truncate() returns trigger language plpgsql as $$
        begin
          truncate sales.product_days;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.product_days_rebuild() returns void language sql as $$
          delete from sales.product_days;
          insert into sales.product_days (day, product_id, status, units, revenue)
          select date_trunc('day', o.ordered_at, 'UTC'), i.product_id, o.status, sum(i.quantity), sum(i.quantity * i.unit_price)
            from sales.orders o join sales.order_items i on i.order_id = o.id
           group by 1, 2, 3;
        $$`.execute(db);
      // As the hourly rollup's (0006): run as their owner, so a writer needs no rights on the rollup.
      await runAsOwner(db, FUNCTIONS, HELPERS);
      await createRowTriggers(db, TRIGGERS);
      await emptiedWith(db, 'product_days', ['orders', 'order_items']);
      await sql`select sales.product_days_rebuild()`.execute(db);
      await exposeToReader(db, 'product_days', ['day', 'product_id', 'status', 'units', 'revenue'], 'units > 0', role);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop view reporting.product_days`.execute(db);
      await dropEmptiedWith(db, 'product_days', ['orders', 'order_items']);
      await dropRowTriggers(db, TRIGGERS);
      await dropRollupFunctions(db, 'product_days', FUNCTIONS, HELPERS);
      await sql`drop table sales.product_days`.execute(db);
    },
  };
}
