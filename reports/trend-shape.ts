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
  week: z.string().describe('ISO week, e.g. 2026-W48'),
  start_date: z.string().describe('Its Monday'),
  currency,
  revenue: money.describe('Net revenue of the week in `currency` (0 when nothing sold)'),
  order_count: count.describe('Net orders of the week in `currency`'),
  avg_order_value: money.nullable().describe('revenue / order_count; null without orders'),
  change_pct: z
    .number()
    .nullable()
    .describe(
      'Revenue change from the week before in percent; null for the first week, or when the week before had none. For a week still running, against the week before up to the same local time of the same weekday',
    ),
  change_note: z.string().optional(),
  partial: z
    .boolean()
    .describe('True for a week still running: its figures cover its Monday up to until, not the whole week'),
  until: z
    .string()
    .optional()
    .describe(
      'With partial: the instant covered up to (not included; the current minute), ISO 8601 in the offset of time_zone',
    ),
});

/** The report's answer, as its output schema and its renderers know it. */
export const trendOutput = z.object({
  weeks: count,
  first_week: z.string(),
  last_week: z.string(),
  start_date: z.string(),
  end_date: z.string(),
  time_zone: z.string(),
  partial: z
    .boolean()
    .describe(
      'True when the last week is still running: its row covers it up to until, and its change is against the week before up to the same local time',
    ),
  rows: z.array(weekRow).describe('One row per week and currency, weeks in time order, currencies alphabetically'),
});
export type TrendOutput = z.infer<typeof trendOutput>;
/** The report as a call returns it. */
export type SalesTrendReport = ReportAnswer<TrendOutput>;
