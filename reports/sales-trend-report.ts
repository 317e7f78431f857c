/**
 * How have sales moved week by week? The trend report: up to 52 ISO weeks ending with the last whole
 * week (or a given one), each with its net revenue, net orders and average order value per currency,
 * and the change from the week before.
 *
 * Example input: { "weeks": 12 }
 *
 * Built from query_sales by week, run over successive ranges of at most 12 whole weeks (84 days, under
 * the 90 a statement may cover), from the week before the first, so that the first week has its change
 * too: 52 weeks take five queries, and progress is told after each. In a
 * whole-hour zone each reads the hourly rollup. It is the report to run as a job (submit_trend_report)
 * when a client cannot wait.
 */
import { z } from 'zod';
import { querySales } from '../queries/query-sales.js';
import { ArgumentError } from '../src/lib/errors.js';
import { MAX_ROWS } from '../src/lib/arguments.js';
import { changeOf } from '../src/lib/comparison.js';
import { isoInZone } from '../src/lib/local-day.js';
import { sameTimeOfDay } from '../src/lib/running.js';
import { isoWeekOf, resolveWeek, weekArgument } from '../src/lib/weeks.js';
import { defineReport } from '../src/reports.js';
import { trendHtml } from './trend-html.js';
import { trendMarkdown } from './trend-markdown.js';
import { trendOutput, type TrendOutput } from './trend-shape.js';

const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
export const MAX_TREND_WEEKS = 52;
/** Weeks per query: 12 weeks are 84 days, within the 90 days one statement may cover. */
const WEEKS_PER_QUERY = 12;

const input = z.strictObject({
  weeks: z
    .number()
    .int({ error: 'must be a whole number of weeks' })
    .min(2, { error: 'must be at least 2' })
    .max(MAX_TREND_WEEKS, { error: `must be at most ${MAX_TREND_WEEKS}` })
    .default(12),
  through_week: weekArgument.optional().describe('Last week: 2026-W48, a day in it, last_week (default) or this_week'),
});

/** The ranges, each of at most WEEKS_PER_QUERY whole weeks, that the trend is read in. */
export function trendChunks(start: string, weeks: number): { start_date: string; end_date: string }[] {
  const chunks = [];
  for (let done = 0; done < weeks; done += WEEKS_PER_QUERY) {
    const length = Math.min(WEEKS_PER_QUERY, weeks - done);
    const from = shift(start, done * 7);
    chunks.push({ start_date: from, end_date: shift(from, length * 7 - 1) });
  }
  return chunks;
}

/** The first Monday a trend reads: the week before its first, which gives the first week its change. */
function readFrom(args: { weeks: number; through_week?: string | undefined }, today: string): string {
  const last = resolveWeek(args.through_week ?? 'last_week', today, 'through_week');
  return shift(last.start_date, -7 * args.weeks);
}

/** The report's rule: one row per week and currency, and all of them in one answer of MAX_ROWS rows. */
function assertFits(weeks: number, currencies: number): void {
  if (weeks * currencies <= MAX_ROWS) return;
  const fit = Math.floor(MAX_ROWS / currencies);
  throw new ArgumentError([
    {
      field: 'weeks',
      rule: `with sales in ${currencies} currencies, at most ${fit} weeks fit one answer of ${MAX_ROWS} rows; ask for ${fit} weeks or fewer`,
    },
  ]);
}

