/**
 * How did a week go? The weekly sales report: the week's revenue, orders, average order value and
 * cancellation and refund rates against the week before and the same week a year earlier; revenue by
 * day against the same weekdays of the week before; the top products with their rank the week before;
 * revenue by region and by category with the change; and the days whose revenue stands out.
 *
 * Example input: { "week": "last_week" }
 *
 * Built from the pack's templates, each run through the registry as a call of the tool would be:
 * query_sales (by day for the week, the week before and the eight weeks before that; by week a year
 * earlier; by region and by category for the week and the week before), query_order_count for the
 * three weeks, and query_top_products for the week and the week before. In a whole-hour zone every one
 * of them reads a rollup. A week still running is compared on equal elapsed time: Monday up to the
 * current minute against Monday up to the same local time of the same weekday of the other weeks
 * (src/lib/running.ts), and its unfinished day is never judged notable.
 */
import { z } from 'zod';
import { queryOrderCount } from '../queries/query-order-count.js';
import { querySales } from '../queries/query-sales.js';
import { queryTopProducts } from '../queries/query-top-products.js';
import { changeOf, pairGroups } from '../src/lib/comparison.js';
import { resolveWeek, weekArgument } from '../src/lib/weeks.js';
import { isoInZone } from '../src/lib/local-day.js';
import { sameTimeOfDay } from '../src/lib/running.js';
import { formatMoney } from '../src/render/figures.js';
import { defineReport, type RunOptions, type RunTemplate, type TemplateAnswer } from '../src/reports.js';
import { notableDays, NOTABLE_RULE } from './notable-days.js';
import { weeklyHtml } from './weekly-html.js';
import { weeklyMarkdown } from './weekly-markdown.js';
import { BASELINE_WEEKS, METRICS, TOP_PRODUCTS, weeklyOutput, type WeeklyOutput } from './weekly-shape.js';

const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const weekday = (day: string): string => WEEKDAYS[new Date(`${day}T00:00:00Z`).getUTCDay()]!;

const input = z.strictObject({ week: weekArgument });

type SalesAnswer = TemplateAnswer<typeof querySales>;
type SalesRow = SalesAnswer['rows'][number];

/**
 * The revenue and net orders of each day and currency, split until no answer is cut at the row cap;
 * up to `options.until` when given (only the last day can hold it).
 */
async function dailySales(run: RunTemplate, start: string, end: string, options?: RunOptions): Promise<SalesRow[]> {
  const answer = await run(querySales, { start_date: start, end_date: end, group_by: 'day' }, options);
  if (!answer.truncated) return answer.rows;
  if (start === end) throw new Error(`more currencies on ${start} than one answer holds`);
  const days = Math.round((Date.parse(end) - Date.parse(start)) / DAY_MS) + 1;
  const middle = shift(start, Math.floor(days / 2) - 1);
  return [...(await dailySales(run, start, middle)), ...(await dailySales(run, shift(middle, 1), end, options))];
}

/** Sums of revenue (in cents, so exactly) and net orders per currency over the given days. */
function totals(rows: readonly SalesRow[], from: string, to: string): Map<string, { cents: number; orders: number }> {
  const sums = new Map<string, { cents: number; orders: number }>();
  for (const row of rows) {
    if (row.period! < from || row.period! > to) continue;
    const sum = sums.get(row.currency) ?? { cents: 0, orders: 0 };
    sum.cents += Math.round(row.revenue * 100);
    sum.orders += row.order_count;
    sums.set(row.currency, sum);
  }
  return sums;
}

const percentChange = (value: number | null, other: number | null): { change: number | null; note?: string } => {
  const { change_pct, change_note } = changeOf(value, other);
  return { change: change_pct, ...(change_note ? { note: change_note } : {}) };
};

/** A rate's change in percentage points, to one decimal. */
const pointChange = (value: number | null, other: number | null): { change: number | null; note?: string } =>
  value === null || other === null
    ? { change: null, note: 'no orders on one side, so no rate' }
    : { change: Math.round((value - other) * 10) / 10 };

type Counted = TemplateAnswer<typeof queryOrderCount>;
const rate = (counted: Counted, status: 'cancelled' | 'refunded'): number | null =>
  counted.order_count === 0 ? null : Math.round((counted.by_status![status] / counted.order_count) * 1000) / 10;

