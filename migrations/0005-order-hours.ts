/**
 * An hourly rollup of orders by status, kept exact by triggers in the same transaction as every
 * change to sales.orders. Counts and sales per day, week or month then read at most 24 x 90 x 5
 * rows, however many orders there are. Hours are UTC hours, which are whole hours in every time zone
 * whose offset is a whole number of hours; the templates fall back to the raw orders otherwise.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function orderHours(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`
        create table sales.order_hours (
          hour timestamptz not null,
          status text not null,
          order_count bigint not null,
          total_amount numeric(16, 2) not null,
          primary key (hour, status)
        )`.execute(db);
      await sql`
        create function sales.order_hours_apply() returns trigger language plpgsql as $$
        begin
          if tg_op in ('UPDATE', 'DELETE') then
            update sales.order_hours
               set order_count = order_count - 1, total_amount = total_amount - old.total_amount
             where hour = date_trunc('hour', old.ordered_at, 'UTC') and status = old.status;
          end if;
          if tg_op in ('INSERT', 'UPDATE') then
            insert into sales.order_hours (hour, status, order_count, total_amount)
            values (date_trunc('hour', new.ordered_at, 'UTC'), new.status, 1, new.total_amount)
            on conflict (hour, status) do update
              set order_count = sales.order_hours.order_count + 1,
                  total_amount = sales.order_hours.total_amount + excluded.total_amount;
          end if;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.order_hours_rebuild() returns void language sql as $$
          delete from sales.order_hours;
          insert into sales.order_hours (hour, status, order_count, total_amount)
          select date_trunc('hour', ordered_at, 'UTC'), status, count(*), sum(total_amount)
            from sales.orders group by 1, 2;
        $$`.execute(db);
      await sql`
        create trigger orders_order_hours after insert or delete or update of ordered_at, status, total_amount
        on sales.orders for each row execute function sales.order_hours_apply()`.execute(db);
      await sql`
        create function sales.order_hours_truncate() returns trigger language plpgsql as $$
        begin
          truncate sales.order_hours;
          return null;
        end $$`.execute(db);
      await sql`
        create trigger orders_order_hours_truncate after truncate on sales.orders
        for each statement execute function sales.order_hours_truncate()`.execute(db);
      await sql`select sales.order_hours_rebuild()`.execute(db);
      await sql`
        create view reporting.order_hours as
        select hour, status, order_count, total_amount from sales.order_hours where order_count > 0`.execute(db);
      await sql`revoke all on reporting.order_hours from public`.execute(db);
      await sql`grant select (hour, status, order_count, total_amount) on reporting.order_hours to ${reader}`.execute(
        db,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop view reporting.order_hours`.execute(db);
      await sql`drop trigger orders_order_hours_truncate on sales.orders`.execute(db);
      await sql`drop trigger orders_order_hours on sales.orders`.execute(db);
      await sql`drop function sales.order_hours_truncate(), sales.order_hours_rebuild(), sales.order_hours_apply()`.execute(
        db,
      );
      await sql`drop table sales.order_hours`.execute(db);
    },
  };
}
