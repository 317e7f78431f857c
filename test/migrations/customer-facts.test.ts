/**
 * The per-customer facts of query_metrics (customer_since: the first order ever; customer_type and
 * customer_orders: the orders in the range) stay exact while writers add and move orders, at READ
 * COMMITTED, REPEATABLE READ and SERIALIZABLE: they are read from the customer's own orders in the
 * answer's one read-only snapshot, so an answer holds every committed order and none uncommitted.
 * Each answer is held to independent SQL over sales.orders (the tables, not the reader's views),
 * run through the admin connection after it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const LEVELS = ['read committed', 'repeatable read', 'serializable'] as const;
const RANGE = { start_date: '2025-03-01', end_date: '2025-03-31' };
const START = '2025-03-01T00:00:00Z';
const END = '2025-04-01T00:00:00Z';

let scratch: ScratchDatabase;
let harness: Harness;
let one: pg.Client;
let two: pg.Client;
let nextId = 1;

beforeAll(async () => {
  scratch = await createScratchDatabase('customer_facts');
  await scratch.admin.query(
    `insert into sales.products (id, sku, name, category, unit_price)
     values (1, 'P-1', 'One', 'Home', 10), (2, 'P-2', 'Two', 'Home', 10)`,
  );
  one = new pg.Client({ connectionString: scratch.adminUrl });
  two = new pg.Client({ connectionString: scratch.adminUrl });
  await one.connect();
  await two.connect();
  harness = await startHarness({
    readerUrl: scratch.readerUrl,
    timeZone: 'UTC',
    now: () => Date.parse(END) + 86_400_000,
  });
}, 240_000);
afterAll(async () => {
  await harness?.close();
  await one?.end().catch(() => undefined);
  await two?.end().catch(() => undefined);
  await scratch?.drop();
});

async function customer(client: pg.Client): Promise<number> {
  const id = nextId++;
  await client.query(
    `insert into sales.customers (id, name, email, phone, region) values ($1, 'C', $2, '+1 555 0100', 'Europe')`,
    [id, `c${id}@example.com`],
  );
  return id;
}

/**
 * An order of one item. Each writer adds its items under a product of its own: a row added under a
 * product touches it (the rollups' design), so two open writers on one product would wait on each other.
 */
async function order(client: pg.Client, customerId: number, at: string, product = 1): Promise<void> {
  const id = nextId++;
  await client.query(
    `insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, 'paid', $3, 'USD', 10)`,
    [id, customerId, at],
  );
  await client.query(
    'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, $2, 1, 10)',
    [id, product],
  );
}

/** What SQL over the tables gives: customers of March by new/returning and one-time/repeat. */
async function truth(): Promise<{ since: Record<string, number>; type: Record<string, number> }> {
  const { rows } = await scratch.admin.query<{ first_ever: Date; n: number }>(
    `select (select min(ordered_at) from sales.orders a where a.customer_id = o.customer_id) as first_ever,
            count(*)::int as n
     from sales.orders o where o.ordered_at >= $1 and o.ordered_at < $2 group by o.customer_id`,
    [START, END],
  );
  const since: Record<string, number> = {};
  const type: Record<string, number> = {};
  for (const r of rows) {
    const s = r.first_ever.getTime() >= Date.parse(START) ? 'new' : 'returning';
    since[s] = (since[s] ?? 0) + 1;
    const t = r.n > 1 ? 'repeat' : 'one_time';
    type[t] = (type[t] ?? 0) + 1;
  }
  return { since, type };
}

async function answered(): Promise<{ since: Record<string, number>; type: Record<string, number> }> {
  const by = async (dim: string): Promise<Record<string, number>> => {
    const result = await harness.call('query_metrics', { metrics: ['customers'], group_by: [dim], ...RANGE });
    if (result.isError) throw new Error(textOf(result));
    const out = structured<{ rows: Record<string, unknown>[] }>(result);
    return Object.fromEntries(out.rows.map((r) => [String(r[dim]), Number(r.customers)]));
  };
  return { since: await by('customer_since'), type: await by('customer_type') };
}

describe.each(LEVELS)('per-customer facts under concurrent writers at %s', (level) => {
  it('answers every committed order and none uncommitted, as SQL over the tables does', async () => {
    const old = await customer(scratch.admin);
    await order(scratch.admin, old, '2025-01-15T10:00:00Z');
    await order(scratch.admin, old, '2025-03-05T10:00:00Z');
    const fresh = await customer(scratch.admin);
    await order(scratch.admin, fresh, '2025-03-10T10:00:00Z');

    // Writer one: a customer new in March, and a second March order of `old` (now repeat).
    await one.query(`begin isolation level ${level}`);
    const brandNew = await customer(one);
    await order(one, brandNew, '2025-03-12T08:00:00Z');
    await order(one, old, '2025-03-20T08:00:00Z');
    // Writer two: an older order of `fresh`, which stops being new in March.
    await two.query(`begin isolation level ${level}`);
    await order(two, fresh, '2024-12-01T08:00:00Z', 2);

    expect(await answered()).toEqual(await truth());
    await one.query('commit');
    const afterOne = await answered();
    expect(afterOne).toEqual(await truth());
    expect(afterOne.since.new).toBeGreaterThanOrEqual(2); // fresh and brandNew, both new until two commits
    await two.query('commit');
    const afterTwo = await answered();
    expect(afterTwo).toEqual(await truth());
    expect(afterTwo.since.new).toBe(afterOne.since.new! - 1); // fresh's first order is now in December

    // A writer that rolls back leaves nothing behind.
    await one.query(`begin isolation level ${level}`);
    await order(one, fresh, '2025-03-25T08:00:00Z');
    await one.query('rollback');
    expect(await answered()).toEqual(afterTwo);
  });
});
