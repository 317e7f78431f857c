/**
 * Issue 31: two transactions change the category of two products that share orders, at once. The
 * products' trigger (0013) locked the shared orders FOR SHARE, then the generated touch of
 * sales.order_categories (0015, region_category_days) updated them: each transaction held the share
 * lock the other's update waited for, and every round at READ COMMITTED ended in a deadlock (40P01).
 * Each round here commits both, and the rollups equal their base rows after.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const ROUNDS = 20;
const SHARED_ORDERS = 200;

describe('issue 31: two recategorizations of products that share orders', () => {
  let scratch: ScratchDatabase;

  beforeAll(async () => {
    scratch = await createScratchDatabase('i31_deadlock');
    await scratch.admin.query(`
      insert into sales.customers (id, name, email, phone, region)
        values (1, 'A B', 'a@example.com', '+1 555 000-0001', 'Europe');
      insert into sales.products (id, sku, name, category, unit_price)
        values (1, 'P-1', 'One', 'Home', 3), (2, 'P-2', 'Two', 'Garden', 5);
      insert into sales.orders (id, customer_id, status, ordered_at, total_amount)
        select n, 1, 'paid', timestamptz '2026-11-01 10:00Z' + n * interval '1 minute', 8 from generate_series(1, ${SHARED_ORDERS}) n;
      insert into sales.order_items (order_id, product_id, quantity, unit_price)
        select n, p, 1, case p when 1 then 3 else 5 end from generate_series(1, ${SHARED_ORDERS}) n, generate_series(1, 2) p;
    `);
  }, 120_000);

  afterAll(async () => {
    await scratch?.drop();
  });

  /** The rows of each category rollup that differ from the same sums over the base rows. */
  async function drift(): Promise<Record<string, number>> {
    const { rows } = await scratch.admin.query<{ name: string; n: number }>(`
      with truth as (
        select date_trunc('day', o.ordered_at, 'UTC') as day, p.category, o.status, o.currency,
               count(distinct o.id) as order_count, sum(i.quantity * i.unit_price) as revenue
          from sales.order_items i join sales.orders o on o.id = i.order_id join sales.products p on p.id = i.product_id
         group by 1, 2, 3, 4)
      select 'category_days' as name, count(*)::int as n from (
        (select day, category, status, currency, order_count, revenue from sales.category_days where order_count <> 0
         except all select * from truth)
        union all
        (select * from truth
         except all select day, category, status, currency, order_count, revenue from sales.category_days where order_count <> 0)) d`);
    return Object.fromEntries(rows.map((r) => [r.name, r.n]));
  }

  const connect = async (): Promise<pg.Client> => {
    const client = new pg.Client({ connectionString: scratch.adminUrl });
    await client.connect();
    return client;
  };

  /** Runs the rounds at a level: each transaction commits as soon as its change is done; what failed, by round and code. */
  async function rounds(level: string, tag: string): Promise<string[]> {
    const [a, b] = [await connect(), await connect()];
    const failures: string[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        await Promise.all([a.query(`begin isolation level ${level}`), b.query(`begin isolation level ${level}`)]);
        const recategorize = async (client: pg.Client, id: number, category: string): Promise<void> => {
          try {
            await client.query('update sales.products set category = $1 where id = $2', [category, id]);
            await client.query('commit');
          } catch (err) {
            failures.push(`round ${round}: ${(err as { code?: string }).code ?? String(err)}`);
            await client.query('rollback');
          }
        };
        await Promise.all([recategorize(a, 1, `Home ${tag}${round}`), recategorize(b, 2, `Garden ${tag}${round}`)]);
      }
    } finally {
      await a.end();
      await b.end();
    }
    return failures;
  }

  it.each(['repeatable read', 'serializable'])(
    'at %s, never deadlocks: a round commits both, or refuses the later with 40001, and the rollup stays exact',
    async (level) => {
      const failures = await rounds(level, level[0]!);
      expect(failures.filter((f) => !f.endsWith(': 40001'))).toEqual([]);
      expect(await drift()).toEqual({ category_days: 0 });
    },
    120_000,
  );

  it(`commits both, every one of ${ROUNDS} rounds at READ COMMITTED, and the rollup stays exact`, async () => {
    const failures = await rounds('read committed', '');
    expect(failures).toEqual([]);
    const { rows } = await scratch.admin.query<{ category: string }>('select category from sales.products order by id');
    expect(rows.map((r) => r.category)).toEqual([`Home ${ROUNDS - 1}`, `Garden ${ROUNDS - 1}`]);
    expect(await drift()).toEqual({ category_days: 0 });
  }, 120_000);
});
