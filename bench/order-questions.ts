/**
 * The order and customer questions (issue 30): ordinary questions whose unit is the order or the
 * customer, beside bench/questions.ts's 24. Each states the one querygate call a model would make, the
 * one statement a model would send a raw-SQL server, and how querygate's answer reads as the rows of
 * the truth: independent SQL, run through the admin connection (the raw statement itself unless a
 * question has a truth of its own, when the raw one reads personal columns a model would ask for).
 * Every statement takes the setting it is asked in: the reporting zone, the caller's regions and the
 * clock. bench/order-bench.ts measures them against a raw-SQL server; test/order-questions.test.ts
 * holds every answer to its truth at test scale.
 */
import type pg from 'pg';
import { isoWeekStart, monthStart, shiftDays, shiftMonths, shiftYears } from '../src/lib/calendar.js';
import type { Call, Reply } from './raw-sql.js';

/** Where a question is asked: the server's reporting zone, the caller's regions (none: every one), the clock. */
export interface Setting {
  readonly timeZone: string;
  readonly scope?: readonly string[];
  readonly now: number;
}

/**
 * The part of issue 30 a question needs, named in the bench's notes when an answer is not right:
 * 'api' the order and customer units (metrics, dimensions, amount filters, per-row comparisons, the
 * largest orders); 'fresh' running periods cut at data_through; 'people' the sales pack's customers
 * counted exactly.
 */
export type Feature = 'api' | 'fresh' | 'people';

export type Row = Record<string, unknown>;

export interface OrderQuestion {
  readonly text: string;
  readonly needs: readonly Feature[];
  /** 'live' asks on the clock of a feed still receiving orders; otherwise the feed stopped the evening before. */
  readonly clock?: 'live';
  /** True when the order of the rows is part of the answer (largest first, top N). */
  readonly ranked?: boolean;
  call(s: Setting): Call;
  /** The raw-SQL server's one statement. */
  sql(s: Setting): string;
  /** The truth, when not `sql`; its columns are the ones compared. */
  truth?(s: Setting): string;
  /** querygate's structured answer as rows with the truth's columns. */
  read(answer: Answer): Row[];
}

/** What query_metrics and query_recent_orders answer, as far as the questions read it. */
export interface Answer {
  readonly rows?: Row[];
  readonly totals?: Row[];
  readonly comparison?: { readonly totals?: Row[] };
}

/** The local day of an instant in a zone, by Intl (not by PostgreSQL). */
export function localDay(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at);
}

type Days = readonly [string, string];
const today = (s: Setting): string => localDay(s.now, s.timeZone);
const lastMonth = (s: Setting): Days => {
  const start = shiftMonths(monthStart(today(s)), -1);
  return [start, shiftDays(monthStart(today(s)), -1)];
};
const lastWeek = (s: Setting): Days => {
  const start = shiftDays(isoWeekStart(today(s)), -7);
  return [start, shiftDays(start, 6)];
};
const lastDays = (s: Setting, n: number): Days => [shiftDays(today(s), -n), shiftDays(today(s), -1)];
const range = ([start_date, end_date]: Days): Record<string, string> => ({ start_date, end_date });

// The SQL a model writes: the customers always joined (for the region, and a scoped caller's regions).
const FROM = 'from sales.orders o join sales.customers c on c.id = o.customer_id';
const ITEMS = `${FROM} join sales.order_items oi on oi.order_id = o.id join sales.products p on p.id = oi.product_id`;
const NET = "o.status not in ('cancelled', 'refunded')";
const literal = (value: string): string => `'${value.replace(/'/g, "''")}'`;
const local = (s: Setting, day: string): string => `timestamp '${day}' at time zone ${literal(s.timeZone)}`;
const localDate = (s: Setting): string => `(o.ordered_at at time zone ${literal(s.timeZone)})::date`;
/** The days `start`..`end` in the zone, within the caller's regions, and `more`. */
const where = (s: Setting, [start, end]: Days, ...more: string[]): string =>
  `where o.ordered_at >= ${local(s, start)} and o.ordered_at < ${local(s, shiftDays(end, 1))}${
    s.scope ? ` and c.region in (${s.scope.map(literal).join(', ')})` : ''
  }${more.map((m) => ` and ${m}`).join('')}`;
