/**
 * Deterministic demo data, loaded with COPY. A seeded PRNG drives every choice, so the same
 * order count and the same `until` day always give the same rows. Each order's items come from
 * a PRNG seeded by the order's index, so they can be generated again for the second COPY without
 * holding a million orders in memory.
 */
import type pg from 'pg';
import { rollupNames } from '../src/db/rollups/index.js';
import { copyInto, demoInstants, loadDemoData, pick, prng, weightedIndex } from '../src/db/demo-data.js';
import { ConfigError } from '../src/lib/errors.js';
import { parseDay } from '../src/lib/date-range.js';
import type { Logger } from '../src/lib/logger.js';
import { REGION_ROLLUPS, SALES_ROLLUPS } from './rollups.js';

export interface SeedOptions {
  /** Number of orders to create. */
  readonly orders: number;
  /** Last day with orders (YYYY-MM-DD, UTC); the data spans the 730 days up to and including it. */
  readonly until: string;
  /** Replace existing sales data instead of refusing to seed a non-empty database. */
  readonly replace: boolean;
}

export interface SeedSummary {
  readonly customers: number;
  readonly products: number;
  readonly orders: number;
  readonly orderItems: number;
}

export const DEFAULT_SEED_ORDERS = 50_000;
const SPAN_DAYS = 730;
const PRODUCT_COUNT = 150;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Every demo order's currency: the demo shop sells in one. */
const CURRENCY = 'USD';
/**
 * The tables whose triggers keep the rollups (the engine's, pack/rollups.ts) and touch the rows a new
 * row points at: all of their own triggers are off while loading, which fills some rollups itself and
 * rebuilds the others once the rows are in.
 */
const TRIGGERED_TABLES = [
  'sales.products',
  'sales.customers',
  'sales.orders',
  'sales.order_items',
  'sales.order_categories',
];

const FIRST = [
  'Ada',
  'Ben',
  'Chloe',
  'Dmitri',
  'Elena',
  'Farah',
  'Gustavo',
  'Hana',
  'Ivan',
  'Jia',
  'Kofi',
  'Lena',
  'Mateo',
  'Nadia',
  'Omar',
  'Priya',
  'Quinn',
  'Rosa',
  'Sven',
  'Tomoko',
  'Uma',
  'Victor',
  'Wen',
  'Ximena',
  'Yusuf',
  'Zoe',
];
const LAST = [
  'Abara',
  'Becker',
  'Costa',
  'Dubois',
  'Eriksen',
  'Fischer',
  'Garcia',
  'Haddad',
  'Ito',
  'Jensen',
  'Kowalski',
  'Larsen',
  'Moreau',
  'Nakamura',
  'Okafor',
  'Petrov',
  'Quispe',
  'Rossi',
  'Silva',
  'Tanaka',
  'Umar',
  'Varga',
  'Weber',
  'Xu',
  'Yilmaz',
  'Zhang',
];
const DOMAINS = ['example.com', 'example.org', 'example.net'];
const REGIONS = ['North America', 'Europe', 'Asia Pacific', 'Latin America', 'Middle East', 'Africa'];
const REGION_WEIGHTS = [0.34, 0.28, 0.2, 0.09, 0.05, 0.04];
const CATEGORIES: Record<string, readonly string[]> = {
  Electronics: ['Headphones', 'Charger', 'Speaker', 'Webcam', 'Monitor'],
  Home: ['Lamp', 'Kettle', 'Blanket', 'Vase', 'Clock'],
  Garden: ['Hose', 'Planter', 'Shears', 'Seed Kit', 'Lantern'],
  Sports: ['Yoga Mat', 'Dumbbell', 'Bottle', 'Backpack', 'Jump Rope'],
  Books: ['Cookbook', 'Atlas', 'Novel', 'Field Guide', 'Notebook'],
  Toys: ['Puzzle', 'Kite', 'Robot Kit', 'Board Game', 'Plush'],
  Beauty: ['Serum', 'Brush Set', 'Lotion', 'Perfume', 'Mirror'],
  Office: ['Desk Mat', 'Stapler', 'Pen Set', 'Organizer', 'Chair Cushion'],
};
const ADJECTIVES = ['Classic', 'Pro', 'Eco', 'Compact', 'Deluxe', 'Smart'];

