/**
 * The shape of the weekly sales report's answer: its output schema and the type a call returns. Below
 * the report (weekly-sales-report.ts) and its renderers (weekly-markdown.ts, weekly-html.ts), which
 * all read it, so a renderer imports no report and the report's import of its renderers is the only
 * arrow between them.
 */
import { z } from 'zod';
import { count, currency, money } from '../src/lib/result-shape.js';
import type { ReportAnswer } from '../src/reports.js';

/** The eight weeks before the week are the baseline a day is held to. */
export const BASELINE_WEEKS = 8;
export const TOP_PRODUCTS = 5;

const range = z.object({
  start_date: z.string().describe('First day (YYYY-MM-DD)'),
  end_date: z.string().describe('Last day (YYYY-MM-DD)'),
  until: z
    .string()
    .optional()
    .describe(
      "While the week is running: the instant these days are covered up to (not included), the same local time of day as the week's own until; ISO 8601 in the offset of time_zone",
    ),
});

const changeUnit = z
  .enum(['percent', 'percentage_points'])
  .describe('percent: (value − other) / other × 100; percentage_points: value − other, for the rates');

export const METRICS = ['revenue', 'order_count', 'avg_order_value', 'cancellation_rate', 'refund_rate'] as const;

const metricRow = z.object({
  metric: z
    .enum(METRICS)
    .describe(
      'revenue: net of cancelled and refunded orders; order_count: every order placed, whatever its status; avg_order_value: revenue / net orders; cancellation_rate and refund_rate: cancelled or refunded orders as a percentage of every order placed',
    ),
  currency: currency.nullable().describe('The currency of revenue and avg_order_value; null for counts and rates'),
  value: z.number().nullable().describe('This week (through through_date)'),
  last_week: z.number().nullable().describe('The same days of the week before'),
  year_ago: z.number().nullable().describe('The same days of the same week a year earlier (52 weeks before)'),
  change_vs_last_week: z.number().nullable(),
  change_vs_year_ago: z.number().nullable(),
  change_unit: changeUnit,
  note: z.string().optional().describe('Why a change is null'),
});

const dayRow = z.object({
  date: z.string(),
  weekday: z.string(),
  currency,
  revenue: money.describe('Net revenue of the day'),
  last_week_date: z.string().describe('The same weekday of the week before'),
  last_week_revenue: money,
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
  partial: z
    .boolean()
    .describe(
      'True for today while the week is running: revenue covers the day up to until, and last_week_revenue its weekday of the week before up to the same local time (last_week.until)',
    ),
});

const productRow = z.object({
  rank: count.describe('Rank by net revenue within its currency, 1 = best'),
  sku: z.string(),
  name: z.string(),
  category: z.string(),
  currency,
  revenue: money,
  units: count,
  rank_last_week: count
    .nullable()
    .describe(
      'Its rank the week before (same days, same currency); null when it sold nothing then, or ranked below 100',
    ),
});

const segmentFigures = {
  currency,
  revenue: money.describe('Net revenue of the week'),
  last_week_revenue: money.describe('Net revenue of the same days the week before'),
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
};

const notableRow = z.object({
  date: z.string(),
  weekday: z.string(),
  currency,
  revenue: money,
  baseline_median: money.describe(`Median revenue of the same weekday over the ${BASELINE_WEEKS} weeks before`),
  robust_z: z.number().nullable().describe('Modified z-score (see notable_rule); null when the baseline has no spread'),
  direction: z.enum(['high', 'low']),
});

/** The report's answer, as its output schema and its renderers know it. */
export const weeklyOutput = z.object({
  week: z.string().describe('The ISO week, e.g. 2026-W48'),
  start_date: z.string().describe('Its Monday'),
  end_date: z.string().describe('Its Sunday'),
  through_date: z.string().describe('The last day covered: end_date, or today while the week is still running'),
  time_zone: z.string(),
  partial: z
    .boolean()
    .describe(
      'True while the week is still running: figures cover start_date up to until, and every comparison the same elapsed part of its week, to the same local time of day',
    ),
  until: z
    .string()
    .optional()
    .describe(
      'While the week is running: the instant its figures are covered up to (not included; the current minute), ISO 8601 in the offset of time_zone',
    ),
  has_orders: z.boolean().describe('False when no order was placed in the days covered'),
  summary: z.string().describe('One sentence a person can read first'),
  last_week: range.describe('The days this week is compared with, the week before'),
  year_ago: range.describe('The days this week is compared with, 52 weeks before'),
  metrics: z.array(metricRow),
  daily: z.array(dayRow).describe('Net revenue per day and currency, against the same weekday of the week before'),
  top_products: z.array(productRow).describe(`The best ${TOP_PRODUCTS} products of each currency by net revenue`),
  regions: z.array(z.object({ region: z.string(), ...segmentFigures })),
  categories: z.array(z.object({ category: z.string(), ...segmentFigures })),
  notable_days: z.array(notableRow),
  notable_rule: z.string().describe('How a notable day is found'),
});
export type WeeklyOutput = z.infer<typeof weeklyOutput>;
/** The report as a call returns it. */
export type WeeklySalesReport = ReportAnswer<WeeklyOutput>;
