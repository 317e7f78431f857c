/**
 * A customer's history by index alone: query_metrics' customer dimensions (customer_orders,
 * customer_type, customer_since) read, for each order of a call, the customer's orders in the range and
 * the first of all its orders (src/metrics/statement.ts, the entity's lateral join). With the customer
 * and the time in one index, both are an index-only probe, whatever the customer's history holds.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const customerHistory: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create index orders_customer_time_idx on sales.orders (customer_id, ordered_at)`.execute(db);
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop index sales.orders_customer_time_idx`.execute(db);
  },
};