const weighted = <T>(rand: () => number, items: readonly T[], weights: readonly number[]): T =>
  items[weightedIndex(rand, weights)]!;

const cents = (value: number): string => `${Math.floor(value / 100)}.${String(value % 100).padStart(2, '0')}`;

interface Product {
  readonly sku: string;
  readonly name: string;
  readonly category: string;
  readonly priceCents: number;
}

function makeProducts(): Product[] {
  const rand = prng(0x5eed_0001);
  const categories = Object.keys(CATEGORIES);
  return Array.from({ length: PRODUCT_COUNT }, (_, i) => {
    const category = categories[i % categories.length]!;
    return {
      sku: `SKU-${String(i + 1).padStart(5, '0')}`,
      name: `${pick(rand, ADJECTIVES)} ${pick(rand, CATEGORIES[category]!)} ${String.fromCharCode(65 + (i % 26))}${Math.floor(i / 26) + 1}`,
      category,
      priceCents: 499 + Math.floor(rand() * 40) * 250 + (rand() < 0.5 ? 0 : 50),
    };
  });
}

/** The items of order `index`: 1 to 4 distinct products; the same index always gives the same items. */
function itemsOf(index: number, products: readonly Product[]): { product: number; quantity: number }[] {
  const rand = prng(Math.imul(index + 1, 0x9e3779b1) ^ 0x1234567);
  const count = weighted(rand, [1, 2, 3, 4], [0.45, 0.3, 0.15, 0.1]);
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(Math.floor(rand() * products.length));
  return [...chosen].map((product) => ({ product, quantity: weighted(rand, [1, 2, 3, 5], [0.6, 0.25, 0.1, 0.05]) }));
}

/** The items of order `index` per product category: how many, and their revenue in cents. */
function categoriesOf(
  index: number,
  products: readonly Product[],
): Map<string, { items: number; amountCents: number }> {
  const categories = new Map<string, { items: number; amountCents: number }>();
  for (const item of itemsOf(index, products)) {
    const product = products[item.product]!;
    const sum = categories.get(product.category) ?? { items: 0, amountCents: 0 };
    sum.items++;
    sum.amountCents += item.quantity * product.priceCents;
    categories.set(product.category, sum);
  }
  return categories;
}

type Rollup = 'order_hours' | 'region_days' | 'category_days' | 'region_hours';

/** Each rollup's columns: its key (UTC hour or day first, currency last), then a count and an amount. */
const ROLLUP_COLUMNS: readonly (readonly [Rollup, string])[] = [
  ['order_hours', 'hour, status, currency, order_count, total_amount'],
  ['region_days', 'day, region, status, currency, order_count, total_amount'],
  ['category_days', 'day, category, status, currency, order_count, revenue'],
  ['region_hours', 'hour, region, status, currency, order_count, total_amount'],
];

/**
 * The rollups' sums, as the migrations' rebuild functions would make them from the loaded rows (the
 * tests compare the two): keyed by a tab-separated key whose first field is the hour or day in ms.
 */
function createRollupSums(): {
  add(rollup: Rollup, key: string, count: number, amountCents: number): void;
  lines(rollup: Rollup): Generator<string>;
} {
  const sums = new Map<Rollup, Map<string, [number, number]>>(ROLLUP_COLUMNS.map(([rollup]) => [rollup, new Map()]));
  return {
    add: (rollup, key, count, amountCents) => {
      const sum = sums.get(rollup)!.get(key);
      if (sum) {
        sum[0] += count;
        sum[1] += amountCents;
      } else sums.get(rollup)!.set(key, [count, amountCents]);
    },
    *lines(rollup) {
      for (const [key, [count, amountCents]] of sums.get(rollup)!) {
        const tab = key.indexOf('\t');
        yield `${new Date(Number(key.slice(0, tab))).toISOString()}${key.slice(tab)}\t${count}\t${cents(amountCents)}\n`;
      }
    },
  };
}

