/**
 * Which orders were placed most recently in a date range, or which were the largest, optionally of some
 * regions, categories, statuses or a currency, above or below an amount, and (only when asked) for
 * which customer, desensitized?
 *
 * Example input: { "start_date": "2025-03-01", "end_date": "2025-03-31", "filters": { "region": ["Europe"] },
 *                  "limit": 10, "customer_fields": ["initials"] }
 *
 * SQL:
 *   select "o"."id" as "order_ref", "o"."ordered_at", "o"."status", "o"."currency", "o"."total_amount",
 *          "c"."name_initials" as "customer_initials", null as "customer_email", null as "customer_phone_last4",
 *          null as "customer_region", null as "customer_ref"
 *   from "reporting"."orders" as "o"
 *   inner join "reporting"."customers" as "c" on "c"."id" = "o"."customer_id"   -- only when a field of it is asked
 *   where <ordered_at in range> [and "o"."status" = $s] [and "o"."status" in ($s1, ..)]
 *     [and "o"."customer_id" in (select "fc"."id" from "reporting"."customers" as "fc" where "fc"."region" in ($r1, ..))]
 *     [and exists (select 1 from "reporting"."order_items" as "fi" inner join "reporting"."products" as "fp"
 *                  on "fp"."id" = "fi"."product_id" where "fi"."order_id" = "o"."id" and "fp"."category" in ($c1, ..))]
 *     [and "o"."customer_id" in (select "rc"."id" from "reporting"."customers" as "rc" where "rc"."region" in ($d1, ..))]
 *     [and "o"."currency" = $cur] [and "o"."total_amount" >= $min] [and "o"."total_amount" < $max]
 *   order by ["o"."total_amount" desc,] "o"."ordered_at" desc, "o"."id" desc limit $n
 * A customer field not named in customer_fields is never read: its column is a NULL under its name
 * (the registry holds every statement to the declared columns), and present() leaves it out. Those
 * asked for leave masked: ids as keyed-hash tokens, names as initials, emails as j***@domain, phones
 * as their last 4 digits. The last condition holds a caller scoped to regions to their customers'
 * orders; a region filter applies with it, and one naming a region outside the scope is refused.
 */
import { z } from 'zod';
import { ordersInRange, regionsOf } from '../pack/range-sql.js';
import { ORDER_STATUSES, orderStatus } from '../pack/statuses.js';
import { filterValues, label, rowLimit } from '../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../src/lib/date-range.js';
import { namedFields, unnamedColumn, withoutUnnamed } from '../src/lib/named-fields.js';
import { currency, echoRange, money, rangeEcho, rowsEnvelope } from '../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';

/** The customer fields a caller may name (src/lib/named-fields.ts), and the row key each comes under. */
const CUSTOMER_FIELDS = {
  initials: 'customer_initials',
  email: 'customer_email',
  phone_last4: 'customer_phone_last4',
  region: 'customer_region',
  ref: 'customer_ref',
} as const;
type CustomerField = keyof typeof CUSTOMER_FIELDS;
const FIELD_NAMES = Object.keys(CUSTOMER_FIELDS) as [CustomerField, ...CustomerField[]];
/** Where each customer field is read, the customers joined as `c`. */
const SOURCE_OF = {
  initials: 'c.name_initials',
  email: 'c.email_masked',
  phone_last4: 'c.phone_last4',
  region: 'c.region',
  ref: 'o.customer_id',
} as const satisfies Record<CustomerField, string>;
const ORDER_COLUMNS = ['o.id as order_ref', 'o.ordered_at', 'o.status', 'o.currency', 'o.total_amount'] as const;

const filters = z
  .strictObject(
    {
      region: filterValues(label, 20),
      category: filterValues(label, 20),
      status: filterValues(orderStatus, ORDER_STATUSES.length),
    },
    { error: 'is not a known filter; the filters are region, category and status' },
  )
  .optional();

const CHECKED_RANGE = { start_date: '2025-03-01', end_date: '2025-03-31' };
const orderValue = z.number().min(0).optional();