export const salesTrendReport = defineReport({
  name: 'sales_trend_report',
  title: 'Weekly sales trend',
  description: [
    `Net revenue, orders and average order value per ISO week and currency, up to ${MAX_TREND_WEEKS} weeks, each with its revenue change.`,
    'Use it for "how have sales trended, week by week?".',
  ].join(' '),
  input,
  examples: [{ weeks: 12 }, { weeks: 52, through_week: '2025-W26' }],
  output: trendOutput,
  uses: [querySales],
  command: 'trend',
  render: { markdown: trendMarkdown, html: trendHtml },
  job: { submitTool: 'submit_trend_report' },
  // The last week is fixed when the call is made: a job run later, or again, covers the same weeks.
  resolve: (args, ctx) => ({
    ...args,
    through_week: resolveWeek(args.through_week ?? 'last_week', ctx.today, 'through_week').week,
  }),
  // One week more than asked for, read first, gives the first week its change too; a running last week
  // takes one more, the week before cut at the same local time.
  steps: (args, ctx) =>
    Math.ceil((args.weeks + 1) / WEEKS_PER_QUERY) +
    (resolveWeek(args.through_week ?? 'last_week', ctx.today, 'through_week').end_date >= ctx.today ? 1 : 0),
  // At submit: the currencies sold over the same weeks, against the rule. Read by region (the daily
  // region rollup, a few rows a query), not by week as the run reads them: the answer is the same set.
  check: async (run, args, ctx) => {
    const currencies = new Set<string>();
    for (const chunk of trendChunks(readFrom(args, ctx.today), args.weeks + 1)) {
      const answer = await run(querySales, { ...chunk, group_by: 'region' });
      if (answer.truncated) throw new Error('a trend check chunk was cut at the row cap');
      for (const row of answer.rows) currencies.add(row.currency);
    }
    assertFits(args.weeks, currencies.size);
  },
  build: async (run, args, ctx): Promise<TrendOutput> => {
    const last = resolveWeek(args.through_week ?? 'last_week', ctx.today, 'through_week');
    const start = shift(last.start_date, -7 * (args.weeks - 1));
    const sums = new Map<string, { cents: number; orders: number }>();
    for (const chunk of trendChunks(shift(start, -7), args.weeks + 1)) {
      const answer = await run(querySales, { ...chunk, group_by: 'week' });
      // Whole weeks of at most 12, in a few currencies: the answer always fits, and is never cut.
      if (answer.truncated) throw new Error('a trend chunk was cut at the row cap');
      for (const row of answer.rows) {
        sums.set(`${row.period}|${row.currency}`, {
          cents: Math.round(row.revenue * 100),
          orders: row.order_count,
        });
      }
    }
    // A week still running is held to the week before up to the same local time of the same weekday.
    const partial = last.end_date >= ctx.today;
    const untilMs = Math.floor(ctx.nowMs / 60_000) * 60_000;
    const beforeLast = new Map<string, number>();
    if (partial) {
      const until = sameTimeOfDay(untilMs, ctx.timeZone, (d) => shift(d, -7));
      const monday = shift(last.start_date, -7);
      const answer = await run(
        querySales,
        { start_date: monday, end_date: shift(monday, 6), group_by: 'week' },
        { until },
      );
      for (const row of answer.rows) beforeLast.set(row.currency, Math.round(row.revenue * 100));
    }
    const currencies = [...new Set([...sums.keys()].map((k) => k.split('|')[1]!))].sort();
    const rows: TrendOutput['rows'] = [];
    for (let k = 0; k < args.weeks; k++) {
      const monday = shift(start, 7 * k);
      for (const c of currencies) {
        const sum = sums.get(`${monday}|${c}`) ?? { cents: 0, orders: 0 };
        const running = partial && monday === last.start_date;
        const before = running ? (beforeLast.get(c) ?? 0) : (sums.get(`${shift(monday, -7)}|${c}`)?.cents ?? 0);
        const change = changeOf(sum.cents, before);
        rows.push({
          week: isoWeekOf(monday).week,
          start_date: monday,
          currency: c,
          revenue: sum.cents / 100,
          order_count: sum.orders,
          avg_order_value: sum.orders === 0 ? null : Math.round(sum.cents / sum.orders) / 100,
          ...change,
          partial: running,
          ...(running ? { until: isoInZone(untilMs, ctx.timeZone) } : {}),
        });
      }
    }
    assertFits(args.weeks, currencies.length);
    return {
      weeks: args.weeks,
      first_week: isoWeekOf(start).week,
      last_week: last.week,
      start_date: start,
      end_date: last.end_date,
      time_zone: ctx.timeZone,
      partial,
      rows,
    };
  },
});
