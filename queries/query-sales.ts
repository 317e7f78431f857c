/**
 * What were net sales in a date range, per day, ISO week, month, region or product category, in each
 * currency? A figure never adds two currencies: every row is one group in one currency.
 *
 * Example input: { "start_date": "2025-01-01", "end_date": "2025-03-31", "group_by": "month" }
 *
 * SQL (group_by week; day and month differ only in the labels): each day's first instant in the reporting
 * zone and its period's label are bound as arrays, so rows are cut into days exactly where the range is:
 *   select (cast($1 as text[]))[width_bucket("o"."ordered_at", cast($2 as timestamptz[]))] as "group_key",
 *          "o"."currency",
 *          count(*) as "order_count", round(sum("o"."total_amount"), 2) as "revenue",
 *          round(sum("o"."total_amount") / count(*), 2) as "avg_order_value"
 *   from "reporting"."orders" as "o"
 *   where <ordered_at in range> and "o"."status" not in ($.., $..)
 *   group by "group_key", "o"."currency" order by "group_key", "o"."currency" limit $n
 * In a zone whose offset is a whole number of hours, day, week and month read the hourly rollup
 * "reporting"."order_hours" instead (sum of order_count and total_amount per hour, status and
 * currency), which triggers keep exact: the same figures from at most 24 x 90 x 5 rows per currency,
 * however many orders there are.
 * By region, the whole UTC days of the range come from the daily rollup "reporting"."region_days"
 * (orders and amounts per day, customer region, status and currency) and the hours around them from
 * the orders joined to "reporting"."customers" (see ordersByRegionInRange). By category, likewise
 * from "reporting"."category_days" (orders holding an item of the category, and the items' revenue,
 * per day, category, status and currency) and from the items of the hours around them:
 *   select "parts"."category" as "group_key", "parts"."currency",
 *          sum("parts"."order_count") as "order_count", round(sum("parts"."revenue"), 2) as "revenue",
 *          round(sum("parts"."revenue") / sum("parts"."order_count"), 2) as "avg_order_value"
 *   from (select "k"."category", "k"."currency", "k"."order_count", "k"."revenue" from "reporting"."category_days" as "k"
 *          where "k"."day" >= <first UTC midnight in range> and "k"."day" < <last one> and "k"."status" not in (..)
 *         union all
 *         select "p"."category", "o"."currency", count(distinct "o"."id"), sum("oi"."quantity" * "oi"."unit_price")
 *           from "reporting"."orders" as "o" inner join "reporting"."order_items" as "oi" on "oi"."order_id" = "o"."id"
 *                inner join "reporting"."products" as "p" on "p"."id" = "oi"."product_id"
 *          where "o"."ordered_at" >= <range start> and "o"."ordered_at" < <first UTC midnight> and "o"."status" not in (..)
 *          group by "p"."category", "o"."currency"
 *         union all <the same, from the last UTC midnight to the range end>) as "parts"
 *   group by "parts"."category", "parts"."currency"
 *   order by "parts"."currency", "revenue" desc, "group_key" limit $n
 * An order lies in one UTC day and one part, so the distinct orders of each add up (see netCategoriesInRange).
 * Periods are listed in time order, each period's currencies alphabetically; regions and categories
 * currency by currency, by revenue within each (revenues in two currencies do not compare).
 * Held to regions (a `region` asked for, or a caller's data scope), only the orders of customers in
 * them count: "o"."customer_id" in (select "rc"."id" from "reporting"."customers" as "rc" where
 * "rc"."region" in ($r1, ..) [and "rc"."region" = $r]), and the region rollups' "region" likewise: day,
 * week and month read region_hours instead of order_hours, region region_days, and category the
 * declared region_category_days (pack/rollups.ts) instead of category_days, for the whole UTC days.
 */
import { sql } from 'kysely';
import { z } from 'zod';
import { defineTemplate } from '../pack/kit.js';
import {
  netCategoriesInRange,
  orderHoursInRange,
  ordersByRegionInRange,
  ordersInRange,
  regionsOf,
} from '../pack/range-sql.js';
import { NON_REVENUE_STATUSES } from '../pack/statuses.js';
import { localPeriodOf, rollupCovers, type Period } from '../src/db/range-sql.js';
import { MAX_ROWS, oneOf } from '../src/lib/arguments.js';
import { changeFields, changeOf, compareToField, comparisonEcho, pairGroups } from '../src/lib/comparison.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import {
  bucketBounds,
  bucketFields,
  count,
  currency,
  echoRange,
  money,
  rangeEcho,
  rowsEnvelope,
} from '../src/lib/result-shape.js';

