/**
 * The shape of the sales trend report's answer: its output schema and the type a call returns. Below
 * the report (sales-trend-report.ts) and its renderers (trend-markdown.ts, trend-html.ts), which all
 * read it, so a renderer imports no report and the report's import of its renderers is the only
 * arrow between them.
 */
import { z } from 'zod';
import { count, currency, money } from '../src/lib/result-shape.js';
import type { ReportAnswer } from '../src/reports.js';

const weekRow = z.object({
  week: z.string(),
  start_date: z.string(),
  currency,
  revenue: money,
  order_count: count,
  avg_order_value: money.nullable(),
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
  partial: z.boolean(),
  until: z.string().optional(),
});

/** The report's answer, as its output schema and its renderers know it. */
export const trendOutput = z.object({
  weeks: count,
  first_week: z.string(),
  last_week: z.string(),
  start_date: z.string(),
  end_date: z.string(),
  time_zone: z.string(),
  partial: z.boolean(),
  rows: z.array(weekRow),
});
export type TrendOutput = z.infer<typeof trendOutput>;
/** The report as a call returns it. */
export type SalesTrendReport = ReportAnswer<TrendOutput>;
