/**
 * Issue 8, item 1: two writers interleaved at READ COMMITTED, REPEATABLE READ and SERIALIZABLE
 * leave every rollup equal, currency by currency, to what the base tables give; where a level cannot
 * keep it so, the later writer is refused with 40001 (serialization failure), never left to drift.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
/** The two interleaved writers, each on its own connection. */
let one: pg.Client;
let two: pg.Client;
let twoPid: number;

beforeAll(async () => {
  scratch = await createScratchDatabase('rollup_isolation');
  await scratch.admin.query(
    `insert into sales.products (id, sku, name, category, unit_price)
     values (1, 'P-1', 'One', 'Home', 10), (2, 'P-2', 'Two', 'Home', 5), (3, 'P-3', 'Three', 'Toys', 7.25)`,
  );
  one = new pg.Client({ connectionString: scratch.adminUrl });
  two = new pg.Client({ connectionString: scratch.adminUrl });
  await one.connect();
  await two.connect();
  twoPid = (await two.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
});
afterAll(async () => {
  await one?.end().catch(() => undefined);
  await two?.end().catch(() => undefined);
  await scratch?.drop();
});

/**
 * The rows one case writes: two customers, an order of each in the same UTC hour, an item each, and
 * a product of the case's own in the Home category, which the first order holds too: that order has
 * two Home items (products 1 and p), and counts once in the category. The second order is pending,
 * the first paid: a row moved or added from one to the other lands in a rollup row that the other
 * writer does not touch (one it touched would refuse a stale writer by itself).
 */
interface Case {
  c: number;
  c2: number;
  /** The case's own product, Home until a writer moves it. */
  p: number;
  o: number;
  o2: number;
  o3: number;
  o4: number;
  /** The case's own two UTC days (YYYY-MM-DD), no other case writes to them; and the day after. */
  dayA: string;
  dayB: string;
  dayC: string;
}

let cases = 0;

async function setUp(): Promise<Case> {
  const n = cases++;
  const base = 1_000_000 + 10 * n;
  const day = (k: number): string =>
    new Date(Date.UTC(2030, 0, 1) + (2 * n + k) * 86_400_000).toISOString().slice(0, 10);
  const ids = { c: base, c2: base + 1, p: base, o: base, o2: base + 1, o3: base + 2, o4: base + 3 };
  const days = { dayA: day(0), dayB: day(1), dayC: day(2) };
  await scratch.admin.query(
    `insert into sales.customers (id, name, email, phone, region) values
       (${ids.c}, 'C', 'c@example.com', '+1 555 000-0000', 'north'),
       (${ids.c2}, 'D', 'd@example.com', '+1 555 000-0001', 'south');
     insert into sales.products (id, sku, name, category, unit_price) values (${ids.p}, 'P-${ids.p}', 'Case', 'Home', 4);
     insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values
       (${ids.o}, ${ids.c}, 'paid', '${days.dayA}T10:00:00Z', 20),
       (${ids.o2}, ${ids.c2}, 'pending', '${days.dayA}T10:20:00Z', 5);
     insert into sales.order_items (order_id, product_id, quantity, unit_price) values
       (${ids.o}, 1, 2, 10.00), (${ids.o}, ${ids.p}, 1, 4.00), (${ids.o2}, 2, 1, 5.00)`,
  );
  return { ...ids, ...days };
}

interface Difference {
  side: 'rollup only' | 'tables only';
  rollup: string;
  at: string;
  key: string;
  n: string;
  amount: string;
}

/**
 * Each rollup's non-empty rows on the case's days against the same sums computed here from the base
 * tables (the rebuild functions are not used), per currency as the rollups are keyed: the rows found
 * on one side only. A sum left under the order's old currency is a row on each side. The case's
 * orders' items per category, which the category rollup's triggers keep beside it, are held to the
 * items the same way.
 */
async function differences(ids: Case): Promise<Difference[]> {
  const { rows } = await scratch.admin.query<Difference>(
    `with rollup as (
       select 'order_hours' as rollup, hour::text as at, status || ' ' || currency as key, order_count::text as n,
              total_amount::text as amount
         from sales.order_hours where hour >= $1 and hour < $2 and (order_count <> 0 or total_amount <> 0)
       union all
       select 'product_days', day::text, product_id::text || ' ' || status || ' ' || currency, units::text,
              revenue::text
         from sales.product_days where day >= $1 and day < $2 and (units <> 0 or revenue <> 0)
       union all
       select 'region_days', day::text, region || ' ' || status || ' ' || currency, order_count::text,
              total_amount::text
         from sales.region_days where day >= $1 and day < $2 and (order_count <> 0 or total_amount <> 0)
       union all
       select 'category_days', day::text, category || ' ' || status || ' ' || currency, order_count::text,
              revenue::text
         from sales.category_days where day >= $1 and day < $2 and (order_count <> 0 or revenue <> 0)
       union all
       select 'region_hours', hour::text, region || ' ' || status || ' ' || currency, order_count::text,
              total_amount::text
         from sales.region_hours where hour >= $1 and hour < $2 and (order_count <> 0 or total_amount <> 0)
       union all
       select 'order_categories', order_id::text, category, items::text, revenue::text
         from sales.order_categories where order_id between $3 and $4
       union all
       select 'region_product_days', day::text, region || ' ' || product_id::text || ' ' || status || ' ' || currency,
              lines::text || ' ' || units::text, revenue::text
         from sales.region_product_days where day >= $1 and day < $2 and (lines <> 0 or units <> 0 or revenue <> 0)
       union all
       select 'region_category_days', day::text, region || ' ' || category || ' ' || status || ' ' || currency,
              order_count::text, revenue::text
         from sales.region_category_days where day >= $1 and day < $2 and (order_count <> 0 or revenue <> 0)
     ), tables as (
       select 'order_hours' as rollup, date_trunc('hour', ordered_at, 'UTC')::text as at,
              status || ' ' || currency as key, count(*)::text as n, sum(total_amount)::text as amount
         from sales.orders where ordered_at >= $1 and ordered_at < $2 group by 2, 3
       union all
       select 'product_days', date_trunc('day', o.ordered_at, 'UTC')::text,
              i.product_id::text || ' ' || o.status || ' ' || o.currency, sum(i.quantity)::text,
              sum(i.quantity * i.unit_price)::text
         from sales.orders o join sales.order_items i on i.order_id = o.id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
       union all
       select 'region_days', date_trunc('day', o.ordered_at, 'UTC')::text,
              c.region || ' ' || o.status || ' ' || o.currency, count(*)::text, sum(o.total_amount)::text
         from sales.orders o join sales.customers c on c.id = o.customer_id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
       union all
       select 'category_days', date_trunc('day', o.ordered_at, 'UTC')::text,
              p.category || ' ' || o.status || ' ' || o.currency, count(distinct o.id)::text,
              sum(i.quantity * i.unit_price)::text
         from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
       union all
       select 'region_hours', date_trunc('hour', o.ordered_at, 'UTC')::text,
              c.region || ' ' || o.status || ' ' || o.currency, count(*)::text, sum(o.total_amount)::text
         from sales.orders o join sales.customers c on c.id = o.customer_id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
       union all
       select 'order_categories', i.order_id::text, p.category, count(*)::text, sum(i.quantity * i.unit_price)::text
         from sales.order_items i join sales.products p on p.id = i.product_id
        where i.order_id between $3 and $4 group by 2, 3
       union all
       select 'region_product_days', date_trunc('day', o.ordered_at, 'UTC')::text,
              c.region || ' ' || i.product_id::text || ' ' || o.status || ' ' || o.currency,
              count(*)::text || ' ' || sum(i.quantity)::text, sum(i.quantity * i.unit_price)::text
         from sales.orders o join sales.order_items i on i.order_id = o.id join sales.customers c on c.id = o.customer_id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
       union all
       select 'region_category_days', date_trunc('day', o.ordered_at, 'UTC')::text,
              c.region || ' ' || p.category || ' ' || o.status || ' ' || o.currency, count(distinct o.id)::text,
              sum(i.quantity * i.unit_price)::text
         from sales.orders o join sales.order_items i on i.order_id = o.id join sales.products p on p.id = i.product_id
         join sales.customers c on c.id = o.customer_id
        where o.ordered_at >= $1 and o.ordered_at < $2 group by 2, 3
     )
     select 'rollup only' as side, * from (select * from rollup except all select * from tables) r
     union all
     select 'tables only', * from (select * from tables except all select * from rollup) t
     order by rollup, at, key, side`,
    [`${ids.dayA}T00:00:00Z`, `${ids.dayC}T00:00:00Z`, ids.o, ids.o4],
  );
  return rows;
}

type Level = 'read committed' | 'repeatable read' | 'serializable';
const LEVELS: readonly Level[] = ['read committed', 'repeatable read', 'serializable'];
/** What became of a writer: committed, or the SQLSTATE it was refused with. */
type Outcome = 'committed' | string;

/** Statements sent as one query (one round trip); the first error stops the rest. */
async function send(client: pg.Client, statements: readonly string[]): Promise<void> {
  await client.query(statements.join(';\n'));
}

function sqlstate(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') throw err;
  return code;
}

/** Writes and commits; a refusal (at a write or at the commit) is rolled back and given as its SQLSTATE. */
async function commitOrRefusal(client: pg.Client, statements: readonly string[]): Promise<Outcome> {
  try {
    await send(client, [...statements, 'commit']);
    return 'committed';
  } catch (err) {
    await client.query('rollback');
    return sqlstate(err);
  }
}

/** `late` writes on a snapshot taken before `early` wrote and committed (at `earlyLevel`, by default the same). */
async function onOlderSnapshot(
  level: Level,
  early: readonly string[],
  late: readonly string[],
  earlyLevel: Level = level,
): Promise<Outcome> {
  // The select takes the snapshot, at REPEATABLE READ and SERIALIZABLE.
  await send(one, [`begin isolation level ${level}`, 'select 1']);
  const first = await commitOrRefusal(two, [`begin isolation level ${earlyLevel}`, ...early]);
  if (first !== 'committed') throw new Error(`the first writer was refused: ${first}`);
  return commitOrRefusal(one, late);
}

/** `holder` writes and keeps its locks while `waiter` writes (waiting for them, or not); then `holder` commits. */
async function whileHeld(level: Level, holder: readonly string[], waiter: readonly string[]): Promise<Outcome> {
  await send(one, [`begin isolation level ${level}`, ...holder]);
  let settled = false;
  const writing = send(two, [`begin isolation level ${level}`, ...waiter]).finally(() => (settled = true));
  writing.catch(() => undefined); // examined below
  // Until it is done or waits for a lock: a bound to catch a hang, not a timing.
  const deadline = Date.now() + 10_000;
  while (!settled) {
    const { rows } = await scratch.admin.query<{ waits: boolean }>(
      'select cardinality(pg_blocking_pids($1)) > 0 as waits',
      [twoPid],
    );
    if (rows[0]!.waits) break;
    if (Date.now() > deadline) throw new Error('the second writer neither finished nor waited for a lock');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const first = await commitOrRefusal(one, []);
  if (first !== 'committed') throw new Error(`the first writer was refused: ${first}`);
  try {
    await writing;
  } catch (err) {
    await two.query('rollback');
    return sqlstate(err);
  }
  return commitOrRefusal(two, []);
}

/**
 * One kind of write. `references`: it points a row at the order the other writer deletes (`deletes`),
 * and is refused with a foreign-key violation once that is gone.
 */
interface Write {
  what: string;
  sql: (ids: Case) => string[];
  references?: boolean;
  deletes?: boolean;
}

interface Pair {
  rollup: string;
  parent: Write;
  child: Write;
}

const items: Write[] = [
  {
    what: 'an item is added to the order',
    sql: (ids) => [`insert into sales.order_items values (${ids.o}, 2, 1, 7.50)`],
    references: true,
  },
  {
    what: "an item's quantity changes",
    sql: (ids) => [`update sales.order_items set quantity = 5 where order_id = ${ids.o} and product_id = 1`],
  },
  {
    what: "an item's price changes",
    sql: (ids) => [`update sales.order_items set unit_price = 12.25 where order_id = ${ids.o} and product_id = 1`],
  },
  {
    what: "an item's product changes",
    sql: (ids) => [`update sales.order_items set product_id = 3 where order_id = ${ids.o} and product_id = 1`],
  },
  {
    what: 'an item moves to another order',
    sql: (ids) => [`update sales.order_items set order_id = ${ids.o2} where order_id = ${ids.o} and product_id = 1`],
  },
  {
    what: 'an item of another order moves to the order',
    sql: (ids) => [`update sales.order_items set order_id = ${ids.o} where order_id = ${ids.o2} and product_id = 2`],
    references: true,
  },
  {
    what: 'an item is deleted',
    sql: (ids) => [`delete from sales.order_items where order_id = ${ids.o} and product_id = 1`],
  },
];

const refund: Write = {
  what: 'the order is refunded',
  sql: (ids) => [`update sales.orders set status = 'refunded' where id = ${ids.o}`],
};

const dayMove: Write = {
  what: 'the order moves to another UTC day',
  sql: (ids) => [`update sales.orders set ordered_at = '${ids.dayB}T10:00:00Z' where id = ${ids.o}`],
};

/** The cases' orders are all USD: this one moves the order's sums, in every rollup, to other rows. */
const currencyChange: Write = {
  what: 'the order changes currency from USD to EUR',
  sql: (ids) => [`update sales.orders set currency = 'EUR' where id = ${ids.o}`],
};

const orderChanges: Write[] = [
  refund,
  dayMove,
  {
    what: 'the order is deleted with its items',
    sql: (ids) => [`delete from sales.orders where id = ${ids.o}`],
    deletes: true,
  },
  currencyChange,
];

const customerMove: Write = {
  what: 'the customer moves to another region',
  sql: (ids) => [`update sales.customers set region = 'east' where id = ${ids.c}`],
};

const orders: Write[] = [
  {
    what: 'an order is placed for the customer',
    sql: (ids) => [
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount)
       values (${ids.o3}, ${ids.c}, 'pending', '${ids.dayA}T12:00:00Z', 30)`,
    ],
  },
  {
    what: "another customer's order moves to the customer",
    sql: (ids) => [`update sales.orders set customer_id = ${ids.c} where id = ${ids.o2}`],
  },
  {
    what: "the customer's order moves to another customer",
    sql: (ids) => [`update sales.orders set customer_id = ${ids.c2} where id = ${ids.o}`],
  },
  {
    what: "the customer's order is refunded",
    sql: (ids) => [`update sales.orders set status = 'refunded' where id = ${ids.o}`],
  },
  {
    what: "the customer's order changes amount",
    sql: (ids) => [`update sales.orders set total_amount = 25 where id = ${ids.o}`],
  },
  {
    what: "the customer's order moves to another UTC day",
    sql: (ids) => [`update sales.orders set ordered_at = '${ids.dayB}T10:00:00Z' where id = ${ids.o}`],
  },
  {
    what: "the customer's order is deleted",
    sql: (ids) => [`delete from sales.orders where id = ${ids.o}`],
  },
  { ...currencyChange, what: "the customer's order changes currency from USD to EUR" },
];

/** The case's product changes category: its item in the first order, the order's second Home item, goes with it. */
const categoryChange: Write = {
  what: "the case's product moves from Home to Garden",
  sql: (ids) => [`update sales.products set category = 'Garden' where id = ${ids.p}`],
};

/** The order's other Home item: while one of the two stays, the order counts in Home once. */
const otherHomeItemDeleted: Write = {
  what: "the order's other Home item, of the case's product, is deleted",
  sql: (ids) => [`delete from sales.order_items where order_id = ${ids.o} and product_id = ${ids.p}`],
};

/** Writes of the case's product's items: the first two give it an item it did not have. */
const productItems: Write[] = [
  {
    what: "an item of the case's product is added to the other order",
    sql: (ids) => [`insert into sales.order_items values (${ids.o2}, ${ids.p}, 2, 4.00)`],
  },
  {
    what: "an item of another product moves to the case's product",
    sql: (ids) => [`update sales.order_items set product_id = ${ids.p} where order_id = ${ids.o2} and product_id = 2`],
  },
  {
    what: "the quantity of the item of the case's product changes",
    sql: (ids) => [`update sales.order_items set quantity = 3 where order_id = ${ids.o} and product_id = ${ids.p}`],
  },
  {
    what: "the item of the case's product moves to another order",
    sql: (ids) => [
      `update sales.order_items set order_id = ${ids.o2} where order_id = ${ids.o} and product_id = ${ids.p}`,
    ],
  },
  {
    what: "the item of the case's product changes product",
    sql: (ids) => [`update sales.order_items set product_id = 3 where order_id = ${ids.o} and product_id = ${ids.p}`],
  },
  otherHomeItemDeleted,
];

// Order writers against the hourly rollup: o and o2 lie in the same UTC hour.
const hourly: Pair[] = [
  {
    rollup: 'order_hours',
    parent: {
      what: 'an order is placed in an hour',
      sql: (ids) => [
        `insert into sales.orders (id, customer_id, status, ordered_at, total_amount)
         values (${ids.o3}, ${ids.c}, 'paid', '${ids.dayA}T10:30:00Z', 3)`,
      ],
    },
    child: {
      what: 'another order is placed in the same hour',
      sql: (ids) => [
        `insert into sales.orders (id, customer_id, status, ordered_at, total_amount)
         values (${ids.o4}, ${ids.c2}, 'paid', '${ids.dayA}T10:45:00Z', 4)`,
      ],
    },
  },
  {
    rollup: 'order_hours',
    parent: {
      what: 'an order is refunded',
      sql: (ids) => [`update sales.orders set status = 'refunded' where id = ${ids.o}`],
    },
    child: {
      what: 'another order of the same hour is refunded',
      sql: (ids) => [`update sales.orders set status = 'refunded' where id = ${ids.o2}`],
    },
  },
  {
    rollup: 'order_hours',
    parent: {
      what: 'an order changes amount',
      sql: (ids) => [`update sales.orders set total_amount = 21 where id = ${ids.o}`],
    },
    child: { what: 'the same order is deleted', sql: (ids) => [`delete from sales.orders where id = ${ids.o}`] },
  },
];

// Two changes of one order, each moving its sums in every rollup: the later must move them from
// where the earlier left them (its new currency, status or day), not from where its snapshot saw them.
const sameOrder: Pair[] = [refund, dayMove].map((child) => ({
  rollup: 'every rollup',
  parent: currencyChange,
  child: { ...child, what: child.what.replace('the order', 'the same order') },
}));

const PAIRS: Pair[] = [
  ...orderChanges.flatMap((parent) => items.map((child) => ({ rollup: 'product_days', parent, child }))),
  ...orders.map((child) => ({ rollup: 'region_days and region_hours', parent: customerMove, child })),
  // The declared rollups by region, product and category: the customer's items move with the customer.
  ...[...items, ...productItems].map((child) => ({
    rollup: 'region_product_days and region_category_days',
    parent: customerMove,
    child,
  })),
  ...[...items, ...productItems, ...orderChanges].map((child) => ({
    rollup: 'category_days',
    parent: categoryChange,
    child,
  })),
  ...items.map((child) => ({ rollup: 'category_days', parent: otherHomeItemDeleted, child })),
  ...hourly,
  ...sameOrder,
];

describe('item 1: the rollups under two interleaved writers at every isolation level', () => {
  for (const level of LEVELS) {
    for (const { rollup, parent, child } of PAIRS) {
      it(`item 1: ${rollup} stays exact at ${level} when ${parent.what} and ${child.what}`, async () => {
        const variants: [string, (ids: Case) => Promise<Outcome>, Write][] = [
          [
            'the child commits, then the parent writes on an older snapshot',
            (ids) => onOlderSnapshot(level, child.sql(ids), parent.sql(ids)),
            parent,
          ],
          [
            'the parent commits, then the child writes on an older snapshot',
            (ids) => onOlderSnapshot(level, parent.sql(ids), child.sql(ids)),
            child,
          ],
          [
            'the child holds its locks while the parent writes',
            (ids) => whileHeld(level, child.sql(ids), parent.sql(ids)),
            parent,
          ],
          [
            'the parent holds its locks while the child writes',
            (ids) => whileHeld(level, parent.sql(ids), child.sql(ids)),
            child,
          ],
        ];
        for (const [how, interleave, last] of variants) {
          const ids = await setUp();
          const outcome = await interleave(ids);
          // The last writer commits, or is refused: 40001 where the level keeps snapshots, and a
          // foreign-key violation for a row pointed at an order deleted first.
          const allowed = ['committed'];
          if (level !== 'read committed') allowed.push('40001');
          if (last === child && parent.deletes && child.references) allowed.push('23503');
          expect.soft(allowed, how).toContain(outcome);
          expect.soft(await differences(ids), how).toEqual([]);
        }
      });
    }
  }
});

describe('item 1: writers at different isolation levels', () => {
  // SERIALIZABLE protects only transactions that are all SERIALIZABLE: with a READ COMMITTED writer
  // beside it, a SERIALIZABLE one is as exposed as a REPEATABLE READ one.
  for (const level of ['repeatable read', 'serializable'] as const) {
    it(`item 1: a change of an order, customer or product at ${level}, on a snapshot older than a row added to it at read committed, is refused`, async () => {
      const ids = await setUp();
      const [addItem, refund] = [items[0]!.sql(ids), orderChanges[0]!.sql(ids)];
      expect(await onOlderSnapshot(level, addItem, refund, 'read committed')).toBe('40001');
      const [placeOrder, move] = [orders[0]!.sql(ids), customerMove.sql(ids)];
      expect(await onOlderSnapshot(level, placeOrder, move, 'read committed')).toBe('40001');
      const [addItemOfProduct, recategorize] = [productItems[0]!.sql(ids), categoryChange.sql(ids)];
      expect(await onOlderSnapshot(level, addItemOfProduct, recategorize, 'read committed')).toBe('40001');
      // The declared region rollups: the customer's move locks its orders, and the item added touched one.
      const addItemToOrder = [`insert into sales.order_items values (${ids.o}, 3, 1, 7.25)`];
      expect(await onOlderSnapshot(level, addItemToOrder, customerMove.sql(ids), 'read committed')).toBe('40001');
      expect(await differences(ids)).toEqual([]);
    });
  }
});

describe('item 1: what the rollups cost writers at each isolation level', () => {
  const addItem = (order: number, product: number): string[] => [
    `insert into sales.order_items values (${order}, ${product}, 1, 2.50)`,
  ];

  for (const level of LEVELS) {
    it(`item 1: at ${level}, two transactions adding items to one order ${level === 'read committed' ? 'both commit' : 'cannot both commit: the later gets 40001'}`, async () => {
      const ids = await setUp();
      // Different products: no rollup row in common, only the order.
      const outcome = await onOlderSnapshot(level, addItem(ids.o, 2), addItem(ids.o, 3));
      expect(outcome).toBe(level === 'read committed' ? 'committed' : '40001');
      expect(await differences(ids)).toEqual([]);
    });

    it(`item 1: at ${level}, changes to different items of one order, and items added to different orders, both commit`, async () => {
      const ids = await setUp();
      await scratch.admin.query(`insert into sales.order_items values (${ids.o}, 3, 1, 7.25)`);
      const quantity = (product: number): string[] => [
        `update sales.order_items set quantity = 4 where order_id = ${ids.o} and product_id = ${product}`,
      ];
      expect(await onOlderSnapshot(level, quantity(1), quantity(3))).toBe('committed');
      expect(await onOlderSnapshot(level, addItem(ids.o, 2), addItem(ids.o2, 3))).toBe('committed');
      expect(await differences(ids)).toEqual([]);
    });

    it(`item 1: at ${level}, two transactions adding items of one product to different orders, or changing two items of one category in one order, ${level === 'read committed' ? 'both commit' : 'cannot both commit: the later gets 40001'}`, async () => {
      const ids = await setUp();
      // Orders of different statuses: no rollup row in common, only the product.
      expect(await onOlderSnapshot(level, addItem(ids.o, 3), addItem(ids.o2, 3))).toBe(
        level === 'read committed' ? 'committed' : '40001',
      );
      // Products 1 and p, both Home: the order's row for Home, and the rollup's.
      const quantity = (product: number): string[] => [
        `update sales.order_items set quantity = 4 where order_id = ${ids.o} and product_id = ${product}`,
      ];
      expect(await onOlderSnapshot(level, quantity(1), quantity(ids.p))).toBe(
        level === 'read committed' ? 'committed' : '40001',
      );
      expect(await differences(ids)).toEqual([]);
    });
  }
});

describe('item 1: the touch that makes a parent write on an older snapshot fail', () => {
  const suffix = randomBytes(4).toString('hex');
  const writer = `querygate_rollup_writer_${suffix}`;

  beforeAll(async () => {
    // A writer that may only insert orders and items: the touch must run as its owner to update them.
    await scratch.admin.query(`create role ${writer} nologin`);
    await scratch.admin.query(`grant usage on schema sales to ${writer}`);
    await scratch.admin.query(`grant insert on sales.orders, sales.order_items to ${writer}`);
  });
  afterAll(async () => {
    await scratch.admin.query(`drop owned by ${writer}`);
    await scratch.admin.query(`drop role ${writer}`);
  });

  interface Version {
    what: string;
    xmin: string;
  }

  /** The row versions (xmin) of the case's parents and rollup rows. */
  async function versions(ids: Case): Promise<Version[]> {
    const { rows } = await scratch.admin.query<Version>(
      `select 'order ' || id as what, xmin::text from sales.orders where id in ($1, $2)
       union all select 'customer ' || id, xmin::text from sales.customers where id in ($3, $4)
       union all select 'product ' || id, xmin::text from sales.products where id in (1, 2, 3, $7)
       union all select 'product_touches ' || id, xmin::text from sales.order_categories_products_touches where id in (1, 2, 3, $7)
       union all select 'order_hours ' || hour || ' ' || status, xmin::text from sales.order_hours where hour >= $5 and hour < $6
       union all select 'product_days ' || day || ' ' || product_id || ' ' || status, xmin::text from sales.product_days where day >= $5 and day < $6
       union all select 'region_days ' || day || ' ' || region || ' ' || status, xmin::text from sales.region_days where day >= $5 and day < $6
       union all select 'category_days ' || day || ' ' || category || ' ' || status, xmin::text from sales.category_days where day >= $5 and day < $6
       union all select 'region_hours ' || hour || ' ' || region || ' ' || status, xmin::text from sales.region_hours where hour >= $5 and hour < $6
       union all select 'order_categories ' || order_id || ' ' || category, xmin::text from sales.order_categories where order_id in ($1, $2)
       order by 1`,
      [ids.o, ids.o2, ids.c, ids.c2, `${ids.dayA}T00:00:00Z`, `${ids.dayC}T00:00:00Z`, ids.p],
    );
    return rows;
  }

  async function asWriter(statement: string): Promise<void> {
    await scratch.admin.query('begin');
    try {
      await scratch.admin.query(`set local role ${writer}`);
      await scratch.admin.query(statement);
      await scratch.admin.query('commit');
    } catch (err) {
      await scratch.admin.query('rollback');
      throw err;
    }
  }

  /** The rows that were there before and have a new version now (new rollup rows are not counted). */
  const changed = (before: Version[], after: Version[]): string[] =>
    after.filter((row) => before.some((b) => b.what === row.what && b.xmin !== row.xmin)).map((row) => row.what);

  it("item 1: an item added makes a new version of its order and of its product's touch, and an order placed one of its customer, and nothing more", async () => {
    const ids = await setUp();
    // Product 3's touch is there before (only versions of rows that were there are compared).
    await scratch.admin.query(`insert into sales.order_items values (${ids.o2}, 3, 1, 7.25)`);
    let before = await versions(ids);
    await asWriter(`insert into sales.order_items values (${ids.o}, 3, 1, 7.25)`);
    let after = await versions(ids);
    // The order and the product's touch only: not the product itself, the hour's or the region's rows,
    // nor the rows of the order's other products and categories.
    expect(changed(before, after)).toEqual([`order ${ids.o}`, 'product_touches 3']);

    before = after;
    await asWriter(
      `insert into sales.orders (id, customer_id, status, ordered_at, total_amount) values (${ids.o3}, ${ids.c}, 'paid', '${ids.dayB}T01:00:00Z', 1)`,
    );
    after = await versions(ids);
    expect(changed(before, after)).toEqual([`customer ${ids.c}`]);

    // Changes that point no row at another order, customer or product touch none: only o2 itself is new.
    before = after;
    await scratch.admin.query(`update sales.order_items set quantity = 3 where order_id = ${ids.o} and product_id = 1`);
    await scratch.admin.query(`update sales.orders set status = 'shipped' where id = ${ids.o2}`);
    after = await versions(ids);
    expect(changed(before, after).filter((what) => /^(order|customer|product|product_touches) /.test(what))).toEqual([
      `order ${ids.o2}`,
    ]);
    expect(await differences(ids)).toEqual([]);
  });
});
