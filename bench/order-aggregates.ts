/**
 * The order and customer aggregates at scale: each new shape of query_metrics (an amount bound, amount
 * bands, percentiles, repeat, new and top customers, the value in every status) against the SQL a
 * raw-SQL server would run for the same question, on 2,000,000 orders by default. Both run as the
 * reader, on one connection of the server's own (src/db/connect.ts: its session settings, each
 * statement prepared once): querygate's side is the statement query_metrics compiles for the call,
 * the raw side a statement a model would write over the reporting views, without the BEGIN READ ONLY
 * and ROLLBACK a raw-SQL server sends around it. Only the statement differs.
 * The two are interleaved in rounds, alternating which goes first; the figure is the ratio of the p50s
 * of the same run (target: at most 1x, no slower than raw SQL). A control row runs the raw SQL on both
 * sides: its ratio is how far apart two runs of one statement land. Timings are never asserted.
 *
 *   npm run bench:order-aggregates -- [--orders 2000000] [--calls 5] [--rounds 4]
 */
import { salesMetrics } from '../pack/metrics.js';
import { PERSONAL_COLUMNS } from '../pack/schema.js';
import { connectReader, createCompiler } from '../src/db/connect.js';
import { createLogger } from '../src/lib/logger.js';
import { metricsTemplate } from '../src/metrics/tool.js';
import { builderContext, type AnyTemplate } from '../src/registry/types.js';
import { timingArguments, withSeededReader } from './seeded-reader.js';

const { orders: ORDERS, calls: CALLS, rounds: ROUNDS } = timingArguments();
const template = metricsTemplate(salesMetrics, PERSONAL_COLUMNS) as unknown as AnyTemplate;

const p50 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const fmt = (n: number, digits = 1): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** A question: querygate's call, and the raw SQL over [$1, $2) a raw-SQL server would run. */
interface Workload {
  readonly label: string;
  readonly days: number;
  readonly args: Record<string, unknown>;
  readonly raw: string;
  /** A control: the raw SQL on both sides, so its ratio is the spread of the method itself (ideally 1.00x). */
  readonly control?: true;
}

const NET = `status not in ('cancelled', 'refunded')`;
const RANGE = 'ordered_at >= $1 and ordered_at < $2';
const WORKLOADS: readonly Workload[] = [
  {
    label: 'orders of 250 or more, by currency',
    days: 30,
    args: { metrics: ['orders', 'gross_amount'], min_order_value: 250 },
    raw: `select currency, count(*), sum(total_amount) from reporting.orders where ${RANGE} and total_amount >= 250 group by currency`,
  },
  {
    label: 'orders in amount bands',
    days: 30,
    args: { metrics: ['orders'], group_by: ['order_value_band'] },
    raw: `select currency, case when total_amount < 25 then 'under 25' when total_amount < 50 then '25-50'
            when total_amount < 100 then '50-100' when total_amount < 250 then '100-250'
            when total_amount < 500 then '250-500' else '500 and over' end as band, count(*)
          from reporting.orders where ${RANGE} group by 1, 2`,
  },
  {
    label: 'median and p90 order value',
    days: 90,
    args: { metrics: ['median_order_value', 'p90_order_value'] },
    raw: `select currency, percentile_cont(0.5) within group (order by total_amount),
            percentile_cont(0.9) within group (order by total_amount)
          from reporting.orders where ${RANGE} and ${NET} group by currency`,
  },
  {
    label: 'value of orders by status',
    days: 30,
    args: { metrics: ['gross_amount', 'orders'], group_by: ['status'] },
    raw: `select status, currency, sum(total_amount), count(*) from reporting.orders where ${RANGE} group by 1, 2`,
  },
  {
    label: 'one-time and repeat customers',
    days: 30,
    args: { metrics: ['customers'], group_by: ['customer_type'] },
    raw: `select case when n > 1 then 'repeat' else 'one_time' end, count(*)
          from (select customer_id, count(*) as n from reporting.orders where ${RANGE} group by customer_id) as c group by 1`,
  },
  {
    label: 'new and returning customers',
    days: 7,
    args: { metrics: ['customers'], group_by: ['customer_since'] },
    raw: `select case when f.first_at >= $1 then 'new' else 'returning' end, count(distinct o.customer_id)
          from reporting.orders as o
          join (select customer_id, min(ordered_at) as first_at from reporting.orders group by customer_id) as f
            on f.customer_id = o.customer_id
          where o.ordered_at >= $1 and o.ordered_at < $2 group by 1`,
  },
  {
    label: 'top 10 customers by revenue',
    days: 30,
    args: { metrics: ['revenue'], group_by: ['customer'], order_by: 'revenue', limit: 10 },
    raw: `select customer_id, currency, sum(total_amount) as revenue from reporting.orders
          where ${RANGE} and ${NET} group by 1, 2 order by 3 desc limit 10`,
  },
  {
    // The same call, against raw SQL that also gives what querygate's answer gives beside the ten: each
    // currency's total revenue and its count of customers (raw SQL's top 10 alone does not).
    label: 'top 10 customers, raw SQL with the totals too',
    days: 30,
    args: { metrics: ['revenue'], group_by: ['customer'], order_by: 'revenue', limit: 10 },
    raw: `with c as (select customer_id, currency, sum(total_amount) as revenue from reporting.orders
            where ${RANGE} and ${NET} group by 1, 2)
          select * from (select customer_id, currency, revenue, null::bigint as customers from c order by revenue desc limit 10) as top
          union all select null, currency, sum(revenue), count(*) from c group by currency`,
  },
  {
    label: 'control: the raw SQL of the amount bound against itself',
    days: 30,
    args: { metrics: ['orders'] },
    raw: `select currency, count(*), sum(total_amount) from reporting.orders where ${RANGE} and total_amount >= 250 group by currency`,
    control: true,
  },
];

