/**
 * The rollups keep their sums per currency. Orders carry a currency, and a sum over two of them is no
 * figure at all (one JPY order of 150,000 beside a day of USD sales), so the currency joins each
 * rollup's key: sales.order_hours (hour, status, currency), sales.product_days (day, product_id,
 * status, currency) and sales.region_days (day, region, status, currency). The trigger functions,
 * their helpers and the rebuilds follow, an order whose currency changes moves its sums with it, and
 * the reporting views show the currency to the reader.
 *
 * `down` puts back the rollups of 0005, 0007 and 0008 as they were, sums across currencies included.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { exposeToReader, runAsOwner } from './rollup-support.js';

/** Trigger functions, replaced in place: they keep their names, so the triggers keep firing them. */
const TRIGGER_FUNCTIONS = [
  'order_hours_apply',
  'product_days_items',
  'product_days_orders',
  'product_days_order_deleted',
  'region_days_orders',
  'region_days_customers',
];
/** The helpers gain a currency argument, which makes them new functions: the old ones are dropped. */
const HELPERS = {
  perCurrency: [
    'sales.product_days_add(timestamptz, bigint, text, text, bigint, numeric)',
    'sales.product_days_order(bigint, timestamptz, text, text, integer)',
    'sales.region_days_add(timestamptz, text, text, text, bigint, numeric)',
  ],
  acrossCurrencies: [
    'sales.product_days_add(timestamptz, bigint, text, bigint, numeric)',
    'sales.product_days_order(bigint, timestamptz, text, integer)',
    'sales.region_days_add(timestamptz, text, text, bigint, numeric)',
  ],
};

interface Rollup {
  readonly table: string;
  readonly key: readonly string[];
  readonly figures: readonly string[];
  readonly nonEmpty: string;
}

const ROLLUPS: readonly Rollup[] = [
  {
    table: 'order_hours',
    key: ['hour', 'status'],
    figures: ['order_count', 'total_amount'],
    nonEmpty: 'order_count > 0',
  },
  { table: 'product_days', key: ['day', 'product_id', 'status'], figures: ['units', 'revenue'], nonEmpty: 'units > 0' },
  {
    table: 'region_days',
    key: ['day', 'region', 'status'],
    figures: ['order_count', 'total_amount'],
    nonEmpty: 'order_count > 0',
  },
];

/** The rollup tables emptied (rebuilt at the end) and keyed anew, with or without the currency. */
async function rekey(db: Kysely<unknown>, withCurrency: boolean): Promise<void> {
  for (const { table } of ROLLUPS) await sql`drop view ${sql.id('reporting', table)}`.execute(db);
  for (const { table, key } of ROLLUPS) {
    const name = sql.id('sales', table);
    await sql`truncate ${name}`.execute(db);
    await sql`alter table ${name} drop constraint ${sql.id(`${table}_pkey`)}`.execute(db);
    if (withCurrency) await sql`alter table ${name} add column currency char(3) not null`.execute(db);
    else await sql`alter table ${name} drop column currency`.execute(db);
    const columns = withCurrency ? [...key, 'currency'] : key;
    await sql`alter table ${name} add primary key (${sql.join(columns.map((c) => sql.id(c)))})`.execute(db);
  }
}

/** Each rollup filled again from the rows, and shown to the reader with or without the currency. */
async function rebuildAndExpose(db: Kysely<unknown>, role: string, withCurrency: boolean): Promise<void> {
  for (const { table, key, figures, nonEmpty } of ROLLUPS) {
    await sql`select ${sql.id('sales', `${table}_rebuild`)}()`.execute(db);
    const columns = withCurrency ? [...key, 'currency', ...figures] : [...key, ...figures];
    await exposeToReader(db, table, columns, nonEmpty, role);
  }
}

