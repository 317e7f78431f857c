/**
 * The column treatments a template declares: `drop` keeps a column from leaving, `bucket` returns the
 * range an amount falls in. Figures come from SQL of the test's own through the admin
 * connection; the templates are written here, as a pack author would write them.
 */
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTemplate } from '../../pack/kit.js';
import { ordersInRange } from '../../pack/range-sql.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../src/lib/date-range.js';
import { bucketOf, createRegistry, type AnyTemplate } from '../../src/registry/index.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../support/harness.js';

const input = z.strictObject({ ...dateRangeFields }).superRefine(checkDateRange, DATE_RANGE_ALWAYS);
const BOUNDS = [50, 100, 500] as const;

/** The latest orders of a range: a token, the amount as a band, and the customer id kept from leaving. */
const bandedOrders = defineTemplate({
  name: 'query_banded_orders',
  title: 'Orders by amount band',
  description: 'Lists the latest orders of a range with their amount as a band; a test template.',
  input,
  examples: [{ start_date: '2025-06-01', end_date: '2025-06-30' }],
  output: z.object({
    rows: z.array(z.object({ order_ref: z.string(), amount_band: z.string() }).strict()),
  }),
  columns: {
    order_ref: { type: 'text', source: 'reporting.orders.id', treatment: 'token' },
    amount_band: {
      type: 'money',
      source: 'reporting.orders.total_amount',
      treatment: { bucket: [...BOUNDS] as [number, ...number[]] },
    },
    customer_key: { type: 'text', source: 'reporting.orders.customer_id', treatment: 'drop' },
  },
  rowLimit: () => 30,
  query: (db, args, ctx) =>
    ordersInRange(db, resolveRange(args), ctx.timeZone)
      .select(['o.id as order_ref', 'o.total_amount as amount_band', 'o.customer_id as customer_key'])
      .orderBy('o.ordered_at', 'desc')
      .orderBy('o.id', 'desc'),
  present: (rows) => ({ rows: rows as { order_ref: string; amount_band: string }[] }),
}) as AnyTemplate;

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin.end();
});

describe('bucket', () => {
  it('names the range an amount falls in, bounds included below', () => {
    expect(bucketOf(-1, [0, 10])).toBe('under 0');
    expect(bucketOf(0, [0, 10])).toBe('0 to under 10');
    expect(bucketOf(9.99, [0, 10])).toBe('0 to under 10');
    expect(bucketOf(10, [0, 10])).toBe('10 or more');
  });
});

describe('drop and bucket, end to end', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ templates: [bandedOrders] });
  });
  afterAll(async () => harness.close());

  it('returns the band of each amount and never the dropped column', async () => {
    const { rows: expected } = await admin.query<{ band: string }>(
      `select case when total_amount < 50 then 'under 50' when total_amount < 100 then '50 to under 100'
                   when total_amount < 500 then '100 to under 500' else '500 or more' end as band
         from sales.orders where ordered_at >= '2025-06-01' and ordered_at < '2025-07-01'
        order by ordered_at desc, id desc limit 30`,
    );
    expect(expected.length).toBe(30);
    const result = structured<{ rows: Record<string, unknown>[] }>(
      await harness.call('query_banded_orders', { start_date: '2025-06-01', end_date: '2025-06-30' }),
    );
    expect(result.rows.map((r) => r.amount_band)).toEqual(expected.map((e) => e.band));
    // More than one band, or the check says little.
    expect(new Set(expected.map((e) => e.band)).size).toBeGreaterThan(1);
    for (const row of result.rows) expect(Object.keys(row).sort()).toEqual(['amount_band', 'order_ref']);
  });
});

describe('the threshold of protected counts', () => {
  it('refuses a threshold under 2 at start-up', () => {
    expect(() => createRegistry([bandedOrders], { smallGroupThresholds: { query_banded_orders: 1 } })).toThrow(
      /threshold of protected counts must be a whole number of at least 2/,
    );
  });
});

describe('a template is refused at start-up, with a message naming the rule and the fix', () => {
  it('when it builds SQL from a string', () => {
    const spliced: AnyTemplate = {
      ...bandedOrders,
      name: 'query_spliced',
      query: (db, args: { start_date: string; end_date: string }) =>
        db
          .selectFrom('reporting.orders as o')
          .where('o.ordered_at', '>=', sql<Date>`${sql.raw(`'${args.start_date}'`)}::timestamptz`)
          .select(['o.id as order_ref', 'o.total_amount as amount_band', 'o.customer_id as customer_key']),
    };
    let message = '';
    try {
      createRegistry([spliced]);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(
      /template query_spliced: argument start_date\/end_date changes the SQL text, not only its parameters .* every value must reach SQL as a bind parameter: use Kysely builders or sql`\$\{value\}`, never sql\.raw/,
    );
  });

  it('when it selects a personal column without its treatment', () => {
    const raw = {
      ...bandedOrders,
      name: 'query_raw_customer',
      columns: {
        ...bandedOrders.columns,
        customer_key: { type: 'text', source: 'reporting.orders.customer_id', treatment: 'plain' },
      },
    } as AnyTemplate;
    expect(() => createRegistry([raw])).toThrow(
      'template query_raw_customer: column customer_key returns personal data (reporting.orders.customer_id, internal_id) and must declare treatment "token" (or "drop" to keep it from leaving)',
    );
  });

  it('when a column declares no treatment', () => {
    const { treatment: _t, ...bare } = bandedOrders.columns.amount_band!;
    const untreated = {
      ...bandedOrders,
      name: 'query_untreated',
      columns: { ...bandedOrders.columns, amount_band: bare },
    } as unknown as AnyTemplate;
    expect(() => createRegistry([untreated])).toThrow(/column amount_band declares no treatment; give it one of plain/);
  });

  it('when a bucket is not in ascending order', () => {
    const unordered = {
      ...bandedOrders,
      name: 'query_unordered',
      columns: {
        ...bandedOrders.columns,
        amount_band: { type: 'money', source: 'reporting.orders.total_amount', treatment: { bucket: [100, 50] } },
      },
    } as AnyTemplate;
    expect(() => createRegistry([unordered])).toThrow(/bucket bounds must be finite numbers in ascending order/);
  });
});

describe('the bound-value check is no obstacle to honest templates', () => {
  it('passes a template whose values are all parameters', async () => {
    expect(() => createRegistry([bandedOrders])).not.toThrow();
    const text = textOf(
      await (async () => {
        const harness = await startHarness({ templates: [bandedOrders] });
        try {
          return await harness.call('query_banded_orders', { start_date: '2025-06-01', end_date: '2025-06-02' });
        } finally {
          await harness.close();
        }
      })(),
    );
    expect(text).toContain('order_ref');
  });
});