const money = (expression: string): string => `round(${expression}::numeric, 2)`;
const revenue = `coalesce(sum(o.total_amount) filter (where ${NET}), 0) as revenue`;
const BAND =
  "case when o.total_amount < 25 then 'under 25' when o.total_amount < 50 then '25-50' when o.total_amount < 100 then '50-100' " +
  "when o.total_amount < 250 then '100-250' when o.total_amount < 500 then '250-500' else '500 and over' end";

const rows = (answer: Answer): Row[] => answer.rows ?? [];
const totals = (answer: Answer): Row[] => answer.totals ?? [];
/** A running period's two sides, as rows: the current one and the one compared. */
const sides = (answer: Answer): Row[] => [
  ...totals(answer).map((r) => ({ side: 'current', ...r })),
  ...(answer.comparison?.totals ?? []).map((r) => ({ side: 'prior', ...r })),
];

/** Each customer's orders in the range, with their first ever order (over all history, every status). */
const perCustomer = (s: Setting, days: Days): string =>
  `with per as (select o.customer_id, count(*) as n, min(o.currency) as currency ${FROM} ${where(s, days)} group by o.customer_id), ` +
  'first as (select customer_id, min(ordered_at) as first_at from sales.orders group by customer_id)';
const customerSince = (s: Setting, [start, end]: Days): string =>
  `case when f.first_at >= ${local(s, start)} and f.first_at < ${local(s, shiftDays(end, 1))} then 'new' else 'returning' end`;

/**
 * A running period and the one it is compared with: cut at the earlier of the clock's minute and the
 * end of the minute that holds the newest order (the feed's high-water mark, data_through), the prior
 * side at the same local time `shift` earlier (docs/tools.md).
 */
function running(s: Setting, start: string, shift: string, groupBy?: string): string {
  const zone = literal(s.timeZone);
  const now = `timestamptz '${new Date(s.now).toISOString()}'`;
  const cut = `least(date_trunc('minute', ${now}), date_trunc('minute', (select max(ordered_at) from sales.orders)) + interval '1 minute')`;
  const side = (name: string, from: string, to: string): string =>
    `select '${name}' as side${groupBy ? `, ${groupBy}` : ''}, o.currency, count(*)::int as orders, ${revenue} ${FROM} ` +
    `where o.ordered_at >= ${from} and o.ordered_at < ${to}${s.scope ? ` and c.region in (${s.scope.map(literal).join(', ')})` : ''} ` +
    `group by ${groupBy ? `${groupBy}, ` : ''}o.currency`;
  return (
    `with cut as (select ${cut} as t) ${side('current', local(s, start), '(select t from cut)')} union all ` +
    side(
      'prior',
      `(${local(s, start)} at time zone ${zone} - interval '${shift}') at time zone ${zone}`,
      `((select t from cut) at time zone ${zone} - interval '${shift}') at time zone ${zone}`,
    )
  );
}

/**
 * Current against a year before, by `group` (a column of the rows) and, for money, by currency, keeping
 * the groups of either side only (a group that fell to zero has 0 now).
 */
