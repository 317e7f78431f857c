/**
 * The daily rollups exact at REPEATABLE READ and SERIALIZABLE too. Their triggers read related rows
 * with the writer's snapshot. A row added to an order or a customer (an item, an order, or one
 * pointed at them) now also writes a new version of that order or customer, so a transaction whose
 * snapshot predates it, and which then changes that order or customer, fails with 40001 instead of
 * moving the rows it can see and leaving the new one behind.
 *
 * Why only rows added: a row that already existed, when changed or deleted, changed the rollup row
 * of its old day, product or region and status, and the stale transaction's trigger takes that same
 * rollup row out when it moves the rows it sees; PostgreSQL then refuses it with 40001 already (a
 * rollup row updated since the snapshot). And the other way round, a write on a snapshot older than
 * a change of the order or customer fails already at its FOR SHARE lock (0007, 0008). Touching the
 * parent only for rows added keeps writers that change different existing rows of one order apart.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { runAsOwner } from './rollup-support.js';

const FUNCTIONS = ['order_items_touch_order', 'orders_touch_customer'];

/** On the table named first; the function touches the parent the new row points at. */
const TRIGGERS = [
  ['order_items', 'order_items_touch_order'],
  ['order_items', 'order_items_touch_new_order'],
  ['orders', 'orders_touch_customer'],
  ['orders', 'orders_touch_new_customer'],
] as const;

export function rollupIsolation(): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // "set id = id" changes nothing, and sets none of the columns the rollups' own update triggers
      // watch but id: orders_product_days and customers_region_days fire and return at once.
      await sql`
        create function sales.order_items_touch_order() returns trigger language plpgsql as $$
        begin
          update sales.orders set id = id where id = new.order_id;
          return new;
        end $$`.execute(db);
      await sql`
        create function sales.orders_touch_customer() returns trigger language plpgsql as $$
        begin
          update sales.customers set id = id where id = new.customer_id;
          return new;
        end $$`.execute(db);
      await runAsOwner(db, FUNCTIONS, []);
      // Before the row is written, so that the parent is locked for update before the rollup triggers
      // lock it FOR SHARE: two writers each holding it FOR SHARE and then wanting more would deadlock.
      // An update touches the parent only when the row now points at another one.
      await sql`
        create trigger order_items_touch_order before insert on sales.order_items
        for each row execute function sales.order_items_touch_order()`.execute(db);
      await sql`
        create trigger order_items_touch_new_order before update of order_id on sales.order_items
        for each row when (old.order_id is distinct from new.order_id)
        execute function sales.order_items_touch_order()`.execute(db);
      await sql`
        create trigger orders_touch_customer before insert on sales.orders
        for each row execute function sales.orders_touch_customer()`.execute(db);
      await sql`
        create trigger orders_touch_new_customer before update of customer_id on sales.orders
        for each row when (old.customer_id is distinct from new.customer_id)
        execute function sales.orders_touch_customer()`.execute(db);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      for (const [table, trigger] of TRIGGERS) {
        await sql`drop trigger ${sql.id(trigger)} on ${sql.id('sales', table)}`.execute(db);
      }
      for (const fn of FUNCTIONS) await sql`drop function ${sql.id('sales', fn)}()`.execute(db);
    },
  };
}