const GROUPINGS = ['day', 'week', 'month', 'region', 'category'] as const;
type Grouping = (typeof GROUPINGS)[number];

const input = z
  .strictObject({
    ...dateRangeFields,
    group_by: oneOf(GROUPINGS),
    region: z.string().min(1).max(100).optional(),
    ...compareToField,
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  period: z.string().optional(),
  ...bucketFields,
  region: z.string().optional(),
  category: z.string().optional(),
  currency,
  order_count: count,
  revenue: money,
  avg_order_value: money.nullable(),
  prior_revenue: money.nullable().optional(),
  ...partial(changeFields),
});

const total = z.object({
  currency,
  revenue: money,
  prior_revenue: money,
  ...changeFields,
});

const output = z.object({
  ...rangeEcho,
  group_by: z.enum(GROUPINGS),
  region: z.string().optional(),
  ...rowsEnvelope(row),
  comparison: comparisonEcho
    .extend({
      totals: z.array(total).nullable(),
      totals_note: z.string().optional(),
    })
    .optional(),
});

type Row = z.infer<typeof row>;
type Output = z.infer<typeof output>;

/** The change fields, optional: a row carries them only when the call compared. */
function partial<T extends Record<string, z.ZodType>>(fields: T): { [K in keyof T]: z.ZodOptional<T[K]> } {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.optional()])) as never;
}

/** Net revenue per currency over every row, in cents so that the sum is exact. */
function revenueByCurrency(rows: readonly Row[]): Map<string, number> {
  const cents = new Map<string, number>();
  for (const r of rows) cents.set(r.currency, (cents.get(r.currency) ?? 0) + Math.round(r.revenue * 100));
  return new Map([...cents].map(([c, v]) => [c, v / 100]));
}

/**
 * The rows of a comparison by region or category: every group of either range, so that one that sold
 * before and nothing now is listed with revenue 0 and its fall (-100 %). The current order stays;
 * such groups follow the others of their currency. A group missing from a complete prior result had
 * no sales then (prior_revenue 0); from a truncated one, it is unknown (null). Missing from a
 * truncated current result, a prior group may lie beyond the cut, so none is added.
 */
function comparedGroups(current: Output, prior: Output): { rows: Row[]; truncated: boolean } {
  const key = (r: Row): string => `${r.region ?? r.category}\u0000${r.currency}`;
  const name = keyName(current.group_by);
  const paired = pairGroups(current.rows, current.truncated ? [] : prior.rows, key).map(({ now, before }): Row => {
    if (now === undefined) {
      return {
        [name]: before![name],
        currency: before!.currency,
        order_count: 0,
        revenue: 0,
        avg_order_value: null,
        prior_revenue: before!.revenue,
        ...changeOf(0, before!.revenue),
      };
    }
    const priorRevenue = before?.revenue ?? (prior.truncated ? null : 0);
    return { ...now, prior_revenue: priorRevenue, ...changeOf(now.revenue, priorRevenue) };
  });
  // Stable: each currency's rows stay in the order above.
  paired.sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  const cut = paired.length > MAX_ROWS;
  return { rows: cut ? paired.slice(0, MAX_ROWS) : paired, truncated: current.truncated || cut };
}

const keyName = (grouping: Grouping): 'period' | 'region' | 'category' =>
  grouping === 'region' || grouping === 'category' ? grouping : 'period';