function byGroupAgainstYearBefore(
  s: Setting,
  days: Days,
  group: string,
  metric: string,
  { items = false, money: perCurrency = true } = {},
): string {
  // querygate's rule (src/lib/comparison.ts, docs/tools.md): whole ISO weeks go back 52 weeks, to the same weekdays.
  const wholeWeeks =
    days[0] === isoWeekStart(days[0]) &&
    (Date.parse(days[1]) - Date.parse(days[0])) % (7 * 86_400_000) === 6 * 86_400_000;
  const prior: Days = wholeWeeks
    ? [shiftDays(days[0], -364), shiftDays(days[1], -364)]
    : [shiftYears(days[0], -1), shiftYears(days[1], -1)];
  const currency = perCurrency ? 'o.currency' : "'-'::text";
  const side = (d: Days): string =>
    `select ${group} as g, ${currency} as currency, ${metric} as v ${items ? ITEMS : FROM} ${where(s, d)} group by 1, 2`;
  return (
    `with now as (${side(days)}), before as (${side(prior)}) select coalesce(now.g, before.g) as grp, ` +
    'coalesce(now.currency, before.currency) as currency, coalesce(now.v, 0) as value, coalesce(before.v, 0) as value_prior ' +
    'from now full join before on before.g = now.g and before.currency = now.currency'
  );
}

/** A raw listing of the largest orders as querygate ranks them (by amount, then newest), without the order id. */
const largestListed = (statement: string): string => statement.replace('o.id as order_ref, ', '');

const metrics = (args: Record<string, unknown>): Call => ({ tool: 'query_metrics', args });
const orders = (args: Record<string, unknown>): Call => ({ tool: 'query_recent_orders', args });

