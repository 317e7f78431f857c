/**
 * Which orders were placed most recently in a date range, and by whom (desensitized)?
 *
 * Example input: { "start_date": "2025-03-01", "end_date": "2025-03-31", "status": "pending", "limit": 20 }
 *
 * SQL:
 *   select "o"."id" as "order_ref", "o"."ordered_at", "o"."status", "o"."currency", "o"."total_amount",
 *          "o"."customer_id" as "customer_ref", "c"."name_initials" as "customer_initials",
 *          "c"."email_masked" as "customer_email", "c"."phone_last4" as "customer_phone_last4",
 *          "c"."region" as "customer_region"
 *   from "reporting"."orders" as "o"
 *   inner join "reporting"."customers" as "c" on "c"."id" = "o"."customer_id"
 *   where <ordered_at in range> [and "o"."status" = $s]
 *     [and "o"."customer_id" in (select "rc"."id" from "reporting"."customers" as "rc" where "rc"."region" in ($r1, ..))]
 *   order by "o"."ordered_at" desc, "o"."id" desc limit $n
 * Ids leave as keyed-hash tokens, names as initials, emails as j***@domain, phones as last 4 digits.
 * The last condition holds a caller scoped to regions to their customers' orders.
 */
import { z } from 'zod';
import { ordersInRange, regionsOf } from '../pack/range-sql.js';
import { ORDER_STATUSES, orderStatus } from '../pack/statuses.js';
import { rowLimit } from '../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { currency, echoRange, money, rangeEcho, rowsEnvelope } from '../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';

const input = z
  .strictObject({
    ...dateRangeFields,
    status: orderStatus.optional().describe('Only orders in this status; omit for every status'),
    limit: rowLimit(20),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  order_ref: z.string().describe('Opaque, stable reference of the order (not its internal id)'),
  ordered_at: z.string().describe('When the order was placed, ISO 8601 in UTC'),
  status: z.enum(ORDER_STATUSES),
  currency,
  total_amount: money,
  customer_ref: z.string().describe('Opaque, stable reference of the customer'),
  customer_initials: z.string(),
  customer_email: z.string().describe('Masked: first letter and domain only'),
  customer_phone_last4: z.string().describe('Last four digits of the phone number'),
  customer_region: z.string(),
});

const output = z.object({
  ...rangeEcho,
  status: z.enum(ORDER_STATUSES).nullable(),
  ...rowsEnvelope(row),
});

export const queryRecentOrders = defineTemplate({
  name: 'query_recent_orders',
  title: 'Most recent orders',
  description: [
    'Lists the most recent orders placed between start_date and end_date (both inclusive, at most 90 days), newest first, optionally only one status.',
    'Use it to look at individual orders: "show the last 20 pending orders", "latest refunds this week".',
    'Customer data is desensitized: initials, a masked email, the last 4 phone digits and the region; order and customer references are opaque tokens, stable across calls.',
    'limit is 1..100 (default 20).',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-03-01', end_date: '2025-03-31', status: 'pending', limit: 20 },
    { start_date: '2025-03-24', end_date: '2025-03-30' },
  ],
  output,
  dataScope: ['region'],
  columns: {
    order_ref: { type: 'text', source: 'reporting.orders.id', treatment: 'token' },
    ordered_at: { type: 'timestamp', source: 'reporting.orders.ordered_at', treatment: 'plain' },
    status: { type: 'text', source: 'reporting.orders.status', treatment: 'plain' },
    currency: { type: 'text', source: 'reporting.orders.currency', treatment: 'plain' },
    total_amount: { type: 'money', source: 'reporting.orders.total_amount', treatment: 'plain' },
    customer_ref: { type: 'text', source: 'reporting.orders.customer_id', treatment: 'token' },
    customer_initials: { type: 'text', source: 'reporting.customers.name_initials', treatment: 'initials' },
    customer_email: { type: 'text', source: 'reporting.customers.email_masked', treatment: 'mask_email' },
    customer_phone_last4: { type: 'text', source: 'reporting.customers.phone_last4', treatment: 'mask_phone' },
    customer_region: { type: 'text', source: 'reporting.customers.region', treatment: 'plain' },
  },
  rowLimit: (args) => args.limit,
  query: (db, args, ctx) =>
    ordersInRange(db, resolveRange(args), ctx.timeZone, regionsOf(ctx))
      .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
      .$if(args.status !== undefined, (qb) => qb.where('o.status', '=', args.status!))
      .select([
        'o.id as order_ref',
        'o.ordered_at',
        'o.status',
        'o.currency',
        'o.total_amount',
        'o.customer_id as customer_ref',
        'c.name_initials as customer_initials',
        'c.email_masked as customer_email',
        'c.phone_last4 as customer_phone_last4',
        'c.region as customer_region',
      ])
      .orderBy('o.ordered_at', 'desc')
      .orderBy('o.id', 'desc'),
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    status: args.status ?? null,
    rows: rows as z.infer<typeof row>[],
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