export const weeklySalesReport = defineReport({
  name: 'weekly_sales_report',
  title: 'Weekly sales report',
  description: [
    'An ISO week against the week before and a year earlier: headline figures, days, regions, categories, top 5 products, unusual days.',
    'Use it for "how did last week go?".',
  ].join(' '),
  input,
  examples: [{ week: 'last_week' }, { week: '2025-W24' }, { week: '2025-06-11' }],
  output: weeklyOutput,
  uses: [querySales, queryOrderCount, queryTopProducts],
  steps: () => 12,
  command: 'weekly',
  render: { markdown: weeklyMarkdown, html: weeklyHtml },
  build: async (run, args, ctx): Promise<WeeklyOutput> => {
    // A week that has not begun is refused, naming the field.
    const week = resolveWeek(args.week, ctx.today);
    const through = week.end_date < ctx.today ? week.end_date : ctx.today;
    // Today is running until it has ended, Sunday too: the templates cut a range ending today at the
    // current minute, and the other weeks are cut here at the same local time of the same weekday.
    const partial = through === ctx.today;
    const untilMs = Math.floor(ctx.nowMs / 60_000) * 60_000;
    const cutBack = (days: number): RunOptions =>
      partial ? { until: sameTimeOfDay(untilMs, ctx.timeZone, (d) => shift(d, days)) } : {};
    const [lastCut, agoCut] = [cutBack(-7), cutBack(-364)];
    const untilOf = (options: RunOptions) =>
      options.until === undefined ? {} : { until: isoInZone(options.until, ctx.timeZone) };
    const current = { start_date: week.start_date, end_date: through };
    const lastWeek = { start_date: shift(week.start_date, -7), end_date: shift(through, -7) };
    const yearAgo = { start_date: shift(week.start_date, -364), end_date: shift(through, -364) };

    // Revenue by day: this week, the week before (cut as this one is), and the baseline weeks.
    const recent = [
      ...(await dailySales(run, lastWeek.start_date, lastWeek.end_date, lastCut)),
      ...(await dailySales(run, current.start_date, current.end_date)),
    ];
    const baseline = await dailySales(run, shift(week.start_date, -7 * BASELINE_WEEKS), shift(through, -14));
    const yearAgoSales = await run(querySales, { ...yearAgo, group_by: 'week' }, agoCut);
    const [counts, lastCounts, yearAgoCounts] = [
      await run(queryOrderCount, current),
      await run(queryOrderCount, lastWeek, lastCut),
      await run(queryOrderCount, yearAgo, agoCut),
    ];

    const now = totals(recent, current.start_date, current.end_date);
    const before = totals(recent, lastWeek.start_date, lastWeek.end_date);
    const yearBefore = totals(yearAgoSales.rows, '0000-00-00', '9999-99-99');
    const currencies = [...new Set([...now.keys(), ...before.keys(), ...yearBefore.keys()])].sort();
    const metrics: WeeklyOutput['metrics'] = [];
    const metric = (
      name: (typeof METRICS)[number],
      currencyCode: string | null,
      values: [number | null, number | null, number | null],
      change: typeof percentChange,
    ): void => {
      const [value, last, ago] = values;
      const vsLast = change(value, last);
      const vsAgo = change(value, ago);
      const notes = [vsLast.note && `vs last week: ${vsLast.note}`, vsAgo.note && `vs a year ago: ${vsAgo.note}`];
      const note = notes.filter(Boolean).join('; ');
      metrics.push({
        metric: name,
        currency: currencyCode,
        value,
        last_week: last,
        year_ago: ago,
        change_vs_last_week: vsLast.change,
        change_vs_year_ago: vsAgo.change,
        change_unit: change === pointChange ? 'percentage_points' : 'percent',
        ...(note ? { note } : {}),
      });
    };
    const revenueOf = (sums: typeof now, c: string): number => (sums.get(c)?.cents ?? 0) / 100;
    const aovOf = (sums: typeof now, c: string): number | null => {
      const sum = sums.get(c);
      return sum && sum.orders > 0 ? Math.round(sum.cents / sum.orders) / 100 : null;
    };
    for (const c of currencies) {
      metric('revenue', c, [revenueOf(now, c), revenueOf(before, c), revenueOf(yearBefore, c)], percentChange);
    }
    metric('order_count', null, [counts.order_count, lastCounts.order_count, yearAgoCounts.order_count], percentChange);
    for (const c of currencies) {
      metric('avg_order_value', c, [aovOf(now, c), aovOf(before, c), aovOf(yearBefore, c)], percentChange);
    }
    for (const status of ['cancelled', 'refunded'] as const) {
      metric(
        status === 'cancelled' ? 'cancellation_rate' : 'refund_rate',
        null,
        [rate(counts, status), rate(lastCounts, status), rate(yearAgoCounts, status)],
        pointChange,
      );
    }

    // By day, against the same weekday of the week before (a day without sales counts as 0).
    const revenueOn = new Map(recent.map((r) => [`${r.period}|${r.currency}`, r.revenue]));
    const daily: WeeklyOutput['daily'] = [];
    for (let day = current.start_date; day <= current.end_date; day = shift(day, 1)) {
      for (const c of currencies.filter((c) => now.has(c) || before.has(c))) {
        const revenue = revenueOn.get(`${day}|${c}`) ?? 0;
        const last = revenueOn.get(`${shift(day, -7)}|${c}`) ?? 0;
        const { change_pct, change_note } = changeOf(revenue, last);
        daily.push({
          date: day,
          weekday: weekday(day),
          currency: c,
          revenue,
          last_week_date: shift(day, -7),
          last_week_revenue: last,
          change_pct,
          ...(change_note ? { change_note } : {}),
          partial: partial && day === through,
        });
      }
    }

    const top = await run(queryTopProducts, { ...current, limit: TOP_PRODUCTS });
    const topBefore = await run(queryTopProducts, { ...lastWeek, limit: 100 }, lastCut);
    const rankBefore = new Map<string, number>();
    const seen = new Map<string, number>();
    for (const row of topBefore.rows) {
      const rank = (seen.get(row.currency) ?? 0) + 1;
      seen.set(row.currency, rank);
      rankBefore.set(`${row.sku}|${row.currency}`, rank);
    }
    const ranks = new Map<string, number>();
    const topProducts = top.rows.map((row) => {
      const rank = (ranks.get(row.currency) ?? 0) + 1;
      ranks.set(row.currency, rank);
      return { rank, ...row, rank_last_week: rankBefore.get(`${row.sku}|${row.currency}`) ?? null };
    });

    type Segment = Omit<WeeklyOutput['regions'][number], 'region'> & { key: string };
    const segments = async (by: 'region' | 'category'): Promise<Segment[]> => {
      const [nowRows, beforeRows] = [
        (await run(querySales, { ...current, group_by: by })).rows,
        (await run(querySales, { ...lastWeek, group_by: by }, lastCut)).rows,
      ];
      // Every group that sold in either week: one that sold nothing this week shows its fall to 0.
      const revenues = pairGroups(nowRows, beforeRows, (r) => `${r[by]}\u0000${r.currency}`).map((g) => {
        const row = (g.now ?? g.before)!;
        return { key: row[by]!, currency: row.currency, now: g.now?.revenue ?? 0, before: g.before?.revenue ?? 0 };
      });
      return revenues
        .sort(
          (a, b) =>
            (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0) ||
            b.now - a.now ||
            b.before - a.before ||
            (a.key < b.key ? -1 : 1),
        )
        .map(({ key, currency, now, before }) => {
          const { change_pct, change_note } = changeOf(now, before);
          return {
            key,
            currency,
            revenue: now,
            last_week_revenue: before,
            change_pct,
            ...(change_note ? { change_note } : {}),
          };
        });
    };
    const regions = (await segments('region')).map(({ key, ...figures }) => ({ region: key, ...figures }));
    const categories = (await segments('category')).map(({ key, ...figures }) => ({ category: key, ...figures }));

    const history = new Map([...baseline, ...recent].map((r) => [`${r.period}|${r.currency}`, r.revenue]));
    // Only days that have ended are judged: a day half over is not a low day.
    const notable = notableDays(
      { start_date: current.start_date, end_date: partial ? shift(through, -1) : through },
      currencies.filter((c) => now.has(c)),
      (day, c) => history.get(`${day}|${c}`) ?? 0,
      BASELINE_WEEKS,
    ).map((d) => ({ ...d, weekday: weekday(d.date) }));

    const hasOrders = counts.order_count > 0;
    const until = partial ? isoInZone(untilMs, ctx.timeZone) : undefined;
    const days = `${current.start_date} to ${current.end_date}${until ? `, so far (until ${until.slice(11, 16)})` : ''}`;
    const summary = hasOrders
      ? `${week.week} (${days}): ${counts.order_count} orders; net revenue ${currencies
          .filter((c) => now.has(c))
          .map((c) => `${formatMoney(revenueOf(now, c))} ${c}`)
          .join(', ')}.`
      : `No orders were placed in ${week.week} (${days}).`;
    return {
      ...week,
      through_date: through,
      time_zone: ctx.timeZone,
      partial,
      ...(until ? { until } : {}),
      has_orders: hasOrders,
      summary,
      last_week: { ...lastWeek, ...untilOf(lastCut) },
      year_ago: { ...yearAgo, ...untilOf(agoCut) },
      metrics,
      daily,
      top_products: topProducts,
      regions,
      categories,
      notable_days: notable,
      notable_rule: NOTABLE_RULE,
    } as WeeklyOutput;
  },
});