/** The same triggers, firing on a change of currency too, or not. */
async function triggers(db: Kysely<unknown>, withCurrency: boolean): Promise<void> {
  const currency = withCurrency ? sql`, currency` : sql``;
  await sql`
    create or replace trigger orders_order_hours
    after insert or delete or update of ordered_at, status, total_amount${currency}
    on sales.orders for each row execute function sales.order_hours_apply()`.execute(db);
  await sql`
    create or replace trigger orders_product_days after update of id, ordered_at, status${currency}
    on sales.orders for each row execute function sales.product_days_orders()`.execute(db);
  await sql`
    create or replace trigger orders_region_days
    after insert or delete or update of ordered_at, status, total_amount, customer_id${currency}
    on sales.orders for each row execute function sales.region_days_orders()`.execute(db);
}

async function perCurrencyFunctions(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function sales.order_hours_apply() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        update sales.order_hours
           set order_count = order_count - 1, total_amount = total_amount - old.total_amount
         where hour = date_trunc('hour', old.ordered_at, 'UTC') and status = old.status and currency = old.currency;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        insert into sales.order_hours (hour, status, currency, order_count, total_amount)
        values (date_trunc('hour', new.ordered_at, 'UTC'), new.status, new.currency, 1, new.total_amount)
        on conflict (hour, status, currency) do update
          set order_count = sales.order_hours.order_count + 1,
              total_amount = sales.order_hours.total_amount + excluded.total_amount;
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function sales.order_hours_rebuild() returns void language sql as $$
      delete from sales.order_hours;
      insert into sales.order_hours (hour, status, currency, order_count, total_amount)
      select date_trunc('hour', ordered_at, 'UTC'), status, currency, count(*), sum(total_amount)
        from sales.orders group by 1, 2, 3;
    $$`.execute(db);

  await sql`
    create function sales.product_days_add(p_day timestamptz, p_product bigint, p_status text, p_currency text,
                                           p_units bigint, p_revenue numeric)
    returns void language sql as $$
      insert into sales.product_days (day, product_id, status, currency, units, revenue)
      values (p_day, p_product, p_status, p_currency, p_units, p_revenue)
      on conflict (day, product_id, status, currency) do update
        set units = sales.product_days.units + excluded.units,
            revenue = sales.product_days.revenue + excluded.revenue;
    $$`.execute(db);
  await sql`
    create function sales.product_days_order(p_order bigint, p_at timestamptz, p_status text, p_currency text,
                                             p_sign integer)
    returns void language plpgsql as $$
    begin
      perform sales.product_days_add(date_trunc('day', p_at, 'UTC'), i.product_id, p_status, p_currency,
                                     p_sign * i.quantity, p_sign * i.quantity * i.unit_price)
         from sales.order_items i where i.order_id = p_order;
    end $$`.execute(db);
  // As in 0007: the order is locked FOR SHARE while its day, status and currency place the item.
  await sql`
    create or replace function sales.product_days_items() returns trigger language plpgsql as $$
    declare
      o record;
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        select ordered_at, status, currency into o from sales.orders where id = old.order_id for share;
        if found then
          perform sales.product_days_add(date_trunc('day', o.ordered_at, 'UTC'), old.product_id, o.status, o.currency,
                                         -old.quantity, -(old.quantity * old.unit_price));
        end if;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        select ordered_at, status, currency into o from sales.orders where id = new.order_id for share;
        if found then
          perform sales.product_days_add(date_trunc('day', o.ordered_at, 'UTC'), new.product_id, o.status, o.currency,
                                         new.quantity, new.quantity * new.unit_price);
        end if;
      end if;
      return null;
    end $$`.execute(db);
  // An order that moves to another UTC day, status or currency moves its items with it.
  await sql`
    create or replace function sales.product_days_orders() returns trigger language plpgsql as $$
    begin
      if date_trunc('day', old.ordered_at, 'UTC') = date_trunc('day', new.ordered_at, 'UTC')
         and old.status = new.status and old.currency = new.currency and old.id = new.id then
        return null;
      end if;
      perform sales.product_days_order(old.id, old.ordered_at, old.status, old.currency, -1);
      perform sales.product_days_order(new.id, new.ordered_at, new.status, new.currency, 1);
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function sales.product_days_order_deleted() returns trigger language plpgsql as $$
    begin
      perform sales.product_days_order(old.id, old.ordered_at, old.status, old.currency, -1);
      return old;
    end $$`.execute(db);
  await sql`
    create or replace function sales.product_days_rebuild() returns void language sql as $$
      delete from sales.product_days;
      insert into sales.product_days (day, product_id, status, currency, units, revenue)
      select date_trunc('day', o.ordered_at, 'UTC'), i.product_id, o.status, o.currency,
             sum(i.quantity), sum(i.quantity * i.unit_price)
        from sales.orders o join sales.order_items i on i.order_id = o.id
       group by 1, 2, 3, 4;
    $$`.execute(db);

  await sql`
    create function sales.region_days_add(p_day timestamptz, p_region text, p_status text, p_currency text,
                                          p_count bigint, p_amount numeric)
    returns void language sql as $$
      insert into sales.region_days (day, region, status, currency, order_count, total_amount)
      values (p_day, p_region, p_status, p_currency, p_count, p_amount)
      on conflict (day, region, status, currency) do update
        set order_count = sales.region_days.order_count + excluded.order_count,
            total_amount = sales.region_days.total_amount + excluded.total_amount;
    $$`.execute(db);
  // As in 0008: the customer is locked FOR SHARE first, then its region used.
  await sql`
    create or replace function sales.region_days_orders() returns trigger language plpgsql as $$
    declare
      r text;
    begin
      if tg_op in ('UPDATE', 'DELETE') then
        select region into r from sales.customers where id = old.customer_id for share;
        if found then
          perform sales.region_days_add(date_trunc('day', old.ordered_at, 'UTC'), r, old.status, old.currency,
                                        -1, -old.total_amount);
        end if;
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        select region into r from sales.customers where id = new.customer_id for share;
        if found then
          perform sales.region_days_add(date_trunc('day', new.ordered_at, 'UTC'), r, new.status, new.currency,
                                        1, new.total_amount);
        end if;
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function sales.region_days_customers() returns trigger language plpgsql as $$
    begin
      if old.region is not distinct from new.region and old.id = new.id then
        return null;
      end if;
      perform sales.region_days_add(g.day, old.region, g.status, g.currency, -g.n, -g.amount)
         from (select date_trunc('day', o.ordered_at, 'UTC') as day, o.status, o.currency,
                      count(*) as n, sum(o.total_amount) as amount
                 from sales.orders o where o.customer_id = old.id group by 1, 2, 3) g;
      perform sales.region_days_add(g.day, new.region, g.status, g.currency, g.n, g.amount)
         from (select date_trunc('day', o.ordered_at, 'UTC') as day, o.status, o.currency,
                      count(*) as n, sum(o.total_amount) as amount
                 from sales.orders o where o.customer_id = new.id group by 1, 2, 3) g;
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function sales.region_days_rebuild() returns void language sql as $$
      delete from sales.region_days;
      insert into sales.region_days (day, region, status, currency, order_count, total_amount)
      select date_trunc('day', o.ordered_at, 'UTC'), c.region, o.status, o.currency, count(*), sum(o.total_amount)
        from sales.orders o join sales.customers c on c.id = o.customer_id
       group by 1, 2, 3, 4;
    $$`.execute(db);
}

/** The functions exactly as 0005, 0007 and 0008 created them. */
async function acrossCurrenciesFunctions(db: Kysely<unknown>): Promise<void> {
  await sql`
    create or replace function sales.order_hours_apply() returns trigger language plpgsql as $$
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
    create or replace function sales.order_hours_rebuild() returns void language sql as $$
      delete from sales.order_hours;
      insert into sales.order_hours (hour, status, order_count, total_amount)
      select date_trunc('hour', ordered_at, 'UTC'), status, count(*), sum(total_amount)
        from sales.orders group by 1, 2;
    $$`.execute(db);

  await sql`
    create function sales.product_days_add(p_day timestamptz, p_product bigint, p_status text, p_units bigint, p_revenue numeric)
    returns void language sql as $$
      insert into sales.product_days (day, product_id, status, units, revenue)
      values (p_day, p_product, p_status, p_units, p_revenue)
      on conflict (day, product_id, status) do update
        set units = sales.product_days.units + excluded.units,
            revenue = sales.product_days.revenue + excluded.revenue;
    $$`.execute(db);
  await sql`
    create function sales.product_days_order(p_order bigint, p_at timestamptz, p_status text, p_sign integer)
    returns void language plpgsql as $$
    begin
      perform sales.product_days_add(date_trunc('day', p_at, 'UTC'), i.product_id, p_status,
                                     p_sign * i.quantity, p_sign * i.quantity * i.unit_price)
         from sales.order_items i where i.order_id = p_order;
    end $$`.execute(db);
  await sql`
    create or replace function sales.product_days_items() returns trigger language plpgsql as $$
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
  await sql`
    create or replace function sales.product_days_orders() returns trigger language plpgsql as $$
    begin
      if date_trunc('day', old.ordered_at, 'UTC') = date_trunc('day', new.ordered_at, 'UTC')
         and old.status = new.status and old.id = new.id then
        return null;
      end if;
      perform sales.product_days_order(old.id, old.ordered_at, old.status, -1);
      perform sales.product_days_order(new.id, new.ordered_at, new.status, 1);
      return null;
    end $$`.execute(db);
  await sql`
    create or replace function sales.product_days_order_deleted() returns trigger language plpgsql as $$
    begin
      perform sales.product_days_order(old.id, old.ordered_at, old.status, -1);
      return old;
    end $$`.execute(db);
  await sql`
    create or replace function sales.product_days_rebuild() returns void language sql as $$
      delete from sales.product_days;
      insert into sales.product_days (day, product_id, status, units, revenue)
      select date_trunc('day', o.ordered_at, 'UTC'), i.product_id, o.status, sum(i.quantity), sum(i.quantity * i.unit_price)
        from sales.orders o join sales.order_items i on i.order_id = o.id
       group by 1, 2, 3;
    $$`.execute(db);

  await sql`
    create function sales.region_days_add(p_day timestamptz, p_region text, p_status text, p_count bigint, p_amount numeric)
    returns void language sql as $$
      insert into sales.region_days (day, region, status, order_count, total_amount)
      values (p_day, p_region, p_status, p_count, p_amount)
      on conflict (day, region, status) do update
        set order_count = sales.region_days.order_count + excluded.order_count,
            total_amount = sales.region_days.total_amount + excluded.total_amount;
    $$`.execute(db);
  await sql`
    create or replace function sales.region_days_orders() returns trigger language plpgsql as $$
    declare
      r text;
    begin
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
  await sql`
    create or replace function sales.region_days_customers() returns trigger language plpgsql as $$
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
    create or replace function sales.region_days_rebuild() returns void language sql as $$
      delete from sales.region_days;
      insert into sales.region_days (day, region, status, order_count, total_amount)
      select date_trunc('day', o.ordered_at, 'UTC'), c.region, o.status, count(*), sum(o.total_amount)
        from sales.orders o join sales.customers c on c.id = o.customer_id
       group by 1, 2, 3;
    $$`.execute(db);
}

export function rollupCurrency(role: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await rekey(db, true);
      for (const helper of HELPERS.acrossCurrencies) await sql`drop function ${sql.raw(helper)}`.execute(db);
      await perCurrencyFunctions(db);
      // A replaced function loses SECURITY DEFINER and its search_path: given back, as 0006-0008 did.
      await runAsOwner(db, TRIGGER_FUNCTIONS, HELPERS.perCurrency);
      await triggers(db, true);
      await rebuildAndExpose(db, role, true);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await rekey(db, false);
      for (const helper of HELPERS.perCurrency) await sql`drop function ${sql.raw(helper)}`.execute(db);
      await acrossCurrenciesFunctions(db);
      await runAsOwner(db, TRIGGER_FUNCTIONS, HELPERS.acrossCurrencies);
      await triggers(db, false);
      await rebuildAndExpose(db, role, false);
    },
  };
}
