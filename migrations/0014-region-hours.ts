/**
 * An hourly rollup of orders by customer region, status and currency, kept exact by triggers in the
 * same transaction as every change to sales.orders and to a customer's region, so that a caller
 * scoped to some regions reads its sales by day, week or month (and its order counts) from a rollup,
 * as an unscoped caller reads sales.order_hours, in any reporting time zone: a local day is whole UTC
 * hours in every zone but those whose offset is not whole hours, whose edges the orders give.
 *
 * sales.region_hours (region, hour, status, currency) is sales.region_days (0008, 0010) an hour at a
 * time, keyed region first, since a scoped caller reads one or a few regions over a range of hours.
 * Its triggers are region_days' own, hour for day: an order's trigger locks its customer FOR SHARE
 * and then reads the region, a customer that changes region moves its orders' sums from the old
 * region to the new, and an order added or pointed at another customer touches that customer first
 * (0009), so a stale change of the customer is refused with 40001 at REPEATABLE READ and SERIALIZABLE.
 * Both rollups' triggers take the same locks on the same rows, so writers queue as they did.
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
const FUNCTIONS = ['region_hours_orders', 'region_hours_customers', 'region_hours_truncate'];
/** Called only from the trigger functions. */
const HELPERS = ['sales.region_hours_add(timestamptz, text, text, text, bigint, numeric)'];
const TRIGGERS: readonly RowTrigger[] = [
  {
    table: 'orders',
    name: 'orders_region_hours',
    when: 'after insert or delete or update of ordered_at, status, total_amount, customer_id, currency',
    fn: 'region_hours_orders',
  },
  {
    table: 'customers',
    name: 'customers_region_hours',
    when: 'after update of id, region',
    fn: 'region_hours_customers',
  },
];
const COLUMNS = ['region', 'hour', 'status', 'currency', 'order_count', 'total_amount'];

export function regionHours(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`
        create table sales.region_hours (
          region text not null,
          hour timestamptz not null,
          status text not null,
          currency char(3) not null,
          order_count bigint not null,
          total_amount numeric(18, 2) not null,
          primary key (region, hour, status, currency)
        )`.execute(db);
      await sql`
        create function sales.region_hours_add(p_hour timestamptz, p_region text, p_status text, p_currency text,
                                               p_count bigint, p_amount numeric)
        returns void language sql as $$
          insert into sales.region_hours (region, hour, status, currency, order_count, total_amount)
          values (p_region, p_hour, p_status, p_currency, p_count, p_amount)
          on conflict (region, hour, status, currency) do update
            set order_count = sales.region_hours.order_count + excluded.order_count,
                total_amount = sales.region_hours.total_amount + excluded.total_amount;
        $$`.execute(db);
      // As region_days_orders: the customer is locked FOR SHARE first, then its region used.
      await sql`
        create function sales.region_hours_orders() returns trigger language plpgsql as $$
        declare
          r text;
        begin
          if tg_op in ('UPDATE', 'DELETE') then
            select region into r from sales.customers where id = old.customer_id for share;
            if found then
              perform sales.region_hours_add(date_trunc('hour', old.ordered_at, 'UTC'), r, old.status, old.currency,
                                             -1, -old.total_amount);
            end if;
          end if;
          if tg_op in ('INSERT', 'UPDATE') then
            select region into r from sales.customers where id = new.customer_id for share;
            if found then
              perform sales.region_hours_add(date_trunc('hour', new.ordered_at, 'UTC'), r, new.status, new.currency,
                                             1, new.total_amount);
            end if;
          end if;
          return null;
        end $$`.execute(db);
      // As region_days_customers: a customer's orders move, as they stand, from its old region to its new.
      await sql`
        create function sales.region_hours_customers() returns trigger language plpgsql as $$
        begin
          if old.region is not distinct from new.region and old.id = new.id then
            return null;
          end if;
          perform sales.region_hours_add(g.hour, old.region, g.status, g.currency, -g.n, -g.amount)
             from (select date_trunc('hour', o.ordered_at, 'UTC') as hour, o.status, o.currency,
                          count(*) as n, sum(o.total_amount) as amount
                     from sales.orders o where o.customer_id = old.id group by 1, 2, 3) g;
          perform sales.region_hours_add(g.hour, new.region, g.status, g.currency, g.n, g.amount)
             from (select date_trunc('hour', o.ordered_at, 'UTC') as hour, o.status, o.currency,
                          count(*) as n, sum(o.total_amount) as amount
                     from sales.orders o where o.customer_id = new.id group by 1, 2, 3) g;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.region_hours_truncate() returns trigger language plpgsql as $$
        begin
          truncate sales.region_hours;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.region_hours_rebuild() returns void language sql as $$
          delete from sales.region_hours;
          insert into sales.region_hours (region, hour, status, currency, order_count, total_amount)
          select c.region, date_trunc('hour', o.ordered_at, 'UTC'), o.status, o.currency, count(*), sum(o.total_amount)
            from sales.orders o join sales.customers c on c.id = o.customer_id
           group by 1, 2, 3, 4;
        $$`.execute(db);
      await runAsOwner(db, FUNCTIONS, HELPERS);
      await createRowTriggers(db, TRIGGERS);
      await emptiedWith(db, 'region_hours', ['orders', 'customers']);
      await sql`select sales.region_hours_rebuild()`.execute(db);
      await exposeToReader(db, 'region_hours', COLUMNS, 'order_count > 0', role);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop view reporting.region_hours`.execute(db);
      await dropEmptiedWith(db, 'region_hours', ['orders', 'customers']);
      await dropRowTriggers(db, TRIGGERS);
      await dropRollupFunctions(db, 'region_hours', FUNCTIONS, HELPERS);
      await sql`drop table sales.region_hours`.execute(db);
    },
  };
}