const input = z
  .strictObject({
    ...dateRangeFields,
    status: orderStatus.optional(),
    filters,
    customer_fields: namedFields(FIELD_NAMES, 'customer'),
    order_by: z.enum(['newest', 'largest']).optional().describe('largest: by amount'),
    currency: z
      .string()
      .refine((c) => /^[A-Z]{3}$/.test(c), 'must be an ISO 4217 code such as EUR')
      .optional(),
    min_order_value: orderValue,
    max_order_value: orderValue,
    limit: rowLimit(20),
  })
  .superRefine((value, ctx) => {
    if (value.min_order_value !== undefined && value.max_order_value !== undefined) {
      if (value.max_order_value <= value.min_order_value) {
        ctx.addIssue({ code: 'custom', path: ['max_order_value'], message: 'must be above min_order_value' });
      }
    }
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  order_ref: z.string().describe('Opaque, stable reference of the order (not its internal id)'),
  ordered_at: z.string().describe('When the order was placed, ISO 8601 in UTC'),
  status: z.enum(ORDER_STATUSES),
  currency,
  total_amount: money,
  customer_ref: z.string().optional().describe('The same token for the same customer in every call and tool'),
  customer_initials: z.string().optional(),
  customer_email: z.string().optional().describe('First letter and domain only'),
  customer_phone_last4: z.string().optional(),
  customer_region: z.string().optional(),
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
    'Single orders in a range, newest or largest first, masked customer fields only when named.',
    'Use it for "the 5 largest orders last week".',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-03-01', end_date: '2025-03-31', status: 'pending', limit: 20 },
    {
      start_date: '2025-03-24',
      end_date: '2025-03-30',
      filters: { region: ['Europe'], category: ['Books'], status: ['paid', 'shipped'] },
      customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'],
      limit: 10,
    },
  ],
  // Each condition (status, each filter) is a WHERE clause and each customer field a column or its
  // NULL, none depending on the others: each alone, then all at once, cover every statement, which
  // the start-up checks compile in both kinds of zone, unscoped and scoped (not the 168 combinations
  // of every status with every field).
  checkedArguments: [
    ...ORDER_STATUSES.map((status) => ({ ...CHECKED_RANGE, status })),
    ...FIELD_NAMES.map((field) => ({ ...CHECKED_RANGE, customer_fields: [field] })),
    { ...CHECKED_RANGE, filters: { region: ['check-value'] } },
    { ...CHECKED_RANGE, filters: { category: ['check-value'] } },
    { ...CHECKED_RANGE, filters: { status: ['paid', 'refunded'] } },
    {
      ...CHECKED_RANGE,
      status: 'paid',
      filters: { region: ['check-value'], category: ['check-value'], status: ['paid'] },
      customer_fields: FIELD_NAMES,
      limit: 100,
    },
    { period: 'last_week' },
    { ...CHECKED_RANGE, order_by: 'largest', currency: 'EUR', min_order_value: 100, max_order_value: 500 },
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
  query: (db, args, ctx) => {
    const asked = new Set(args.customer_fields);
    const { region, category, status } = args.filters ?? {};
    const orders = ordersInRange(db, resolveRange(args), ctx.timeZone, regionsOf(ctx))
      .$if(args.status !== undefined, (qb) => qb.where('o.status', '=', args.status!))
      .$if(status !== undefined, (qb) => qb.where('o.status', 'in', status!))
      .$if(region !== undefined, (qb) =>
        qb.where(
          'o.customer_id',
          'in',
          db.selectFrom('reporting.customers as fc').select('fc.id').where('fc.region', 'in', region!),
        ),
      )
      .$if(category !== undefined, (qb) =>
        qb.where((eb) =>
          eb.exists(
            eb
              .selectFrom('reporting.order_items as fi')
              .innerJoin('reporting.products as fp', 'fp.id', 'fi.product_id')
              .select(eb.lit(1).as('one'))
              .whereRef('fi.order_id', '=', 'o.id')
              .where('fp.category', 'in', category!),
          ),
        ),
      )
      .$if(args.currency !== undefined, (qb) => qb.where('o.currency', '=', args.currency!))
      .$if(args.min_order_value !== undefined, (qb) => qb.where('o.total_amount', '>=', String(args.min_order_value!)))
      .$if(args.max_order_value !== undefined, (qb) => qb.where('o.total_amount', '<', String(args.max_order_value!)))
      // The largest first, as raw SQL would rank them: by amount, each row saying its currency (a
      // currency given keeps to one).
      .$if(args.order_by === 'largest', (qb) => qb.orderBy('o.total_amount', 'desc'))
      .orderBy('o.ordered_at', 'desc')
      .orderBy('o.id', 'desc');
    // Only the fields asked for are read; the others are a NULL under their name (src/lib/named-fields.ts).
    if (!FIELD_NAMES.some((field) => field !== 'ref' && asked.has(field))) {
      return orders.select((eb) => [
        ...ORDER_COLUMNS,
        ...FIELD_NAMES.map((field) =>
          field === 'ref' && asked.has(field)
            ? eb.ref('o.customer_id').as('customer_ref')
            : unnamedColumn(eb, CUSTOMER_FIELDS[field]),
        ),
      ]);
    }
    return orders
      .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
      .select((eb) => [
        ...ORDER_COLUMNS,
        ...FIELD_NAMES.map((field) =>
          asked.has(field)
            ? eb.ref(SOURCE_OF[field]).as(CUSTOMER_FIELDS[field])
            : unnamedColumn(eb, CUSTOMER_FIELDS[field]),
        ),
      ]);
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    status: args.status ?? null,
    rows: withoutUnnamed<CustomerField, z.infer<typeof row>>(rows, CUSTOMER_FIELDS, args.customer_fields),
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