/**
 * Drops the foreign keys and the non-unique indexes of the sales tables, and returns the statements
 * that recreate them, read from the catalog.
 */
async function dropSecondaryStructures(client: pg.Client): Promise<string[]> {
  const { rows: keys } = await client.query<{ target: string; name: string; definition: string }>(
    `select conrelid::regclass::text as target, quote_ident(conname) as name, pg_get_constraintdef(oid) as definition
       from pg_constraint where contype = 'f' and connamespace = 'sales'::regnamespace`,
  );
  const { rows: indexes } = await client.query<{ name: string; definition: string }>(
    `select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
       from pg_index i join pg_class c on c.oid = i.indrelid
      where c.relnamespace = 'sales'::regnamespace and not i.indisunique`,
  );
  for (const key of keys) await client.query(`alter table ${key.target} drop constraint ${key.name}`);
  for (const index of indexes) await client.query(`drop index ${index.name}`);
  return [
    ...indexes.map((index) => index.definition),
    ...keys.map((key) => `alter table ${key.target} add constraint ${key.name} ${key.definition}`),
  ];
}

/** Loads the demo data through an admin connection, in one transaction. */
export async function seedDatabase(adminUrl: string, options: SeedOptions, logger: Logger): Promise<SeedSummary> {
  if (!Number.isInteger(options.orders) || options.orders < 1) {
    throw new ConfigError('--count: must be a positive whole number');
  }
  const untilDay = parseDay(options.until);
  if (!untilDay) throw new ConfigError(`--until: ${options.until} is not a real YYYY-MM-DD day`);
  const end = Date.parse(`${options.until}T00:00:00Z`) + DAY_MS;
  const start = end - SPAN_DAYS * DAY_MS;

  const started = performance.now();
  const rand = prng(0x5eed_0000 ^ options.orders);
  const products = makeProducts();
  const customerCount = Math.max(100, Math.floor(options.orders / 8));
  const regionOf: string[] = [];

  // Order times first, sorted, so that order ids grow with time as they do in a real shop.
  const times = demoInstants(rand, options.orders, start, end);

  let orderItems = 0;
  const tables = {
    serial: ['sales.customers', 'sales.products', 'sales.orders'],
    analyze: [
      'sales.customers',
      'sales.products',
      'sales.orders',
      'sales.order_items',
      ...SALES_ROLLUPS.map((rollup) => `sales.${rollup.name}`),
    ],
  };
  await loadDemoData(adminUrl, tables, async (client) => {
    if (options.replace) {
      await client.query('truncate sales.order_items, sales.orders, sales.customers, sales.products restart identity');
    } else {
      const { rows } = await client.query<{ n: string }>('select count(*) as n from sales.orders');
      if (rows[0]!.n !== '0') {
        throw new ConfigError('the database already holds orders; pass --replace to replace them with demo data');
      }
    }
    // Loading into bare tables and building indexes and foreign keys once afterwards is several times
    // faster than maintaining them row by row. Their definitions are read back from the catalog, so
    // the migrations stay the one place that states them.
    await client.query("set local maintenance_work_mem = '256MB'");
    await client.query('set local synchronous_commit = off');
    const deferred = await dropSecondaryStructures(client);
    // The rollups are rebuilt once after the load rather than row by row by their triggers.
    for (const table of TRIGGERED_TABLES) await client.query(`alter table ${table} disable trigger user`);

    await copyInto(client, 'copy sales.products (id, sku, name, category, unit_price) from stdin', function* () {
      for (const [i, p] of products.entries())
        yield `${i + 1}\t${p.sku}\t${p.name}\t${p.category}\t${cents(p.priceCents)}\n`;
    });

    await copyInto(
      client,
      'copy sales.customers (id, name, email, phone, region, created_at) from stdin',
      function* () {
        for (let id = 1; id <= customerCount; id++) {
          const first = pick(rand, FIRST);
          const last = pick(rand, LAST);
          const email = `${first}.${last}${id}@${pick(rand, DOMAINS)}`.toLowerCase();
          const phone = `+1 555 ${String(100 + Math.floor(rand() * 900))}-${String(Math.floor(rand() * 10000)).padStart(4, '0')}`;
          const region = weighted(rand, REGIONS, REGION_WEIGHTS);
          regionOf[id] = region;
          const created = new Date(start - Math.floor(rand() * 365) * DAY_MS).toISOString();
          yield `${id}\t${first} ${last}\t${email}\t${phone}\t${region}\t${created}\n`;
        }
      },
    );

    // The rollups are summed here as the rows are made, in whole cents, and loaded after them.
    const rollups = createRollupSums();
    const recent = end - 2 * DAY_MS;
    await copyInto(
      client,
      'copy sales.orders (id, customer_id, status, ordered_at, currency, total_amount) from stdin',
      function* () {
        for (let i = 0; i < times.length; i++) {
          const at = times[i]!;
          const customer = 1 + Math.floor(rand() * customerCount);
          const status =
            at >= recent
              ? weighted(rand, ['pending', 'paid', 'cancelled'], [0.5, 0.42, 0.08])
              : weighted(rand, ['pending', 'paid', 'shipped', 'cancelled', 'refunded'], [0.02, 0.38, 0.48, 0.07, 0.05]);
          let total = 0;
          const day = Math.floor(at / DAY_MS) * DAY_MS;
          for (const item of itemsOf(i, products)) {
            const amount = item.quantity * products[item.product]!.priceCents;
            total += amount;
          }
          // An order counts once in each category it holds items of, with the revenue of those items.
          for (const [category, { amountCents }] of categoriesOf(i, products)) {
            rollups.add('category_days', `${day}\t${category}\t${status}\t${CURRENCY}`, 1, amountCents);
          }
          rollups.add('order_hours', `${Math.floor(at / HOUR_MS) * HOUR_MS}\t${status}\t${CURRENCY}`, 1, total);
          rollups.add('region_days', `${day}\t${regionOf[customer]}\t${status}\t${CURRENCY}`, 1, total);
          rollups.add(
            'region_hours',
            `${Math.floor(at / HOUR_MS) * HOUR_MS}\t${regionOf[customer]}\t${status}\t${CURRENCY}`,
            1,
            total,
          );
          yield `${i + 1}\t${customer}\t${status}\t${new Date(at).toISOString()}\t${CURRENCY}\t${cents(total)}\n`;
        }
      },
    );

    await copyInto(
      client,
      'copy sales.order_items (order_id, product_id, quantity, unit_price) from stdin',
      function* () {
        for (let i = 0; i < times.length; i++) {
          for (const item of itemsOf(i, products)) {
            orderItems++;
            yield `${i + 1}\t${item.product + 1}\t${item.quantity}\t${cents(products[item.product]!.priceCents)}\n`;
          }
        }
      },
    );

    await client.query('truncate sales.order_hours, sales.region_days, sales.category_days, sales.region_hours');
    for (const [table, columns] of ROLLUP_COLUMNS) {
      await copyInto(client, `copy sales.${table} (${columns}) from stdin`, () => rollups.lines(table));
    }
    // The derived fact category_days sums: each order's items and revenue per category.
    await client.query('truncate sales.order_categories');
    await copyInto(client, 'copy sales.order_categories (order_id, category, items, revenue) from stdin', function* () {
      for (let i = 0; i < times.length; i++) {
        for (const [category, { items, amountCents }] of categoriesOf(i, products)) {
          yield `${i + 1}\t${category}\t${items}\t${cents(amountCents)}\n`;
        }
      }
    });
    for (const statement of deferred) await client.query(statement);
    // product_days keeps a count of item lines the sums above do not: its own rebuild.
    await client.query('select sales.product_days_rebuild()');
    for (const rollup of REGION_ROLLUPS) await client.query(`select ${rollupNames(rollup).rebuild}()`);
    for (const table of TRIGGERED_TABLES) await client.query(`alter table ${table} enable trigger user`);
  });

  const summary = { customers: customerCount, products: products.length, orders: options.orders, orderItems };
  logger.info('seeded demo data', {
    ...summary,
    until: options.until,
    seconds: Math.round(performance.now() - started) / 1000,
  });
  return summary;
}