export const querySales = defineTemplate({
  name: 'query_sales',
  title: 'Net sales by period, region or category',
  description: [
    'Net revenue, orders and average order value by day, ISO week, month, region or category, a row per group and currency.',
    'Use it for "revenue by region this month".',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-01-01', end_date: '2025-03-31', group_by: 'month' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'region' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'category' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'day' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'week' },
    { start_date: '2025-03-01', end_date: '2025-03-31', group_by: 'category', region: 'Europe' },
    { period: 'last_week', group_by: 'region', compare_to: 'previous_period' },
  ],
  output,
  dataScope: ['region'],
  columns: {
    group_key: { type: 'text', source: 'computed', treatment: 'plain' },
    currency: {
      type: 'text',
      source: [
        'reporting.orders.currency',
        'reporting.order_hours.currency',
        'reporting.region_days.currency',
        'reporting.region_hours.currency',
        'reporting.category_days.currency',
      ],
      treatment: 'plain',
    },
    order_count: { type: 'integer', source: 'computed', treatment: 'plain' },
    revenue: { type: 'money', source: 'computed', treatment: 'plain' },
    avg_order_value: { type: 'money', source: 'computed', treatment: 'plain' },
  },
  query: (db, args, ctx) => {
    const range = resolveRange(args);
    const regions = regionsOf(ctx, args.region);
    const orders = ordersInRange(db, range, ctx.timeZone, regions).where('o.status', 'not in', NON_REVENUE_STATUSES);
    switch (args.group_by) {
      case 'region':
        return db
          .selectFrom(ordersByRegionInRange(db, range, ctx.timeZone, { net: true, regions }).as('parts'))
          .select((eb) => [
            'parts.region as group_key',
            'parts.currency',
            sql<string>`sum(${eb.ref('parts.order_count')})`.as('order_count'),
            sql<string>`round(sum(${eb.ref('parts.total_amount')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('parts.total_amount')}) / sum(${eb.ref('parts.order_count')}), 2)`.as(
              'avg_order_value',
            ),
          ])
          .groupBy(['parts.region', 'parts.currency'])
          .orderBy('parts.currency')
          .orderBy('revenue', 'desc')
          .orderBy('group_key');
      case 'category':
        return db
          .selectFrom(netCategoriesInRange(db, range, ctx.timeZone, regions))
          .select((eb) => [
            'parts.category as group_key',
            'parts.currency',
            sql<string>`sum(${eb.ref('parts.order_count')})`.as('order_count'),
            sql<string>`round(sum(${eb.ref('parts.revenue')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('parts.revenue')}) / sum(${eb.ref('parts.order_count')}), 2)`.as(
              'avg_order_value',
            ),
          ])
          .groupBy(['parts.category', 'parts.currency'])
          .orderBy('parts.currency')
          .orderBy('revenue', 'desc')
          .orderBy('group_key');
      default: {
        const period: Period = args.group_by;
        if (rollupCovers(range, ctx.timeZone)) {
          return orderHoursInRange(db, range, ctx.timeZone, regions)
            .where('h.status', 'not in', NON_REVENUE_STATUSES)
            .select((eb) => [
              localPeriodOf(eb.ref('h.hour'), range, ctx.timeZone, period).as('group_key'),
              'h.currency',
              eb.fn.sum<string>('h.order_count').as('order_count'),
              sql<string>`round(sum(${eb.ref('h.total_amount')}), 2)`.as('revenue'),
              sql<string>`round(sum(${eb.ref('h.total_amount')}) / sum(${eb.ref('h.order_count')}), 2)`.as(
                'avg_order_value',
              ),
            ])
            .groupBy([sql.ref('group_key'), 'h.currency'])
            .orderBy('group_key')
            .orderBy('h.currency');
        }
        return orders
          .select((eb) => [
            localPeriodOf(eb.ref('o.ordered_at'), range, ctx.timeZone, period).as('group_key'),
            'o.currency',
            eb.fn.countAll().as('order_count'),
            sql<string>`round(sum(${eb.ref('o.total_amount')}), 2)`.as('revenue'),
            sql<string>`round(sum(${eb.ref('o.total_amount')}) / count(*), 2)`.as('avg_order_value'),
          ])
          .groupBy([sql.ref('group_key'), 'o.currency'])
          .orderBy('group_key')
          .orderBy('o.currency');
      }
    }
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    group_by: args.group_by,
    ...(args.region === undefined ? {} : { region: args.region }),
    rows: rows.map(({ group_key, ...figures }) => {
      const { group_by: by } = args;
      const bounds =
        by === 'region' || by === 'category' ? {} : bucketBounds(String(group_key), by, args, ctx.timeZone);
      return { [keyName(by)]: group_key, ...bounds, ...figures } as z.infer<typeof row>;
    }),
    row_count: rows.length,
    truncated: page.truncated,
  }),
  compare: (current, prior, comparison) => {
    const truncated = current.truncated || prior.truncated;
    const now = revenueByCurrency(current.rows);
    const before = revenueByCurrency(prior.rows);
    const currencies = [...new Set([...now.keys(), ...before.keys()])].sort();
    const keyed = current.group_by === 'region' || current.group_by === 'category';
    const rows = keyed ? comparedGroups(current, prior) : { rows: current.rows, truncated: current.truncated };
    return {
      ...current,
      ...rows,
      row_count: rows.rows.length,
      comparison: {
        ...comparison,
        totals: truncated
          ? null
          : currencies.map((c) => ({
              currency: c,
              revenue: now.get(c) ?? 0,
              prior_revenue: before.get(c) ?? 0,
              ...changeOf(now.get(c) ?? 0, before.get(c) ?? 0),
            })),
        ...(truncated
          ? {
              totals_note:
                'one of the ranges had more groups than a result returns; group by week or month (or a shorter range) to get totals',
            }
          : {}),
      },
    };
  },
});
