/**
 * Narrows the reader from whole views to the columns the templates read: a template that needs
 * another column must say so here, in a migration, where a reviewer sees it.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerColumns(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`revoke all on reporting.orders, reporting.order_items, reporting.products, reporting.customers from ${reader}`.execute(
        db,
      );
      await sql`grant select (id, customer_id, status, ordered_at, currency, total_amount) on reporting.orders to ${reader}`.execute(
        db,
      );
      await sql`grant select (order_id, product_id, quantity, unit_price) on reporting.order_items to ${reader}`.execute(
        db,
      );
      await sql`grant select (id, sku, name, category) on reporting.products to ${reader}`.execute(db);
      await sql`grant select (id, region, name_initials, email_masked, phone_last4) on reporting.customers to ${reader}`.execute(
        db,
      );
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql`grant select on reporting.orders, reporting.order_items, reporting.products, reporting.customers to ${reader}`.execute(
        db,
      );
    },
  };
}
