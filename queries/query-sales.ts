/**
 * What were net sales in a date range, per day, ISO week, month, region or product category?
 *
 * Example input: { "start_date": "2025-01-01", "end_date": "2025-03-31", "group_by": "month" }
 *
 * SQL (group_by week; day and month differ only in the labels): each day's first instant in the reporting
 * zone and its period's label are bound as arrays, so rows are cut into days exactly where the range is:
 *   select (cast($1 as text[]))[width_bucket("o"."ordered_at", cast($2 as timestamptz[]))] as "group_key",
 *          count(*) as "order_count", round(sum("o"."total_amount"), 2) as "revenue",
 *          round(sum("o"."total_amount") / count(*), 2) as "avg_order_value"
 *   from "reporting"."orders" as "o"
 *   where <ordered_at in range> and "o"."status" not in ($.., $..)
 *   group by "group_key" order by "group_key" limit $n
 * In a zone whose offset is a whole number of hours, day, week and month read the hourly rollup
 * "reporting"."order_hours" instead (sum of order_count and total_amount per hour and status), which
 * triggers keep exact: the same figures from at most 24 x 90 x 5 rows, however many orders there are.
 * By region, the whole UTC days of the range come from the daily rollup "reporting"."region_days"
 * (orders and amounts per day, customer region and status) and the hours around them from the orders
 * joined to "reporting"."customers" (see netOrdersByRegionInRange). By category the sums run over
 * "reporting"."order_items" joined to "reporting"."products", counting distinct orders.
 */
import { sql } from 'kysely';
import { z } from 'zod';
import {
  localPeriodOf,
  type Period,
  netOrdersByRegionInRange,
  orderHoursInRange,
  ordersInRange,
  rollupCovers,
} from '../src/db/range-sql.js';
import { NON_REVENUE_STATUSES, oneOf } from '../src/lib/arguments.js';
import { checkDateRange, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { count, echoRange, money, rangeEcho, rowsEnvelope } from '../src/lib/result-shape.js';
import { defineTemplate } from '../src/registry.js';

const GROUPINGS = ['day', 'week', 'month', 'region', 'category'] as const;
type Grouping = (typeof GROUPINGS)[number];

const input = z
  .strictObject({
    ...dateRangeFields,
    group_by: oneOf(GROUPINGS, 'How to group the sales'),
  })
  .superRefine(checkDateRange);

const row = z.object({
  period: z.string().optional().describe('First day of the day, ISO week (Monday) or month, YYYY-MM-DD'),
  region: z.string().optional(),
  category: z.string().optional(),
  order_count: count,
  revenue: money,
  avg_order_value: money,
});

const output = z.object({
  ...rangeEcho,
  group_by: z.enum(GROUPINGS),
  ...rowsEnvelope(row),
});

const keyName = (grouping: Grouping): 'period' | 'region' | 'category' =>
  grouping === 'region' || grouping === 'category' ? grouping : 'period';

export const querySales = defineTemplate({
  name: 'query_sales',
  title: 'Net sales by period, region or category',
  description: [
    'Net sales between start_date and end_date (both inclusive, at most 90 days), grouped by day, week (ISO, starting Monday), month, customer region or product category.',
    'Use it for revenue, order volume and average order value questions: "revenue by region this quarter", "daily sales last month", "which category sold most in March".',
    'Net sales leave out cancelled and refunded orders. Revenue is the sum of quantity x unit price of the order items; by category, order_count is the number of orders holding at least one item of that category.',
    'Periods are labelled by their first day, which may fall before start_date; only orders inside the range are counted. Periods without sales are not listed.',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-01-01', end_date: '2025-03-31', group_by: 'month' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'region' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'category' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'day' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'week' },
  ],
  output,
  columns: {
    group_key: { type: 'text', source: 'computed' },
    order_count: { type: 'integer', source: 'computed' },
    revenue: { type: 'money', source: 'computed' },
    avg_order_value: { type: 'money', source: 'computed' },
  },
  query: (db, args, ctx) => {
    const range = resolveRange(args);
    const orders = ordersInRange(db, range, ctx.timeZone).where('o.status', 'not in', NON_REVENUE_STATUSES);
    switch (args.group_by) {
      case 'region':
        return db
          .selectFrom(netOrdersByRegionInRange(db, range, ctx.timeZone).as('parts'))
          .select((eb) => [
            'parts.region as group_key',
            sql<string>`sum(${eb.ref('parts.order_count')})`.as('order_count'),
            sql<string>`round(sum(${eb.ref('parts.total_amount')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('parts.total_amount')}) / sum(${eb.ref('parts.order_count')}), 2)`.as(
              'avg_order_value',
            ),
          ])
          .groupBy('parts.region')
          .orderBy('revenue', 'desc')
          .orderBy('group_key');
      case 'category':
        return orders
          .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
          .innerJoin('reporting.products as p', 'p.id', 'oi.product_id')
          .select((eb) => [
            'p.category as group_key',
            sql<string>`count(distinct ${eb.ref('o.id')})`.as('order_count'),
            sql<string>`round(sum(${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('oi.quantity')} * ${eb.ref('oi.unit_price')}) / count(distinct ${eb.ref('o.id')}), 2)`.as(
              'avg_order_value',
            ),
          ])
          .groupBy('p.category')
          .orderBy('revenue', 'desc')
          .orderBy('group_key');
      default: {
        const period: Period = args.group_by;
        if (rollupCovers(range, ctx.timeZone)) {
          return orderHoursInRange(db, range, ctx.timeZone)
            .where('h.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              localPeriodOf(eb.ref('h.hour'), range, ctx.timeZone, period).as('group_key'),
              eb.fn.sum<string>('h.order_count').as('order_count'),
              sql<string>`round(sum(${eb.ref('h.total_amount')}), 2)`.as('revenue'),
              sql<string>`round(sum(${eb.ref('h.total_amount')}) / sum(${eb.ref('h.order_count')}), 2)`.as(
                'avg_order_value',
              ),
            ])
            .groupBy(sql.ref('group_key'))
            .orderBy('group_key');
        }
        return orders
          .select((eb) => [
            localPeriodOf(eb.ref('o.ordered_at'), range, ctx.timeZone, period).as('group_key'),
            eb.fn.countAll().as('order_count'),
            sql<string>`round(sum(${eb.ref('o.total_amount')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('o.total_amount')}) / count(*), 2)`.as('avg_order_value'),
          ])
          .groupBy(sql.ref('group_key'))
          .orderBy('group_key');
      }
    }
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    group_by: args.group_by,
    rows: rows.map(
      ({ group_key, ...figures }) => ({ [keyName(args.group_by)]: group_key, ...figures }) as z.infer<typeof row>,
    ),
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
