/**
 * A daily rollup of net sales by product category, kept exact by triggers in the same transaction as
 * every change to sales.order_items, to the orders they belong to and to a product's category. Sales
 * by category over 90 days then read at most 90 x categories x 5 rows per currency, however many
 * orders there are. Days are UTC days; a range in another zone reads its partial first and last UTC
 * day from the items themselves.
 *
 * sales.category_days (day, category, status, currency) holds order_count, the orders holding at least
 * one item of the category, and revenue, the sum of quantity x unit_price of those items. The count
 * does not add up across items: an order with two items of a category counts once, and losing one of
 * them must leave it counted while the other remains. So the triggers keep, beside the rollup, each
 * order's items per category: sales.order_categories (order_id, category) holds how many items of the
 * category the order has and their revenue. An item in or out changes that row by one; the order
 * enters the category's count when its row is created (0 -> 1 items) and leaves it when the row is
 * deleted (1 -> 0). The rollup is that table summed per day, status and currency of its orders, so an
 * order that moves to another UTC day, status or currency moves its rows as they stand, without
 * reading a product. Recomputing an (order, category) from the items instead would be wrong for a
 * statement that deletes two items of one category at once: both after-row triggers would find none
 * left and take the order out twice. Each change to a row of sales.order_categories is one atomic
 * upsert that returns the new count, so two writers to it queue on it (READ COMMITTED) or the later
 * is refused (REPEATABLE READ, SERIALIZABLE), and the count moves by one at a time in any order.
 *
 * Locks, as 0007, 0008 and 0009 take them, one parent more:
 * - An item's trigger locks its order FOR SHARE (its day, status and currency place the item) and
 *   its product FOR SHARE (its category does), each locked first and then read; a change of either
 *   waits for the item's transaction, or the item's for it.
 * - A product that changes category locks the orders of its items FOR SHARE, in id order, before it
 *   reads them, then moves each item from the old category to the new; an order changing at the same
 *   time waits for it, or it for the order.
 * - An order that moves reads its rows of sales.order_categories, which only writers holding a lock
 *   on the order change. An order deleted takes its rows out before it goes, while it is locked; its
 *   items, deleted by the foreign key's cascade, find no order and change nothing.
 * - As 0009 touches orders and customers, an item added, or moved to another product, touches its
 *   product, and a change of the product's category touches it too, so that the change, on a snapshot
 *   older than that item, is refused with 40001 at REPEATABLE READ and SERIALIZABLE instead of leaving
 *   the item in the old category. The touch writes the product's row of sales.product_touches, not the
 *   product: every item's writer reads sales.products (its foreign key, its category), and at
 *   SERIALIZABLE a small table is read whole, so writing a product for every item would refuse any two
 *   transactions adding items at once. Both touches are upserts, which read with no snapshot and
 *   refuse a row that a transaction committed after theirs wrote. Every other stale write meets a row
 *   of sales.order_categories or of the rollup that the other transaction changed, or an order it
 *   changed, and is refused there.
 * The cost: two transactions adding items of one product (to any orders) at once cannot both commit
 * at REPEATABLE READ or SERIALIZABLE, and at READ COMMITTED the later waits for the earlier to commit;
 * such items usually share a row of sales.product_days already. Writers to items of one category on
 * one UTC day, status and currency queue on that row of the rollup, as orders of one hour do on
 * sales.order_hours.
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
const FUNCTIONS = [
  'category_days_items',
  'category_days_orders',
  'category_days_order_deleted',
  'category_days_products',
  'category_days_truncate',
];
/** Called only from the trigger functions. */
const HELPERS = [
  'sales.category_days_touch(bigint)',
  'sales.category_days_add(timestamptz, text, text, text, bigint, numeric)',
  'sales.category_days_item(bigint, text, timestamptz, text, text, integer, numeric)',
];
const TRIGGERS: readonly RowTrigger[] = [
  {
    table: 'order_items',
    name: 'order_items_category_days',
    when: 'after insert or delete or update',
    fn: 'category_days_items',
  },
  {
    table: 'orders',
    name: 'orders_category_days',
    when: 'after update of id, ordered_at, status, currency',
    fn: 'category_days_orders',
  },
  { table: 'orders', name: 'orders_category_days_delete', when: 'before delete', fn: 'category_days_order_deleted' },
  {
    table: 'products',
    name: 'products_category_days',
    when: 'after update of id, category',
    fn: 'category_days_products',
  },
];
const EMPTIED_WITH = ['orders', 'order_items', 'products'];

