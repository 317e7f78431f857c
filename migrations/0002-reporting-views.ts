/**
 * The reporting schema: the only tables the reader role sees. Personal data is masked here,
 * at the source, so that even a direct connection as the reader never reads it raw.
 */
import { sql, type Kysely, type Migration } from 'kysely';

/**
 * The customers as this migration's view gives them, masked as they are read. Migration 0012 stores
 * the same masks with each customer; its down migration, and the test that holds the two equal, use this.
 */
export const customersMaskedOnRead = sql`
      select
        c.id,
        c.region,
        (select coalesce(string_agg(upper(left(part, 1)) || '.', '' order by n), '')
           from unnest(regexp_split_to_array(c.name, '[[:space:].''-]+')) with ordinality as w (part, n)
          where part <> '') as name_initials,
        case when position('@' in c.email) > 1
             then left(c.email, 1) || '***@' || regexp_replace(c.email, '^.*@', '')
             else '***' end as email_masked,
        right(regexp_replace(c.phone, '[^0-9]', '', 'g'), 4) as phone_last4,
        c.created_at
      from sales.customers as c`;

export const reportingViews: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create schema if not exists reporting`.execute(db);
    await sql`
      create view reporting.orders as
      select id, customer_id, status, ordered_at, currency, total_amount from sales.orders`.execute(db);
    await sql`
      create view reporting.order_items as
      select order_id, product_id, quantity, unit_price from sales.order_items`.execute(db);
    await sql`
      create view reporting.products as
      select id, sku, name, category, unit_price from sales.products`.execute(db);
    await sql`create view reporting.customers as ${customersMaskedOnRead}`.execute(db);
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await sql`drop schema reporting cascade`.execute(db);
  },
};