function table(latencies: ReadonlyMap<string, number[]>): string[] {
  const lines = [
    '| workload | days | querygate p50 | raw SQL p50 | ratio | calls each |',
    '| --- | --: | --: | --: | --: | --: |',
  ];
  for (const w of WORKLOADS) {
    const qg = latencies.get(`${w.label}|querygate`) ?? [NaN];
    const raw = latencies.get(`${w.label}|raw`) ?? [NaN];
    lines.push(
      `| ${w.label} | ${w.days} | ${fmt(p50(qg))} ms | ${fmt(p50(raw))} ms | ${fmt(p50(qg) / p50(raw), 2)}x | ${qg.length} |`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  await withSeededReader(ORDERS, async (_pool, until, readerUrl) => {
    // No timeout that a loaded machine could hit: the figure is a ratio of the same run.
    const reader = connectReader(readerUrl, { statementTimeoutMs: 600_000, poolMax: 1 }, createLogger('warn'));
    const day = (back: number): string =>
      new Date(Date.parse(`${until}T00:00:00Z`) - back * 86_400_000).toISOString().slice(0, 10);
    const endsBefore = new Date(Date.parse(`${until}T00:00:00Z`) + 86_400_000).toISOString();
    const latencies = new Map<string, number[]>();
    const time = async (label: string, run: () => Promise<unknown>): Promise<void> => {
      const t0 = performance.now();
      await run();
      latencies.set(label, [...(latencies.get(label) ?? []), performance.now() - t0]);
    };
    const rawQuery = (sql: string, parameters: readonly unknown[]) => () => reader.execute({ sql, parameters });
    const sides = WORKLOADS.map((w) => {
      const args = { limit: 100, ...w.args, start_date: day(w.days - 1), end_date: until };
      const parsed = template.input.parse(args);
      const ctx = builderContext(template, { timeZone: 'UTC' }, 5, 'bench-seed');
      const compiled = template.query(createCompiler(), parsed, ctx).limit(112).compile();
      const startsAt = `${day(w.days - 1)}T00:00:00Z`;
      return {
        w,
        querygate: (): Promise<void> =>
          time(
            `${w.label}|querygate`,
            w.control ? rawQuery(w.raw, [startsAt, endsBefore]) : () => reader.execute(compiled),
          ),
        raw: (): Promise<void> => time(`${w.label}|raw`, rawQuery(w.raw, [startsAt, endsBefore])),
      };
    });
    for (const s of sides) {
      await s.querygate();
      await s.raw();
    }
    latencies.clear();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of sides) {
        const order = round % 2 === 0 ? [s.querygate, s.raw] : [s.raw, s.querygate];
        for (const run of order) for (let k = 0; k < CALLS; k++) await run();
      }
      process.stderr.write(`after round ${round + 1}:\n${table(latencies).join('\n')}\n`);
    }
    process.stdout.write(`${table(latencies).join('\n')}\n`);
    await reader.close();
  });
}

await main();
