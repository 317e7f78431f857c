/** The hourly rollup follows every insert, update, delete and truncate of orders, in the same transaction. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { expectRolledBack } from '../support/rollup-checks.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let harness: Harness;
const march = { start_date: '2025-03-01', end_date: '2025-03-31' };

beforeAll(async () => {
  scratch = await createScratchDatabase('rollup_check', { orders: 400, until: '2025-04-30' });
  harness = await startHarness({ readerUrl: scratch.readerUrl });
});
afterAll(async () => {
  await harness.close();
  await scratch.drop();
});

/** The rollup as the server reads it, and the same figures straight from the orders. */
interface Row {
  status: string;
  n: number;
  amount: string;
}

async function both(): Promise<{ served: unknown; raw: Row[]; rollup: Row[] }> {
  const served = structured<{ by_status: unknown }>(await harness.call('query_order_count', march)).by_status;
  const query = (table: string, time: string, count: string, amount: string) =>
    scratch.admin.query<Row>(
      `select status, sum(${count})::int as n, sum(${amount})::text as amount from ${table}
        where ${time} >= '2025-03-01T00:00:00Z' and ${time} < '2025-04-01T00:00:00Z' group by status order by status`,
    );
  const raw = (await query('sales.orders', 'ordered_at', '1', 'total_amount')).rows;
  const rollup = (await query('sales.order_hours', 'hour', 'order_count', 'total_amount')).rows.filter(
    (r) => r.n !== 0,
  );
  return { served, raw, rollup };
}

describe('the hourly rollup', () => {
  it('agrees with the orders after the seed', async () => {
    const { raw, rollup } = await both();
    expect(raw.length).toBeGreaterThan(0);
    expect(rollup).toEqual(raw);
  });

  it('follows inserts, updates of status, time and amount, and deletes', async () => {
    await scratch.admin.query(
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (100001, 1, 'paid', '2025-03-10T10:15:00Z', 12.34), (100002, 1, 'pending', '2025-03-31T23:59:59Z', 5.00)",
    );
    await scratch.admin.query("update sales.orders set status = 'refunded' where id = 100001");
    await scratch.admin.query("update sales.orders set ordered_at = '2025-04-01T00:00:00Z' where id = 100002");
    await scratch.admin.query(
      "update sales.orders set total_amount = total_amount + 1 where id in (select id from sales.orders where status = 'paid' and ordered_at >= '2025-03-01' limit 3)",
    );
    await scratch.admin.query(
      "delete from sales.order_items where order_id in (select id from sales.orders where status = 'shipped' and ordered_at >= '2025-03-01' order by id limit 2)",
    );
    await scratch.admin.query(
      "delete from sales.orders where id in (select id from sales.orders where status = 'shipped' and ordered_at >= '2025-03-01' and not exists (select 1 from sales.order_items i where i.order_id = orders.id) order by id limit 2)",
    );
    const { served, raw, rollup } = await both();
    expect(rollup).toEqual(raw);
    const fromRaw = Object.fromEntries(
      ['pending', 'paid', 'shipped', 'cancelled', 'refunded'].map((s) => [
        s,
        (raw as Array<{ status: string; n: number }>).find((r) => r.status === s)?.n ?? 0,
      ]),
    );
    expect(served).toEqual(fromRaw);
  });

  it('is rolled back with the transaction that changed the orders', async () => {
    await expectRolledBack({ admin: () => scratch.admin, state: both }, [
      "insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (100003, 1, 'paid', '2025-03-05T00:00:00Z', 1)",
    ]);
  });

  it('is emptied by a truncate of the orders', async () => {
    await scratch.admin.query('truncate sales.order_items, sales.orders');
    const { served, rollup } = await both();
    expect(rollup).toEqual([]);
    expect(Object.values(served as Record<string, number>).every((n) => n === 0)).toBe(true);
  });

  it('has figures that include an order committed just before data_as_of', async () => {
    const range = { start_date: '2025-05-02', end_date: '2025-05-02' }; // after the scratch data: empty
    const empty = structured<{ order_count: number; data_as_of: string }>(
      await harness.call('query_order_count', range),
    );
    expect(empty.order_count).toBe(0);
    const committed = await scratch.admin.query<{ at: Date }>(
      `insert into sales.orders (customer_id, ordered_at, status, currency, total_amount)
       select id, '2025-05-02T12:00:00Z', 'paid', 'EUR', 0 from sales.customers order by id limit 1
       returning clock_timestamp() as at`,
    );
    try {
      const counted = structured<{ order_count: number; data_as_of: string }>(
        await harness.call('query_order_count', range),
      );
      expect(Date.parse(counted.data_as_of)).toBeGreaterThanOrEqual(committed.rows[0]!.at.getTime());
      expect(counted.order_count).toBe(1);
    } finally {
      await scratch.admin.query(`delete from sales.orders where ordered_at = '2025-05-02T12:00:00Z'`);
    }
  });
});
