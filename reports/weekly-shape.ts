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
  start_date: z.string(),
  end_date: z.string(),
  until: z.string().optional(),
});

const changeUnit = z.enum(['percent', 'percentage_points']);

export const METRICS = ['revenue', 'order_count', 'avg_order_value', 'cancellation_rate', 'refund_rate'] as const;

/** Which way each figure is good for the business: more revenue and orders, fewer cancellations and refunds. */
export const HIGHER_IS_BETTER: Readonly<Record<(typeof METRICS)[number], boolean>> = {
  revenue: true,
  order_count: true,
  avg_order_value: true,
  cancellation_rate: false,
  refund_rate: false,
};

/** Whether a figure's change against the week before is better or worse for the business; none without a change. */
export function direction(m: {
  readonly metric: (typeof METRICS)[number];
  readonly change_vs_last_week: number | null;
}): 'better' | 'worse' | 'unchanged' | undefined {
  if (m.change_vs_last_week === null) return undefined;
  if (m.change_vs_last_week === 0) return 'unchanged';
  return m.change_vs_last_week > 0 === HIGHER_IS_BETTER[m.metric] ? 'better' : 'worse';
}

const metricRow = z.object({
  metric: z.enum(METRICS),
  currency: currency.nullable(),
  value: z.number().nullable(),
  last_week: z.number().nullable(),
  year_ago: z.number().nullable(),
  change_vs_last_week: z.number().nullable(),
  change_vs_year_ago: z.number().nullable(),
  change_unit: changeUnit,
  note: z.string().optional(),
});

const dayRow = z.object({
  date: z.string(),
  weekday: z.string(),
  currency,
  revenue: money,
  last_week_date: z.string(),
  last_week_revenue: money,
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
  partial: z.boolean(),
});

const productRow = z.object({
  rank: count,
  sku: z.string(),
  name: z.string(),
  category: z.string(),
  currency,
  revenue: money,
  units: count,
  rank_last_week: count.nullable(),
});

const segmentFigures = {
  currency,
  revenue: money,
  last_week_revenue: money,
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
};

const notableRow = z.object({
  date: z.string(),
  weekday: z.string(),
  currency,
  revenue: money,
  baseline_median: money,
  robust_z: z.number().nullable(),
  direction: z.enum(['high', 'low']),
});

/** The report's answer, as its output schema and its renderers know it. */
export const weeklyOutput = z.object({
  week: z.string(),
  start_date: z.string(),
  end_date: z.string(),
  through_date: z.string(),
  time_zone: z.string(),
  partial: z.boolean(),
  until: z.string().optional(),
  has_orders: z.boolean(),
  summary: z.string(),
  last_week: range,
  year_ago: range,
  metrics: z.array(metricRow),
  daily: z.array(dayRow),
  top_products: z.array(productRow),
  regions: z.array(z.object({ region: z.string(), ...segmentFigures })),
  categories: z.array(z.object({ category: z.string(), ...segmentFigures })),
  notable_days: z.array(notableRow),
  notable_rule: z.string(),
});
export type WeeklyOutput = z.infer<typeof weeklyOutput>;

/** What kind of figure a metric's values are: money (in its currency), a rate in % (its changes in percentage points), or a count. */
export function metricKind(m: {
  readonly currency: string | null;
  readonly change_unit: string;
}): 'money' | 'rate' | 'count' {
  return m.currency !== null ? 'money' : m.change_unit === 'percentage_points' ? 'rate' : 'count';
}
/** The report as a call returns it. */
export type WeeklySalesReport = ReportAnswer<WeeklyOutput>;