export const ORDER_QUESTIONS: readonly OrderQuestion[] = [
  // ---- amount thresholds
  {
    text: 'How many orders of 200 or more did we get last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['orders'], min_order_value: 200, ...range(lastMonth(s)) }),
    sql: (s) =>
      `select o.currency, count(*)::int as orders ${FROM} ${where(s, lastMonth(s), 'o.total_amount >= 200')} group by o.currency`,
    read: (a) => totals(a),
  },
  {
    text: 'How many orders under 20, and how much revenue, in the last 30 days?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['orders', 'revenue'], max_order_value: 20, ...range(lastDays(s, 30)) }),
    sql: (s) =>
      `select o.currency, count(*)::int as orders, ${revenue} ${FROM} ${where(s, lastDays(s, 30), 'o.total_amount < 20')} group by o.currency`,
    read: (a) => totals(a),
  },
  {
    text: 'List last week’s orders of 500 or more',
    needs: ['api'],
    ranked: true,
    call: (s) => orders({ min_order_value: 500, order_by: 'largest', limit: 100, ...range(lastWeek(s)) }),
    sql: (s) =>
      `select o.id as order_ref, o.status, o.currency, o.total_amount ${FROM} ${where(s, lastWeek(s), 'o.total_amount >= 500')} order by o.total_amount desc, o.ordered_at desc, o.id desc`,
    // querygate's refs are opaque: compared without them.
    truth: (s) =>
      largestListed(
        `select o.id as order_ref, o.status, o.currency, o.total_amount ${FROM} ${where(s, lastWeek(s), 'o.total_amount >= 500')} order by o.total_amount desc, o.ordered_at desc, o.id desc`,
      ),
    read: (a) => rows(a),
  },
  {
    text: 'How many orders fell in each amount band last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['orders'], group_by: ['order_value_band'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select ${BAND} as order_value_band, o.currency, count(*)::int as orders ${FROM} ${where(s, lastMonth(s))} group by 1, 2`,
    read: (a) => rows(a),
  },
  {
    text: 'Revenue from orders of 100 or more, by region, last month',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['revenue'], group_by: ['region'], min_order_value: 100, ...range(lastMonth(s)) }),
    sql: (s) =>
      `select c.region, o.currency, ${revenue} ${FROM} ${where(s, lastMonth(s), 'o.total_amount >= 100')} group by 1, 2`,
    read: (a) => rows(a),
  },
  // ---- the largest orders
  {
    text: 'The 5 largest orders last week',
    needs: ['api'],
    ranked: true,
    call: (s) => orders({ order_by: 'largest', limit: 5, ...range(lastWeek(s)) }),
    sql: (s) =>
      `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastWeek(s))} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 5`,
    // querygate's refs are opaque: compared without them.
    truth: (s) =>
      largestListed(
        `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastWeek(s))} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 5`,
      ),
    read: (a) => rows(a),
  },
  {
    text: 'The 10 largest orders of the last 90 days',
    needs: ['api'],
    ranked: true,
    call: (s) => orders({ order_by: 'largest', limit: 10, ...range(lastDays(s, 90)) }),
    sql: (s) =>
      `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastDays(s, 90))} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 10`,
    // querygate's refs are opaque: compared without them.
    truth: (s) =>
      largestListed(
        `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastDays(s, 90))} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 10`,
      ),
    read: (a) => rows(a),
  },
  {
    text: 'The largest order from Europe last month',
    needs: ['api'],
    ranked: true,
    call: (s) => orders({ order_by: 'largest', limit: 1, filters: { region: ['Europe'] }, ...range(lastMonth(s)) }),
    sql: (s) =>
      `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastMonth(s), "c.region = 'Europe'")} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 1`,
    // querygate's refs are opaque: compared without them.
    truth: (s) =>
      largestListed(
        `select o.id as order_ref, o.currency, o.total_amount ${FROM} ${where(s, lastMonth(s), "c.region = 'Europe'")} order by o.total_amount desc, o.ordered_at desc, o.id desc limit 1`,
      ),
    read: (a) => rows(a),
  },
  // ---- medians and percentiles
  {
    text: 'What was the median order value last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['median_order_value'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select o.currency, ${money('percentile_cont(0.5) within group (order by o.total_amount)')} as median_order_value ${FROM} ${where(s, lastMonth(s), NET)} group by 1`,
    read: (a) => totals(a),
  },
  {
    text: 'The median and 90th percentile of order value over the last 90 days',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['median_order_value', 'p90_order_value'], ...range(lastDays(s, 90)) }),
    sql: (s) =>
      `select o.currency, ${money('percentile_cont(0.5) within group (order by o.total_amount)')} as median_order_value, ${money('percentile_cont(0.9) within group (order by o.total_amount)')} as p90_order_value ${FROM} ${where(s, lastDays(s, 90), NET)} group by 1`,
    read: (a) => totals(a),
  },
  {
    text: 'Median order value by region last month',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['median_order_value'], group_by: ['region'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select c.region, o.currency, ${money('percentile_cont(0.5) within group (order by o.total_amount)')} as median_order_value ${FROM} ${where(s, lastMonth(s), NET)} group by 1, 2`,
    read: (a) => rows(a),
  },
  {
    text: 'Median order value by week over the last 4 weeks',
    needs: ['api'],
    call: (s) =>
      metrics({
        metrics: ['median_order_value'],
        group_by: ['week'],
        ...range([shiftDays(lastWeek(s)[0], -21), lastWeek(s)[1]]),
      }),
    sql: (s) =>
      `select to_char(date_trunc('week', ${localDate(s)}), 'YYYY-MM-DD') as week, o.currency, ${money('percentile_cont(0.5) within group (order by o.total_amount)')} as median_order_value ${FROM} ${where(s, [shiftDays(lastWeek(s)[0], -21), lastWeek(s)[1]], NET)} group by 1, 2`,
    read: (a) => rows(a).map((r) => ({ ...r, week: String(r.week).slice(0, 10) })),
  },
  // ---- customers as a unit, without personal data
  {
    text: 'How many customers ordered more than once last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['customer_type'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `${perCustomer(s, lastMonth(s))} select case when n = 1 then 'one_time' else 'repeat' end as customer_type, count(*)::int as customers from per group by 1`,
    read: (a) => rows(a),
  },
  {
    text: 'How many orders per customer last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['orders_per_customer'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select round(count(*)::numeric / count(distinct o.customer_id), 4) as orders_per_customer ${FROM} ${where(s, lastMonth(s))}`,
    read: (a) => totals(a),
  },
  {
    text: 'How many customers placed 1, 2, 3… orders in the last 90 days?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['customer_orders'], ...range(lastDays(s, 90)) }),
    sql: (s) =>
      `${perCustomer(s, lastDays(s, 90))} select case when n >= 10 then '10+' else n::text end as customer_orders, count(*)::int as customers from per group by 1`,
    read: (a) => rows(a),
  },
  {
    text: 'How many customers placed their first ever order last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['customer_since'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `${perCustomer(s, lastMonth(s))} select ${customerSince(s, lastMonth(s))} as customer_since, count(*)::int as customers from per join first f using (customer_id) group by 1`,
    read: (a) => rows(a),
  },
  {
    text: 'Revenue and orders from new against returning customers last month',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['revenue', 'orders'], group_by: ['customer_since'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `with first as (select customer_id, min(ordered_at) as first_at from sales.orders group by customer_id) select ${customerSince(s, lastMonth(s))} as customer_since, o.currency, count(*)::int as orders, ${revenue} ${FROM} join first f on f.customer_id = o.customer_id ${where(s, lastMonth(s))} group by 1, 2`,
    read: (a) => rows(a),
  },
  {
    text: 'Our 10 best customers by revenue last month',
    needs: ['api'],
    ranked: true,
    call: (s) =>
      metrics({
        metrics: ['revenue', 'orders'],
        group_by: ['customer'],
        order_by: 'revenue',
        limit: 10,
        ...range(lastMonth(s)),
      }),
    sql: (s) =>
      `select c.id as customer_id, c.name, c.email, o.currency, count(*)::int as orders, ${revenue} ${FROM} ${where(s, lastMonth(s))} group by c.id, c.name, c.email, o.currency order by revenue desc limit 10`,
    // querygate ranks within each currency, as every ranked answer of query_metrics does.
    truth: (s) =>
      `select currency, orders, revenue from (select o.currency, count(*)::int as orders, ${revenue}, row_number() over (partition by o.currency order by coalesce(sum(o.total_amount) filter (where ${NET}), 0) desc) as rank ${FROM} ${where(s, lastMonth(s))} group by o.customer_id, o.currency) t where rank <= 10 order by currency, revenue desc`,
    read: (a) => rows(a),
  },
  {
    text: 'Our 5 most frequent customers over the last 90 days',
    needs: ['api'],
    ranked: true,
    call: (s) =>
      metrics({ metrics: ['orders'], group_by: ['customer'], order_by: 'orders', limit: 5, ...range(lastDays(s, 90)) }),
    sql: (s) =>
      `select c.id as customer_id, c.name, count(*)::int as orders ${FROM} ${where(s, lastDays(s, 90))} group by c.id, c.name order by orders desc limit 5`,
    truth: (s) =>
      `select count(*)::int as orders ${FROM} ${where(s, lastDays(s, 90))} group by o.customer_id order by orders desc limit 5`,
    read: (a) => rows(a),
  },
  {
    text: 'How many customers of Europe ordered more than once in the last 30 days?',
    needs: ['api'],
    call: (s) =>
      metrics({
        metrics: ['customers'],
        group_by: ['customer_type'],
        filters: { region: ['Europe'] },
        ...range(lastDays(s, 30)),
      }),
    sql: (s) =>
      `select count(*) filter (where n > 1)::int as repeat, count(*)::int as customers from (select o.customer_id, count(*) as n ${FROM} ${where(s, lastDays(s, 30), "c.region = 'Europe'")} group by 1) per`,
    truth: (s) =>
      `with per as (select o.customer_id, count(*) as n ${FROM} ${where(s, lastDays(s, 30), "c.region = 'Europe'")} group by 1) select case when n = 1 then 'one_time' else 'repeat' end as customer_type, count(*)::int as customers from per group by 1`,
    read: (a) => rows(a),
  },
  // ---- money in every status: refunded value
  {
    text: 'What was the value of refunded orders last month?',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['gross_amount'], filters: { status: ['refunded'] }, ...range(lastMonth(s)) }),
    sql: (s) =>
      `select o.currency, sum(o.total_amount) as gross_amount ${FROM} ${where(s, lastMonth(s), "o.status = 'refunded'")} group by 1`,
    read: (a) => totals(a),
  },
  {
    text: 'Orders and their amounts by status last month, cancelled and refunded included',
    needs: ['api'],
    call: (s) => metrics({ metrics: ['orders', 'gross_amount'], group_by: ['status'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select o.status, o.currency, count(*)::int as orders, sum(o.total_amount) as gross_amount ${FROM} ${where(s, lastMonth(s))} group by 1, 2`,
    read: (a) => rows(a),
  },
  {
    text: 'Refunded value by region over the last 90 days',
    needs: ['api'],
    call: (s) =>
      metrics({
        metrics: ['gross_amount'],
        group_by: ['region'],
        filters: { status: ['refunded'] },
        ...range(lastDays(s, 90)),
      }),
    sql: (s) =>
      `select c.region, o.currency, sum(o.total_amount) as gross_amount ${FROM} ${where(s, lastDays(s, 90), "o.status = 'refunded'")} group by 1, 2`,
    read: (a) => rows(a),
  },
  // ---- per-group comparisons
  {
    text: 'Revenue by region last month against the same month a year before, regions that fell to zero included',
    needs: ['api'],
    call: (s) =>
      metrics({ metrics: ['revenue'], group_by: ['region'], compare_to: 'previous_year', ...range(lastMonth(s)) }),
    sql: (s) =>
      byGroupAgainstYearBefore(s, lastMonth(s), 'c.region', `coalesce(sum(o.total_amount) filter (where ${NET}), 0)`),
    read: (a) =>
      rows(a).map((r) => ({ grp: r.region, currency: r.currency, value: r.revenue, value_prior: r.revenue_prior })),
  },
  {
    text: 'Revenue by category last week against the same week a year before',
    needs: ['api'],
    call: (s) =>
      metrics({ metrics: ['revenue'], group_by: ['category'], compare_to: 'previous_year', ...range(lastWeek(s)) }),
    sql: (s) =>
      byGroupAgainstYearBefore(
        s,
        lastWeek(s),
        'p.category',
        `coalesce(sum(oi.quantity * oi.unit_price) filter (where ${NET}), 0)`,
        { items: true },
      ),
    read: (a) =>
      rows(a).map((r) => ({ grp: r.category, currency: r.currency, value: r.revenue, value_prior: r.revenue_prior })),
  },
  {
    text: 'Refunded orders by region last month against a year before',
    needs: ['api'],
    call: (s) =>
      metrics({
        metrics: ['refunded_orders'],
        group_by: ['region'],
        compare_to: 'previous_year',
        ...range(lastMonth(s)),
      }),
    sql: (s) =>
      byGroupAgainstYearBefore(s, lastMonth(s), 'c.region', "(count(*) filter (where o.status = 'refunded'))::int", {
        money: false,
      }),
    read: (a) =>
      rows(a).map((r) => ({
        grp: r.region,
        currency: '-',
        value: r.refunded_orders,
        value_prior: r.refunded_orders_prior,
      })),
  },
  // ---- running periods, on a feed that stopped the evening before and on a live one
  {
    text: 'This month so far against the same days last year (the feed stopped yesterday evening)',
    needs: ['fresh'],
    call: () => metrics({ metrics: ['revenue', 'orders'], period: 'month_to_date', compare_to: 'previous_year' }),
    sql: (s) => running(s, monthStart(today(s)), '1 year'),
    read: sides,
  },
  {
    text: 'This week so far against last week (the feed stopped yesterday evening)',
    needs: ['fresh'],
    call: () => metrics({ metrics: ['revenue', 'orders'], period: 'this_week', compare_to: 'previous_period' }),
    sql: (s) => running(s, isoWeekStart(today(s)), '7 days'),
    read: sides,
  },
  {
    text: 'This month so far against the same days last year (a live feed)',
    needs: [],
    clock: 'live',
    call: () => metrics({ metrics: ['revenue', 'orders'], period: 'month_to_date', compare_to: 'previous_year' }),
    sql: (s) => running(s, monthStart(today(s)), '1 year'),
    read: sides,
  },
  {
    text: 'This month so far by region against the same days last year (a live feed)',
    needs: ['api'],
    clock: 'live',
    call: () =>
      metrics({ metrics: ['revenue'], group_by: ['region'], period: 'month_to_date', compare_to: 'previous_year' }),
    sql: (s) => running(s, monthStart(today(s)), '1 year', 'c.region'),
    truth: (s) =>
      `select region, currency, coalesce(sum(revenue) filter (where side = 'current'), 0) as revenue, coalesce(sum(revenue) filter (where side = 'prior'), 0) as revenue_prior from (${running(s, monthStart(today(s)), '1 year', 'c.region')}) t group by 1, 2`,
    read: (a) => rows(a),
  },
  // ---- people: distinct customers, with and without groups
  {
    text: 'How many different customers ordered last week?',
    needs: ['people'],
    call: (s) => metrics({ metrics: ['customers'], ...range(lastWeek(s)) }),
    sql: (s) => `select count(distinct o.customer_id)::int as customers ${FROM} ${where(s, lastWeek(s))}`,
    read: (a) => totals(a),
  },
  {
    text: 'How many orders and how many different customers last week?',
    needs: ['people'],
    call: (s) => metrics({ metrics: ['orders', 'customers'], ...range(lastWeek(s)) }),
    sql: (s) =>
      `select count(*)::int as orders, count(distinct o.customer_id)::int as customers ${FROM} ${where(s, lastWeek(s))}`,
    read: (a) => totals(a),
  },
  {
    text: 'Different customers by region last month',
    needs: ['people'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['region'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select c.region, count(distinct o.customer_id)::int as customers ${FROM} ${where(s, lastMonth(s))} group by 1`,
    read: (a) => rows(a),
  },
  {
    text: 'Different customers by category last month',
    needs: ['people'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['category'], ...range(lastMonth(s)) }),
    sql: (s) =>
      `select p.category, count(distinct o.customer_id)::int as customers ${ITEMS} ${where(s, lastMonth(s))} group by 1`,
    read: (a) => rows(a),
  },
  {
    text: 'Different customers each day last week',
    needs: ['people'],
    call: (s) => metrics({ metrics: ['customers'], group_by: ['day'], ...range(lastWeek(s)) }),
    sql: (s) =>
      `select to_char(${localDate(s)}, 'YYYY-MM-DD') as day, count(distinct o.customer_id)::int as customers ${FROM} ${where(s, lastWeek(s))} group by 1`,
    read: (a) => rows(a).map((r) => ({ ...r, day: String(r.day).slice(0, 10) })),
  },
];

/** The querygate reply of a question read as rows, or why it cannot be. */
export function answerRows(question: OrderQuestion, reply: Reply): Row[] {
  if (reply.isError) throw new Error(`querygate refused: ${reply.text.slice(0, 300)}`);
  return question.read(reply.structured as Answer);
}

/** The truth's rows, through the admin connection. */
export async function truthRows(admin: pg.Client, question: OrderQuestion, s: Setting): Promise<Row[]> {
  return (await admin.query<Row>((question.truth ?? question.sql)(s))).rows;
}

const numeric = (value: unknown): number | undefined =>
  typeof value === 'number'
    ? value
    : typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)
      ? Number(value)
      : undefined;

