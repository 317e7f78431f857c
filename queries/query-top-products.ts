/**
 * Which products sold best in a date range, by revenue or by units?
 *
 * Example input: { "start_date": "2025-01-01", "end_date": "2025-03-31", "limit": 5, "metric": "units" }
 *
 * SQL (the parts: whole UTC days from the daily rollup, the hours around them from the items):
 *   select "p"."sku", "p"."name", "p"."category",
 *          sum("parts"."units") as "units", round(sum("parts"."revenue"), 2) as "revenue"
 *   from (select "d"."product_id", "d"."units", "d"."revenue" from "reporting"."product_days" as "d"
 *          where "d"."day" >= <first UTC midnight in range> and "d"."day" < <last one> and "d"."status" not in (..)
 *         union all
 *         select "oi"."product_id", "oi"."quantity"::bigint, "oi"."quantity" * "oi"."unit_price"
 *           from "reporting"."orders" as "o" inner join "reporting"."order_items" as "oi" on "oi"."order_id" = "o"."id"
 *          where "o"."ordered_at" >= <range start> and "o"."ordered_at" < <first UTC midnight> and "o"."status" not in (..)
 *         union all <the same, from the last UTC midnight to the range end>) as "parts"
 *   inner join "reporting"."products" as "p" on "p"."id" = "parts"."product_id"
 *   group by "p"."id", "p"."sku", "p"."name", "p"."category"
 *   order by "revenue" desc, "units" desc, "p"."sku" limit $n   -- metric units swaps the first two
 */
import { sql } from 'kysely';
import { z } from 'zod';
import { netItemsInRange } from '../src/db/range-sql.js';
import { oneOf, rowLimit } from '../src/lib/arguments.js';
import { checkDateRange, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { count, echoRange, money, rangeEcho, rowsEnvelope } from '../src/lib/result-shape.js';
import { defineTemplate } from '../src/registry.js';

const METRICS = ['revenue', 'units'] as const;

const input = z
  .strictObject({
    ...dateRangeFields,
    limit: rowLimit(10),
    metric: oneOf(METRICS, 'What to rank by').default('revenue'),
  })
  .superRefine(checkDateRange);

const row = z.object({
  sku: z.string(),
  name: z.string(),
  category: z.string(),
  units: count,
  revenue: money,
});

const output = z.object({
  ...rangeEcho,
  metric: z.enum(METRICS),
  ...rowsEnvelope(row),
});

export const queryTopProducts = defineTemplate({
  name: 'query_top_products',
  title: 'Best-selling products',
  description: [
    'Ranks products by net revenue or by units sold between start_date and end_date (both inclusive, at most 90 days), best first.',
    'Use it for "top 10 products this month", "which products sold the most units last quarter".',
    "Net sales leave out cancelled and refunded orders; a product's revenue is the sum of quantity x unit price of its order items.",
    'limit is 1..100 (default 10); metric is revenue (default) or units.',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-01-01', end_date: '2025-03-31', limit: 5, metric: 'units' },
    { start_date: '2025-03-01', end_date: '2025-03-31' },
  ],
  output,
  columns: {
    sku: { type: 'text', source: 'reporting.products.sku' },
    name: { type: 'text', source: 'reporting.products.name' },
    category: { type: 'text', source: 'reporting.products.category' },
    units: { type: 'integer', source: 'computed' },
    revenue: { type: 'money', source: 'computed' },
  },
  rowLimit: (args) => args.limit,
  query: (db, args, ctx) => {
    const [first, second] = args.metric === 'units' ? (['units', 'revenue'] as const) : (['revenue', 'units'] as const);
    return db
      .selectFrom(netItemsInRange(db, resolveRange(args), ctx.timeZone).as('parts'))
      .innerJoin('reporting.products as p', 'p.id', 'parts.product_id')
      .select((eb) => [
        'p.sku',
        'p.name',
        'p.category',
        sql<string>`sum(${eb.ref('parts.units')})`.as('units'),
        sql<string>`round(sum(${eb.ref('parts.revenue')}), 2)`.as('revenue'),
      ])
      .groupBy(['p.id', 'p.sku', 'p.name', 'p.category'])
      .orderBy(first, 'desc')
      .orderBy(second, 'desc')
      .orderBy('p.sku');
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    metric: args.metric,
    rows: rows as z.infer<typeof row>[],
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