export function categoryDays(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`
        create table sales.category_days (
          day timestamptz not null,
          category text not null,
          status text not null,
          currency char(3) not null,
          order_count bigint not null,
          revenue numeric(18, 2) not null,
          primary key (day, category, status, currency)
        )`.execute(db);
      await sql`
        create table sales.order_categories (
          order_id bigint not null,
          category text not null,
          items bigint not null,
          revenue numeric(18, 2) not null,
          primary key (order_id, category)
        )`.execute(db);
      await sql`create table sales.product_touches (product_id bigint primary key)`.execute(db);
      // A new version of the product's row, whoever wrote the last; 40001 at REPEATABLE READ and
      // SERIALIZABLE when that was a transaction committed after this one's snapshot.
      await sql`
        create function sales.category_days_touch(p_product bigint) returns void language sql as $$
          insert into sales.product_touches (product_id) values (p_product)
          on conflict (product_id) do update set product_id = excluded.product_id;
        $$`.execute(db);
      await sql`
        create function sales.category_days_add(p_day timestamptz, p_category text, p_status text, p_currency text,
                                                p_count bigint, p_revenue numeric)
        returns void language sql as $$
          insert into sales.category_days (day, category, status, currency, order_count, revenue)
          values (p_day, p_category, p_status, p_currency, p_count, p_revenue)
          on conflict (day, category, status, currency) do update
            set order_count = sales.category_days.order_count + excluded.order_count,
                revenue = sales.category_days.revenue + excluded.revenue;
        $$`.execute(db);
      // One item in (p_items 1) or out (-1) of its order's row for the category, and of the rollup row
      // its order puts it in: the order counts there from its first item of the category to its last.
      await sql`
        create function sales.category_days_item(p_order bigint, p_category text, p_day timestamptz, p_status text,
                                                 p_currency text, p_items integer, p_revenue numeric)
        returns void language plpgsql as $$
        declare
          n bigint;
        begin
          insert into sales.order_categories as c (order_id, category, items, revenue)
          values (p_order, p_category, p_items, p_revenue)
          on conflict (order_id, category) do update
            set items = c.items + excluded.items, revenue = c.revenue + excluded.revenue
          returning c.items into n;
          if n = 0 then
            delete from sales.order_categories where order_id = p_order and category = p_category;
          end if;
          perform sales.category_days_add(p_day, p_category, p_status, p_currency,
                                          case when p_items > 0 and n = 1 then 1
                                               when p_items < 0 and n = 0 then -1
                                               else 0 end,
                                          p_revenue);
        end $$`.execute(db);
      // Items: the order and the product are locked FOR SHARE first, then read (a locking select
      // re-reads a row it had to wait for). An item deleted with its order finds no order:
      // category_days_order_deleted took it out already.
      await sql`
        create function sales.category_days_items() returns trigger language plpgsql as $$
        declare
          o record;
          c text;
        begin
          if tg_op in ('UPDATE', 'DELETE') then
            select ordered_at, status, currency into o from sales.orders where id = old.order_id for share;
            if found then
              select category into c from sales.products where id = old.product_id for share;
              perform sales.category_days_item(old.order_id, c, date_trunc('day', o.ordered_at, 'UTC'), o.status,
                                               o.currency, -1, -(old.quantity * old.unit_price));
            end if;
          end if;
          if tg_op in ('INSERT', 'UPDATE') then
            select ordered_at, status, currency into o from sales.orders where id = new.order_id for share;
            if found then
              select category into c from sales.products where id = new.product_id for share;
              if tg_op = 'INSERT' then
                perform sales.category_days_touch(new.product_id);
              elsif old.product_id is distinct from new.product_id then
                perform sales.category_days_touch(new.product_id);
              end if;
              perform sales.category_days_item(new.order_id, c, date_trunc('day', o.ordered_at, 'UTC'), o.status,
                                               o.currency, 1, new.quantity * new.unit_price);
            end if;
          end if;
          return null;
        end $$`.execute(db);
      // An order that moves to another UTC day, status or currency moves its categories with it (and
      // one whose id changes, the items that now point at it: taken out by the old id, in by the new).
      await sql`
        create function sales.category_days_orders() returns trigger language plpgsql as $$
        begin
          if date_trunc('day', old.ordered_at, 'UTC') = date_trunc('day', new.ordered_at, 'UTC')
             and old.status = new.status and old.currency = new.currency and old.id = new.id then
            return null;
          end if;
          perform sales.category_days_add(date_trunc('day', old.ordered_at, 'UTC'), c.category, old.status,
                                          old.currency, -1, -c.revenue)
             from sales.order_categories c where c.order_id = old.id;
          perform sales.category_days_add(date_trunc('day', new.ordered_at, 'UTC'), c.category, new.status,
                                          new.currency, 1, c.revenue)
             from sales.order_categories c where c.order_id = new.id;
          return null;
        end $$`.execute(db);
      // Before an order goes, locked, while its rows can still be read: they leave with it.
      await sql`
        create function sales.category_days_order_deleted() returns trigger language plpgsql as $$
        begin
          perform sales.category_days_add(date_trunc('day', old.ordered_at, 'UTC'), c.category, old.status,
                                          old.currency, -1, -c.revenue)
             from sales.order_categories c where c.order_id = old.id;
          delete from sales.order_categories where order_id = old.id;
          return old;
        end $$`.execute(db);
      // A product that changes category takes its items to the new one (and one whose id changes, the
      // items that now point at it). It is touched, and its items' orders are locked, in one order,
      // before they are read.
      await sql`
        create function sales.category_days_products() returns trigger language plpgsql as $$
        begin
          if old.category = new.category and old.id = new.id then
            return null;
          end if;
          perform sales.category_days_touch(old.id);
          if new.id <> old.id then
            perform sales.category_days_touch(new.id);
          end if;
          perform 1 from sales.orders o
            where o.id in (select i.order_id from sales.order_items i where i.product_id in (old.id, new.id))
            order by o.id for share of o;
          perform sales.category_days_item(i.order_id, old.category, date_trunc('day', o.ordered_at, 'UTC'), o.status,
                                           o.currency, -1, -(i.quantity * i.unit_price))
             from sales.order_items i join sales.orders o on o.id = i.order_id where i.product_id = old.id;
          perform sales.category_days_item(i.order_id, new.category, date_trunc('day', o.ordered_at, 'UTC'), o.status,
                                           o.currency, 1, i.quantity * i.unit_price)
             from sales.order_items i join sales.orders o on o.id = i.order_id where i.product_id = new.id;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.category_days_truncate() returns trigger language plpgsql as $$
        begin
          truncate sales.category_days, sales.order_categories, sales.product_touches;
          return null;
        end $$`.execute(db);
      await sql`
        create function sales.category_days_rebuild() returns void language sql as $$
          delete from sales.order_categories;
          insert into sales.order_categories (order_id, category, items, revenue)
          select i.order_id, p.category, count(*), sum(i.quantity * i.unit_price)
            from sales.order_items i join sales.products p on p.id = i.product_id
           group by 1, 2;
          delete from sales.category_days;
          insert into sales.category_days (day, category, status, currency, order_count, revenue)
          select date_trunc('day', o.ordered_at, 'UTC'), c.category, o.status, o.currency, count(*), sum(c.revenue)
            from sales.orders o join sales.order_categories c on c.order_id = o.id
           group by 1, 2, 3, 4;
        $$`.execute(db);
      await runAsOwner(db, FUNCTIONS, HELPERS);
      await createRowTriggers(db, TRIGGERS);
      await emptiedWith(db, 'category_days', EMPTIED_WITH);
      await sql`select sales.category_days_rebuild()`.execute(db);
      await exposeToReader(
        db,
        'category_days',
        ['day', 'category', 'status', 'currency', 'order_count', 'revenue'],
        'order_count > 0',
        role,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`drop view reporting.category_days`.execute(db);
      await dropEmptiedWith(db, 'category_days', EMPTIED_WITH);
      await dropRowTriggers(db, TRIGGERS);
      await dropRollupFunctions(db, 'category_days', FUNCTIONS, HELPERS);
      await sql`drop table sales.category_days, sales.order_categories, sales.product_touches`.execute(db);
    },
  };
}