/**
 * Where querygate's rows differ from the truth's, on the truth's columns: numbers to the cent (an absent
 * figure read as 0), the rows in order when the question ranks them, else as sets.
 */
export function differences(question: OrderQuestion, got: Row[], truth: Row[]): string[] {
  const columns = truth.length > 0 ? Object.keys(truth[0]!) : Object.keys(got[0] ?? {});
  const figures = new Set(
    columns.filter((c) => truth.some((r) => typeof r[c] === 'number' || numeric(r[c]) !== undefined)),
  );
  const norm = (row: Row): string =>
    JSON.stringify(
      columns.map((c) => {
        const n = numeric(row[c] ?? (figures.has(c) ? 0 : undefined));
        return n === undefined ? (row[c] ?? null) : Math.round(n * 100) / 100;
      }),
    );
  // A row whose every figure is 0 says what no row says (a currency with nothing in a compared range).
  const said = (row: Row): boolean => [...figures].some((c) => (numeric(row[c]) ?? 0) !== 0);
  const a = got.filter(said).map(norm);
  const b = truth.filter(said).map(norm);
  if (!question.ranked) {
    a.sort();
    b.sort();
  }
  const out: string[] = [];
  // A truth of nothing but zeros would hold any answer: every question's data has a figure to get right.
  if (b.length === 0) out.push('the truth has no row with a figure other than 0');
  if (a.length !== b.length) out.push(`${a.length} rows where the truth has ${b.length}`);
  for (let i = 0; i < Math.max(a.length, b.length); i++)
    if (a[i] !== b[i]) out.push(`row ${i + 1}: got ${a[i] ?? '-'}, truth ${b[i] ?? '-'} (${columns.join(', ')})`);
  return out;
}

