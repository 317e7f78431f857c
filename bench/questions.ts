/**
 * The analyst questions (issue 21): a fixed set of ordinary sales questions, each with the calls a model
 * would make, asked of querygate and of a raw-SQL server on the same seeded data, through real MCP
 * clients. Per question: the calls, the bytes of tool results the model reads (their text content, error
 * texts included), and the personal values those results expose; then the totals and the querygate/raw
 * ratios, and the bytes each server hands over before the first question.
 *   - querygate: the built CLI over stdio, connected as the reader role, through the SDK client;
 *   - raw SQL: `@modelcontextprotocol/server-postgres` 0.6.2 over stdio (its `query` tool), connected as
 *     the admin (its users connect with a role that reads the sales tables), installed into a scratch
 *     folder at run time; if it does not install, a plain pg client that runs the SQL the way it does
 *     (a READ ONLY transaction, the rows as `JSON.stringify(rows, null, 2)`), and the report says so.
 * A call that errors is recorded and its question marked unanswered; the run goes on. Not a test: it
 * asserts nothing, and times nothing.
 *
 *   npm run bench:questions -- [--orders 50000]
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { startEmbedded } from '../src/db/embedded.js';
import { isoWeekStart, monthEnd, monthStart, quarterStart, shiftDays, shiftMonths } from '../src/lib/calendar.js';
import { MAX_RANGE_DAYS, todayUtc, yesterdayUtc } from '../src/lib/date-range.js';
import { createLogger } from '../src/lib/logger.js';
import {
  ask,
  bytes,
  connectQuerygate,
  fmt,
  personalValues,
  rawServer,
  through,
  type Call,
  type Outcome,
} from './raw-sql.js';

const { values } = parseArgs({ options: { orders: { type: 'string', default: '50000' } } });
const ORDERS = Number(values.orders);
const logger = createLogger('warn');

interface Question {
  readonly text: string;
  /** querygate's calls, or why it has none (the question asks for what it never answers). */
  readonly querygate: readonly Call[] | { readonly declined: string };
  /** The SQL a model would write over the `sales` tables, one `query` call each. */
  readonly sql: readonly string[];
}

// The calendar of the run: the seed ends yesterday (UTC), so that every period below is full of orders.
const TODAY = todayUtc();
const YESTERDAY = yesterdayUtc();
const THIS_WEEK = isoWeekStart(TODAY);
const LAST_WEEK = [shiftDays(THIS_WEEK, -7), shiftDays(THIS_WEEK, -1)] as const;
const LAST_MONTH = [shiftMonths(monthStart(TODAY), -1), shiftDays(monthStart(TODAY), -1)] as const;
const LAST_QUARTER = [shiftMonths(quarterStart(TODAY), -3), shiftDays(quarterStart(TODAY), -1)] as const;
const YEAR_START = `${TODAY.slice(0, 4)}-01-01`;
const days = (n: number): readonly [string, string] => [shiftDays(TODAY, -n), YESTERDAY];

/** `start`..`end` cut into ranges of at most MAX_RANGE_DAYS, as a model splits a longer span by hand. */
function ranges(start: string, end: string): [string, string][] {
  const out: [string, string][] = [];
  for (let from = start; from <= end; from = shiftDays(from, MAX_RANGE_DAYS)) {
    const to = shiftDays(from, MAX_RANGE_DAYS - 1);
    out.push([from, to < end ? to : end]);
  }
  return out;
}

/** Whole months `start`..`end` packed into ranges of at most MAX_RANGE_DAYS, so no month is cut in two. */
function monthRanges(start: string, end: string): [string, string][] {
  const out: [string, string][] = [];
  for (let month = start; month <= end; month = shiftDays(monthEnd(month), 1)) {
    const last = out.at(-1);
    const next = monthEnd(month);
    const span = last ? (Date.parse(next) - Date.parse(last[0])) / 86_400_000 + 1 : 0;
    if (last && span <= MAX_RANGE_DAYS) last[1] = next;
    else out.push([month, next]);
  }
  return out;
}

const range = ([start_date, end_date]: readonly [string, string]): Record<string, string> => ({ start_date, end_date });
/** The half-open timestamp condition a model writes for the days `start`..`end`. */
const between = ([start, end]: readonly [string, string], column = 'o.ordered_at'): string =>
  `${column} >= '${start}' and ${column} < '${shiftDays(end, 1)}'`;
const NET = "o.status not in ('cancelled', 'refunded')";
const ITEMS =
  'from sales.orders o join sales.order_items oi on oi.order_id = o.id join sales.products p on p.id = oi.product_id';

