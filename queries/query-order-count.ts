/**
 * How many orders were placed in a date range, in total and per status?
 *
 * Example input: { "start_date": "2025-03-01", "end_date": "2025-03-07" }
 *
 * SQL, in a zone whose offset is a whole number of hours (the hourly rollup, kept exact by triggers):
 *   select "h"."status", sum("h"."order_count") as "order_count"
 *   from "reporting"."order_hours" as "h"
 *   where "h"."hour" >= (cast($1 as timestamp) at time zone $2) and "h"."hour" < (cast($3 as timestamp) at time zone $4)
 *     [and "h"."status" = $5]
 *   group by "h"."status" order by "h"."status" limit $6
 * otherwise, from the orders themselves:
 *   select "o"."status", count(*) as "order_count"
 *   from "reporting"."orders" as "o"
 *   where "o"."ordered_at" >= (cast($1 as timestamp) at time zone $2)
 *     and "o"."ordered_at" < (cast($3 as timestamp) at time zone $4)
 *     [and "o"."status" = $5]
 *   group by "o"."status" order by "o"."status" limit $6
 * For a caller scoped to regions, the hourly rollup (which has no region) gives way to the daily region
 * rollup for the whole UTC days and the orders for the hours around them, both held to the regions:
 *   select "parts"."status", sum("parts"."order_count") as "order_count"
 *   from (select "r"."region", "r"."status", "r"."currency", "r"."order_count", "r"."total_amount"
 *           from "reporting"."region_days" as "r"
 *          where "r"."day" >= <first UTC midnight> and "r"."day" < <last one> and "r"."region" in ($r1, ..)
 *         union all
 *         select "c"."region", "o"."status", .. from "reporting"."orders" as "o"
 *           inner join "reporting"."customers" as "c" on "c"."id" = "o"."customer_id"
 *          where <ordered_at in the hours before the first UTC midnight>
 *            and "o"."customer_id" in (select "rc"."id" from "reporting"."customers" as "rc" where "rc"."region" in ($r1, ..))
 *         union all <the same, after the last one>) as "parts"
 *   [where "parts"."status" = $s] group by "parts"."status" order by "parts"."status" limit $n
 */
import { z } from 'zod';
import { orderHoursInRange, ordersByRegionInRange, ordersInRange, regionsOf } from '../pack/range-sql.js';
import { ORDER_STATUSES, orderStatus, type OrderStatus } from '../pack/statuses.js';
import { rollupCovers } from '../src/db/range-sql.js';
import { changeFields, changeOf, compareToField, comparisonEcho } from '../src/lib/comparison.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { count, echoRange, rangeEcho } from '../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';

const input = z
  .strictObject({
    ...dateRangeFields,
    status: orderStatus.optional(),
    ...compareToField,
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const byStatus = z.object({ pending: count, paid: count, shipped: count, cancelled: count, refunded: count });

const output = z.object({
  ...rangeEcho,
  status: z.enum(ORDER_STATUSES).nullable(),
  order_count: count,
  by_status: byStatus.optional(),
  comparison: comparisonEcho
    .extend({
      order_count: count,
      ...changeFields,
      by_status: byStatus.optional(),
    })
    .optional(),
});

export const queryOrderCount = defineTemplate({
  name: 'query_order_count',
  title: 'Count orders',
  description: [
    'Orders placed in a range, every status (refunded included), with by_status unless status is given.',
    'Use it for "how many orders were refunded last week?".',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-03-01', end_date: '2025-03-07' },
    { start_date: '2025-03-01', end_date: '2025-03-31', status: 'refunded' },
    { period: 'last_week', compare_to: 'previous_year' },
  ],
  output,
  dataScope: ['region'],
  columns: {
    status: {
      type: 'text',
      source: ['reporting.orders.status', 'reporting.order_hours.status', 'reporting.region_days.status'],
      treatment: 'plain',
    },
    order_count: { type: 'integer', source: 'computed', treatment: 'plain' },
  },
  query: (db, args, ctx) => {
    const range = resolveRange(args);
    const regions = regionsOf(ctx);
    if (regions !== undefined) {
      return db
        .selectFrom(ordersByRegionInRange(db, range, ctx.timeZone, { regions }).as('parts'))
        .$if(args.status !== undefined, (qb) => qb.where('parts.status', '=', args.status!))
        .select((eb) => ['parts.status', eb.fn.sum<string>('parts.order_count').as('order_count')])
        .groupBy('parts.status')
        .orderBy('parts.status');
    }
    if (rollupCovers(range, ctx.timeZone)) {
      return orderHoursInRange(db, range, ctx.timeZone)
        .$if(args.status !== undefined, (qb) => qb.where('h.status', '=', args.status!))
        .select((eb) => ['h.status', eb.fn.sum<string>('h.order_count').as('order_count')])
        .groupBy('h.status')
        .orderBy('h.status');
    }
    return ordersInRange(db, range, ctx.timeZone)
      .$if(args.status !== undefined, (qb) => qb.where('o.status', '=', args.status!))
      .select((eb) => ['o.status', eb.fn.countAll().as('order_count')])
      .groupBy('o.status')
      .orderBy('o.status');
  },
  present: (rows, _page, args, ctx) => {
    const perStatus = Object.fromEntries(ORDER_STATUSES.map((s) => [s, 0])) as Record<OrderStatus, number>;
    for (const row of rows) perStatus[row.status as OrderStatus] = row.order_count as number;
    const total = Object.values(perStatus).reduce((sum, n) => sum + n, 0);
    return {
      ...echoRange(args, ctx.timeZone),
      status: args.status ?? null,
      order_count: total,
      ...(args.status === undefined ? { by_status: perStatus } : {}),
    };
  },
  compare: (current, prior, comparison) => ({
    ...current,
    comparison: {
      ...comparison,
      order_count: prior.order_count,
      ...changeOf(current.order_count, prior.order_count),
      ...(prior.by_status ? { by_status: prior.by_status } : {}),
    },
  }),
});