/** Orders in a second currency, days before the feed's last day: both currencies in every answer below. */
const EURO_ORDERS: readonly [
  id: number,
  daysBack: number,
  hourUtc: string,
  region: string,
  status: string,
  cents: number,
][] = [
  [990001, 0, '20:30', 'Europe', 'paid', 8000],
  [990002, 2, '09:10', 'Europe', 'refunded', 12000],
  [990003, 4, '22:30', 'Asia Pacific', 'paid', 4650], // after local midnight in Berlin
  [990004, 9, '12:00', 'Europe', 'shipped', 61000],
  [990005, 12, '07:45', 'Europe', 'paid', 1850],
  [990006, 20, '23:15', 'North America', 'paid', 27500],
  [990007, 33, '10:00', 'Europe', 'cancelled', 9900],
  [990008, 40, '14:20', 'Europe', 'paid', 15000],
  [990009, 75, '01:30', 'Europe', 'paid', 3300],
  [990010, 365 + 10, '11:00', 'Africa', 'paid', 22000], // a year before, in a region with no EUR order since
  [990011, 365 + 20, '16:40', 'Africa', 'refunded', 5400],
  [990012, 365 + 40, '09:00', 'Europe', 'paid', 7600],
  [990013, 365 + 5, '18:00', 'Europe', 'paid', 13300],
];

/**
 * Adds EURO_ORDERS to seeded data whose last day is `until`, each of one item of product 1 (its total
 * the item's amount), placed by the first, second or third customer of its region.
 */
export async function addEuroOrders(admin: pg.Client, until: string): Promise<void> {
  for (const [id, back, time, region, status, cents] of EURO_ORDERS) {
    const { rows: found } = await admin.query<{ id: string }>(
      'select id from sales.customers where region = $1 order by id limit 1 offset $2',
      [region, id % 3],
    );
    const amount = (cents / 100).toFixed(2);
    await admin.query(
      'insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount) values ($1, $2, $3, $4, $5, $6)',
      [id, found[0]!.id, status, `${shiftDays(until, -back)}T${time}:00Z`, 'EUR', amount],
    );
    await admin.query(
      'insert into sales.order_items (order_id, product_id, quantity, unit_price) values ($1, 1, 1, $2)',
      [id, amount],
    );
  }
}