const QUESTIONS: Question[] = [
  {
    text: 'How many orders did we get last week?',
    querygate: [{ tool: 'query_order_count', args: { period: 'last_week' } }],
    sql: [`select count(*) as orders from sales.orders o where ${between(LAST_WEEK)}`],
  },
  {
    text: 'How many orders of each status in the last 30 days?',
    querygate: [{ tool: 'query_order_count', args: { period: 'last_30_days' } }],
    sql: [
      `select o.status, count(*) as orders from sales.orders o where ${between(days(30))} group by o.status order by orders desc`,
    ],
  },
  {
    text: 'What was our revenue yesterday?',
    querygate: [{ tool: 'query_sales', args: { group_by: 'day', period: 'yesterday' } }],
    sql: [
      `select count(*) as orders, sum(o.total_amount) as revenue from sales.orders o where ${between([YESTERDAY, YESTERDAY])} and ${NET}`,
    ],
  },
  {
    text: 'Daily sales for the last two weeks',
    querygate: [{ tool: 'query_sales', args: { group_by: 'day', ...range(days(14)) } }],
    sql: [
      `select date_trunc('day', o.ordered_at)::date as day, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o where ${between(days(14))} and ${NET} group by 1 order by 1`,
    ],
  },
  {
    text: 'Weekly sales for the last 12 weeks',
    querygate: [
      { tool: 'query_sales', args: { group_by: 'week', ...range([shiftDays(LAST_WEEK[0], -77), LAST_WEEK[1]]) } },
    ],
    sql: [
      `select date_trunc('week', o.ordered_at)::date as week, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o where ${between([shiftDays(LAST_WEEK[0], -77), LAST_WEEK[1]])} and ${NET} group by 1 order by 1`,
    ],
  },
  {
    text: 'Revenue per month for the last three months',
    querygate: monthRanges(shiftMonths(LAST_MONTH[0], -2), LAST_MONTH[1]).map((r) => ({
      tool: 'query_sales',
      args: { group_by: 'month', ...range(r) },
    })),
    sql: [
      `select date_trunc('month', o.ordered_at)::date as month, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o where ${between([shiftMonths(LAST_MONTH[0], -2), LAST_MONTH[1]])} and ${NET} group by 1 order by 1`,
    ],
  },
  {
    text: 'Revenue by region this quarter so far',
    querygate: ranges(quarterStart(TODAY), TODAY).map((r) => ({
      tool: 'query_sales',
      args: { group_by: 'region', ...range(r) },
    })),
    sql: [
      `select c.region, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o join sales.customers c on c.id = o.customer_id where ${between([quarterStart(TODAY), TODAY])} and ${NET} group by c.region order by revenue desc`,
    ],
  },
  {
    text: 'Revenue by region last quarter',
    querygate: ranges(...LAST_QUARTER).map((r) => ({ tool: 'query_sales', args: { group_by: 'region', ...range(r) } })),
    sql: [
      `select c.region, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o join sales.customers c on c.id = o.customer_id where ${between(LAST_QUARTER)} and ${NET} group by c.region order by revenue desc`,
    ],
  },
  {
    text: 'Revenue of Europe by category last month',
    querygate: [{ tool: 'query_sales', args: { group_by: 'category', region: 'Europe', period: 'last_month' } }],
    sql: [
      `select p.category, count(distinct o.id) as orders, sum(oi.quantity * oi.unit_price) as revenue ${ITEMS} join sales.customers c on c.id = o.customer_id where c.region = 'Europe' and ${between(LAST_MONTH)} and ${NET} group by p.category order by revenue desc`,
    ],
  },
  {
    text: 'Top 10 Electronics products by revenue in the last 30 days',
    querygate: [
      {
        tool: 'query_metrics',
        args: {
          metrics: ['revenue'],
          group_by: ['product'],
          filters: { category: ['Electronics'] },
          period: 'last_30_days',
          order_by: 'revenue',
          limit: 10,
        },
      },
    ],
    sql: [
      `select p.sku, p.name, sum(oi.quantity) as units, sum(oi.quantity * oi.unit_price) as revenue ${ITEMS} where p.category = 'Electronics' and ${between(days(30))} and ${NET} group by p.sku, p.name order by revenue desc limit 10`,
    ],
  },
  {
    text: 'The 5 best-selling products by units last week',
    querygate: [{ tool: 'query_top_products', args: { period: 'last_week', metric: 'units', limit: 5 } }],
    sql: [
      `select p.sku, p.name, sum(oi.quantity) as units, sum(oi.quantity * oi.unit_price) as revenue ${ITEMS} where ${between(LAST_WEEK)} and ${NET} group by p.sku, p.name order by units desc limit 5`,
    ],
  },
  {
    text: 'How many units of SKU-00001 did we sell last month?',
    querygate: [
      {
        tool: 'query_metrics',
        args: { metrics: ['units'], filters: { product: ['SKU-00001'] }, period: 'last_month' },
      },
    ],
    sql: [`select sum(oi.quantity) as units ${ITEMS} where p.sku = 'SKU-00001' and ${between(LAST_MONTH)} and ${NET}`],
  },
  {
    text: 'At what hour of the day do we get the most orders?',
    querygate: [
      { tool: 'query_metrics', args: { metrics: ['orders'], group_by: ['hour_of_day'], period: 'last_90_days' } },
    ],
    sql: [
      `select extract(hour from o.ordered_at) as hour, count(*) as orders from sales.orders o where ${between(days(90))} group by 1 order by orders desc`,
    ],
  },
  {
    text: 'Which weekday brings the most orders?',
    querygate: [
      { tool: 'query_metrics', args: { metrics: ['orders'], group_by: ['weekday'], period: 'last_90_days' } },
    ],
    sql: [
      `select to_char(o.ordered_at, 'FMDay') as weekday, count(*) as orders from sales.orders o where ${between(days(90))} group by 1 order by orders desc`,
    ],
  },
  {
    text: 'How many different customers ordered last month?',
    querygate: [{ tool: 'query_metrics', args: { metrics: ['customers'], period: 'last_month' } }],
    sql: [`select count(distinct o.customer_id) as customers from sales.orders o where ${between(LAST_MONTH)}`],
  },
  {
    text: 'What is our refund rate over the last 90 days?',
    querygate: [{ tool: 'query_metrics', args: { metrics: ['refund_rate'], period: 'last_90_days' } }],
    sql: [
      `select count(*) filter (where o.status = 'refunded') as refunded, count(*) as orders, round(count(*) filter (where o.status = 'refunded')::numeric / count(*), 4) as refund_rate from sales.orders o where ${between(days(90))}`,
    ],
  },
  {
    text: 'Which region has the highest refund rate?',
    querygate: [
      {
        tool: 'query_metrics',
        args: { metrics: ['refund_rate'], group_by: ['region'], period: 'last_90_days', order_by: 'refund_rate' },
      },
    ],
    sql: [
      `select c.region, round(count(*) filter (where o.status = 'refunded')::numeric / count(*), 4) as refund_rate from sales.orders o join sales.customers c on c.id = o.customer_id where ${between(days(90))} group by c.region order by refund_rate desc`,
    ],
  },
  {
    text: 'Average order value by currency last month',
    querygate: [{ tool: 'query_metrics', args: { metrics: ['avg_order_value'], period: 'last_month' } }],
    sql: [
      `select o.currency, count(*) as orders, round(avg(o.total_amount), 2) as avg_order_value from sales.orders o where ${between(LAST_MONTH)} and ${NET} group by o.currency`,
    ],
  },
  {
    text: 'How is this month going against the same days last year?',
    querygate: [
      {
        tool: 'query_metrics',
        args: { metrics: ['revenue', 'orders'], period: 'month_to_date', compare_to: 'previous_year' },
      },
    ],
    sql: [
      "select count(*) filter (where o.ordered_at >= date_trunc('month', now())) as orders_this_year, " +
        `sum(o.total_amount) filter (where o.ordered_at >= date_trunc('month', now()) and ${NET}) as revenue_this_year, ` +
        "count(*) filter (where o.ordered_at < now() - interval '1 year') as orders_last_year, " +
        `sum(o.total_amount) filter (where o.ordered_at < now() - interval '1 year' and ${NET}) as revenue_last_year ` +
        "from sales.orders o where (o.ordered_at >= date_trunc('month', now())) or " +
        "(o.ordered_at >= date_trunc('month', now() - interval '1 year') and o.ordered_at < now() - interval '1 year')",
    ],
  },
  {
    text: 'Revenue so far this year against the same period last year',
    querygate: ranges(YEAR_START, TODAY).map((r) => ({
      tool: 'query_metrics',
      args: { metrics: ['revenue'], ...range(r), compare_to: 'previous_year' },
    })),
    sql: [
      "select sum(o.total_amount) filter (where o.ordered_at >= date_trunc('year', now())) as revenue_this_year, " +
        "sum(o.total_amount) filter (where o.ordered_at < now() - interval '1 year') as revenue_last_year " +
        `from sales.orders o where ${NET} and ((o.ordered_at >= date_trunc('year', now())) or ` +
        "(o.ordered_at >= date_trunc('year', now() - interval '1 year') and o.ordered_at < now() - interval '1 year'))",
    ],
  },
  {
    text: 'Show the 10 most recent orders from Europe',
    querygate: [
      {
        tool: 'query_recent_orders',
        args: { filters: { region: ['Europe'] }, limit: 10, ...range([shiftDays(TODAY, -6), TODAY]) },
      },
    ],
    sql: [
      "select o.id, o.ordered_at, o.status, o.currency, o.total_amount, c.name as customer_name, c.email as customer_email from sales.orders o join sales.customers c on c.id = o.customer_id where c.region = 'Europe' order by o.ordered_at desc limit 10",
    ],
  },
  {
    text: 'List the latest 20 pending orders',
    querygate: [
      { tool: 'query_recent_orders', args: { status: 'pending', limit: 20, ...range([shiftDays(TODAY, -6), TODAY]) } },
    ],
    sql: [
      "select o.id, o.ordered_at, o.currency, o.total_amount, o.customer_id, c.name as customer_name, c.email as customer_email from sales.orders o join sales.customers c on c.id = o.customer_id where o.status = 'pending' order by o.ordered_at desc limit 20",
    ],
  },
  {
    text: 'How many orders were cancelled in each region last month?',
    querygate: [
      {
        tool: 'query_metrics',
        args: { metrics: ['orders'], group_by: ['region'], filters: { status: ['cancelled'] }, period: 'last_month' },
      },
    ],
    sql: [
      `select c.region, count(*) as cancelled_orders from sales.orders o join sales.customers c on c.id = o.customer_id where o.status = 'cancelled' and ${between(LAST_MONTH)} group by c.region order by cancelled_orders desc`,
    ],
  },
  {
    text: 'Who were our 5 biggest customers this year?',
    querygate: { declined: 'no tool ranks customers: a personal column is never a dimension' },
    sql: [
      `select c.id as customer_id, c.name, c.email, count(*) as orders, sum(o.total_amount) as revenue from sales.orders o join sales.customers c on c.id = o.customer_id where ${between([YEAR_START, TODAY])} and ${NET} group by c.id, c.name, c.email order by revenue desc limit 5`,
    ],
  },
];

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-questions-'));
  await chmod(dataDir, 0o755);
  const database = await startEmbedded({ dataDir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger);
  try {
    await seedDatabase(database.adminUrl, { orders: ORDERS, until: YESTERDAY, replace: false }, logger);
    const admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
    const zone = (await admin.query<{ tz: string }>("select current_setting('TimeZone') as tz")).rows[0]!.tz;
    const personal = await personalValues(admin);
    await admin.end();

    const querygate = await connectQuerygate('bench-questions', database);
    const listed = (await querygate.listTools()).tools;
    const querygateBefore = {
      tools: bytes(JSON.stringify(listed)),
      count: listed.length,
      instructions: bytes(querygate.getInstructions() ?? ''),
    };
    const raw = await rawServer(database.adminUrl);
    // A raw-SQL model has to learn the schema first: server-postgres lists only the public schema's
    // tables as resources, so it asks the catalog, once.
    const schemaCall = await raw.call({
      tool: 'query',
      args: {
        sql: "select table_name, column_name, data_type from information_schema.columns where table_schema = 'sales' order by table_name, ordinal_position",
      },
    });

    const results: { question: Question; qg: Outcome; raw: Outcome }[] = [];
    for (const question of QUESTIONS) {
      const qg =
        'declined' in question.querygate
          ? { tools: '(none)', calls: 0, bytes: 0, raw: 0, masked: 0, unanswered: question.querygate.declined }
          : await ask(question.querygate, through(querygate), personal);
      const rawOutcome = await ask(
        question.sql.map((sql) => ({ tool: 'query', args: { sql } })),
        raw.call,
        personal,
      );
      results.push({ question, qg, raw: rawOutcome });
      process.stderr.write(
        `${question.text}: querygate ${qg.unanswered ? 'unanswered' : 'ok'}, raw ${rawOutcome.unanswered ? 'unanswered' : 'ok'}\n`,
      );
    }
    await querygate.close();
    await raw.stop();

    process.stdout.write(
      `${report(results, { querygateBefore, rawLabel: raw.label, rawTools: raw.toolsBytes, schemaBytes: bytes(schemaCall.text), zone })}\n`,
    );
  } finally {
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

interface Before {
  readonly querygateBefore: { readonly tools: number; readonly count: number; readonly instructions: number };
  readonly rawLabel: string;
  readonly rawTools: number;
  readonly schemaBytes: number;
  readonly zone: string;
}

/** The Markdown the run prints: the table, the totals and ratios, what came before, the errors. */
function report(results: readonly { question: Question; qg: Outcome; raw: Outcome }[], before: Before): string {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim();
  const sum = (pick: (r: (typeof results)[number]) => number, rows = results): number =>
    rows.reduce((total, r) => total + pick(r), 0);
  const both = results.filter((r) => !r.qg.unanswered && !r.raw.unanswered);
  const ratio = (a: number, b: number): string => (b === 0 ? 'n/a' : `${fmt(a / b, 2)}x`);
  const answered = (o: Outcome): string => (o.unanswered ? 'no' : 'yes');
  const lines = [
    `Run on ${TODAY} at commit \`${commit}\`${dirty ? ' (with uncommitted changes)' : ''}: \`npm run bench:questions -- --orders ${ORDERS}\`, ${fmt(ORDERS)} demo orders up to ${YESTERDAY}, reporting zone UTC (the raw side's session zone: ${before.zone}). Raw SQL: ${before.rawLabel}.`,
    '',
    '| # | question | querygate tools | calls | bytes | raw personal | masked | answered | raw SQL calls | bytes | raw personal | answered |',
    '| ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |',
    ...results.map(
      ({ question, qg, raw }, i) =>
        `| ${i + 1} | ${question.text} | ${qg.tools} | ${qg.calls} | ${fmt(qg.bytes)} | ${qg.raw} | ${qg.masked} | ${answered(qg)} | ${raw.calls} | ${fmt(raw.bytes)} | ${raw.raw} | ${answered(raw)} |`,
    ),
    `| | **all ${results.length} questions** | | ${sum((r) => r.qg.calls)} | ${fmt(sum((r) => r.qg.bytes))} | ${sum((r) => r.qg.raw)} | ${sum((r) => r.qg.masked)} | ${results.filter((r) => !r.qg.unanswered).length} | ${sum((r) => r.raw.calls)} | ${fmt(sum((r) => r.raw.bytes))} | ${sum((r) => r.raw.raw)} | ${results.filter((r) => !r.raw.unanswered).length} |`,
    `| | **the ${both.length} answered on both** | | ${sum((r) => r.qg.calls, both)} | ${fmt(sum((r) => r.qg.bytes, both))} | ${sum((r) => r.qg.raw, both)} | ${sum((r) => r.qg.masked, both)} | | ${sum((r) => r.raw.calls, both)} | ${fmt(sum((r) => r.raw.bytes, both))} | ${sum((r) => r.raw.raw, both)} | |`,
    '',
    `- Ratios querygate/raw, all questions: calls ${ratio(
      sum((r) => r.qg.calls),
      sum((r) => r.raw.calls),
    )}, bytes ${ratio(
      sum((r) => r.qg.bytes),
      sum((r) => r.raw.bytes),
    )}; the ${both.length} answered on both: calls ${ratio(
      sum((r) => r.qg.calls, both),
      sum((r) => r.raw.calls, both),
    )}, bytes ${ratio(
      sum((r) => r.qg.bytes, both),
      sum((r) => r.raw.bytes, both),
    )}.`,
    `- Bytes before the first question: querygate \`tools/list\` ${fmt(before.querygateBefore.tools)} (${before.querygateBefore.count} tools), its instructions ${fmt(before.querygateBefore.instructions)}; raw SQL \`tools/list\` ${fmt(before.rawTools)}, and its one call to read the \`sales\` schema from the catalog ${fmt(before.schemaBytes)}.`,
    ...results.flatMap(({ question, qg, raw }, i) => [
      ...(qg.unanswered ? [`- ${i + 1}, querygate unanswered: ${qg.unanswered}`] : []),
      ...(raw.unanswered ? [`- ${i + 1}, raw SQL unanswered: ${raw.unanswered}`] : []),
      ...(qg.calls > 1
        ? [
            `- ${i + 1} (${question.text}) takes ${qg.calls} calls on querygate: its span is longer than ${MAX_RANGE_DAYS} days, the most one call covers.`,
          ]
        : []),
    ]),
  ];
  return lines.join('\n');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
