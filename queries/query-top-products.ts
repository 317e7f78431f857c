/**
 * Which products sold best in a date range, by revenue or by units, in each currency?
 *
 * Revenues in two currencies do not compare, so each currency is ranked on its own: a product sold in
 * USD and EUR is a row in each, with the units and revenue of its sales in that currency, and `limit`
 * is the number of products per currency. Single-currency data gives the same rows as a plain ranking.
 *
 * Example input: { "start_date": "2025-01-01", "end_date": "2025-03-31", "limit": 5, "metric": "units" }
 *
 * SQL (the parts: whole UTC days from the daily rollup, the hours around them from the items):
 *   select "p"."sku", "p"."name", "p"."category", "ranked"."currency", "ranked"."units", "ranked"."revenue",
 *          "ranked"."currency_products"
 *   from (select "parts"."product_id", "parts"."currency",
 *                sum("parts"."units") as "units", round(sum("parts"."revenue"), 2) as "revenue",
 *                row_number() over (partition by "parts"."currency"
 *                  order by round(sum("parts"."revenue"), 2) desc, sum("parts"."units") desc, "ps"."sku") as "rank",
 *                count(*) over (partition by "parts"."currency") as "currency_products"
 *         from (select "d"."product_id", "d"."currency", "d"."units", "d"."revenue" from "reporting"."product_days" as "d"
 *                where "d"."day" >= <first UTC midnight in range> and "d"."day" < <last one> and "d"."status" not in (..)
 *               union all
 *               select "oi"."product_id", "o"."currency", "oi"."quantity"::bigint, "oi"."quantity" * "oi"."unit_price"
 *                 from "reporting"."orders" as "o" inner join "reporting"."order_items" as "oi" on "oi"."order_id" = "o"."id"
 *                where "o"."ordered_at" >= <range start> and "o"."ordered_at" < <first UTC midnight> and "o"."status" not in (..)
 *               union all <the same, from the last UTC midnight to the range end>) as "parts"
 *         inner join "reporting"."products" as "ps" on "ps"."id" = "parts"."product_id"
 *         group by "parts"."product_id", "parts"."currency", "ps"."sku") as "ranked"
 *   inner join "reporting"."products" as "p" on "p"."id" = "ranked"."product_id"
 *   where "ranked"."rank" <= $limit
 *   order by "ranked"."currency", "ranked"."rank" limit $n   -- metric units swaps revenue and units in the window
 * currency_products (how many products sold in that currency) tells present() whether a currency had
 * more products than `limit`, so that `truncated` stays honest; it is not returned.
 * For a caller scoped to regions, the whole UTC days come from "reporting"."region_product_days" with
 * "d"."region" in ($r1, ..), and the hours around them from the items of orders held to the customers
 * of those regions ("o"."customer_id" in (select "rc"."id" from "reporting"."customers" as "rc" where
 * "rc"."region" in ($r1, ..))): the product rollup has no region.
 */
import { sql } from 'kysely';
import { z } from 'zod';
import { netItemsInRange, regionsOf } from '../pack/range-sql.js';
import { oneOf, rowLimit } from '../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { count, currency, echoRange, money, rangeEcho, rowsEnvelope } from '../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';

const METRICS = ['revenue', 'units'] as const;

const input = z
  .strictObject({
    ...dateRangeFields,
    limit: rowLimit(10),
    metric: oneOf(METRICS, 'What to rank by').default('revenue'),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  sku: z.string(),
  name: z.string(),
  category: z.string(),
  currency,
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
    'Ranks products by net revenue or units sold, best first; limit counts per currency.',
    'Use it for "top 10 products this month".',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-01-01', end_date: '2025-03-31', limit: 5, metric: 'units' },
    { start_date: '2025-03-01', end_date: '2025-03-31' },
  ],
  output,
  dataScope: ['region'],
  columns: {
    sku: { type: 'text', source: 'reporting.products.sku', treatment: 'plain' },
    name: { type: 'text', source: 'reporting.products.name', treatment: 'plain' },
    category: { type: 'text', source: 'reporting.products.category', treatment: 'plain' },
    currency: {
      type: 'text',
      source: ['reporting.product_days.currency', 'reporting.orders.currency'],
      treatment: 'plain',
    },
    units: { type: 'integer', source: 'computed', treatment: 'plain' },
    revenue: { type: 'money', source: 'computed', treatment: 'plain' },
    currency_products: { type: 'integer', source: 'computed', treatment: 'plain' },
  },
  // No rowLimit: `limit` counts per currency, so the query ranks within each currency itself and the
  // registry caps the whole answer at MAX_ROWS.
  query: (db, args, ctx) => {
    const ranked = db
      .selectFrom(netItemsInRange(db, resolveRange(args), ctx.timeZone, regionsOf(ctx)))
      .innerJoin('reporting.products as ps', 'ps.id', 'parts.product_id')
      .select((eb) => {
        const units = sql<string>`sum(${eb.ref('parts.units')})`;
        const revenue = sql<string>`round(sum(${eb.ref('parts.revenue')}), 2)`;
        const [first, second] = args.metric === 'units' ? [units, revenue] : [revenue, units];
        return [
          'parts.product_id',
          'parts.currency',
          units.as('units'),
          revenue.as('revenue'),
          eb.fn
            .agg<number>('row_number', [])
            .over((ob) =>
              ob.partitionBy('parts.currency').orderBy(first, 'desc').orderBy(second, 'desc').orderBy('ps.sku'),
            )
            .as('rank'),
          eb.fn
            .countAll<string>()
            .over((ob) => ob.partitionBy('parts.currency'))
            .as('currency_products'),
        ];
      })
      .groupBy(['parts.product_id', 'parts.currency', 'ps.sku']);
    return db
      .selectFrom(ranked.as('ranked'))
      .innerJoin('reporting.products as p', 'p.id', 'ranked.product_id')
      .where('ranked.rank', '<=', args.limit)
      .select([
        'p.sku',
        'p.name',
        'p.category',
        'ranked.currency',
        'ranked.units',
        'ranked.revenue',
        'ranked.currency_products',
      ])
      .orderBy('ranked.currency')
      .orderBy('ranked.rank');
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    metric: args.metric,
    rows: rows.map(({ currency_products: _products, ...product }) => product as z.infer<typeof row>),
    row_count: rows.length,
    // True too when a currency sold more products than `limit`, though every row asked for fits.
    truncated: page.truncated || rows.some((r) => (r.currency_products as number) > args.limit),
  }),
});
