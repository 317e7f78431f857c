/**
 * The sales pack's prompts: a weekly review and the explanation of a change. Each tells the model
 * which tools to call, with which arguments, and what the figures mean; the dates are resolved on
 * the day it is in the reporting time zone, so the model never has to work out what "last week" is.
 */
import type { PromptMessage } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { CompletionSource } from '../src/content/declarations.js';
import { oneOf } from '../src/lib/arguments.js';
import { PERIODS, resolvePeriod } from '../src/lib/periods.js';
import { resolveWeek, weekArgument } from '../src/lib/weeks.js';
import { definePrompt } from '../src/content/prompts.js';
import { METRIC_NAMES, type MetricName } from './docs.js';

const user = (text: string): PromptMessage => ({ role: 'user', content: { type: 'text', text } });

const RULES =
  'Figures are net (cancelled and refunded orders are left out) unless a tool says otherwise; money is never added across currencies, so compare each currency on its own; say how fresh the figures are from data_as_of. The definitions are in the resource querygate://metrics.';

/** What a model must know of a period that has not ended (src/lib/running.ts). */
const RUNNING =
  'Every answer covers it up to the current minute (partial: true, until), and weekly_sales_report and compare_to hold the earlier weeks or period to the same elapsed part, cut at the same local time of day: say the figures are so far, never set a day or week still running against a whole one, do not call today unusual, and never add up rows of two answers for the same day, week or month (a row with partial says which days it counts).';

/** The labels of a sales grouping that sold in the last 90 days, read through query_sales as the caller. */
const soldLately = (grouping: 'region' | 'category'): CompletionSource => ({
  tool: 'query_sales',
  arguments: { period: 'last_90_days', group_by: grouping },
  field: grouping,
});

export const weeklySalesReview = definePrompt({
  name: 'weekly_sales_review',
  title: 'Weekly sales review',
  description:
    'Review one ISO week of sales: the week’s figures, each day against the week before, and the regions, categories and products that drove the change.',
  arguments: z.strictObject({ week: weekArgument }),
  completions: { week: { recentWeeks: 12 } },
  messages: ({ week }, ctx) => {
    const w = resolveWeek(week, ctx.today);
    const days = { start_date: w.start_date, end_date: w.end_date };
    const running = w.end_date >= ctx.today ? ` The week is still running: today is ${ctx.today}. ${RUNNING}` : '';
    return [
      user(
        [
          `Review the sales of ISO week ${w.week}: Monday ${w.start_date} to Sunday ${w.end_date}, in the reporting time zone (${ctx.timeZone}).${running}`,
          '',
          `1. Call weekly_sales_report with ${JSON.stringify({ week: w.week })} for the week's figures.`,
          `2. Call query_sales with ${JSON.stringify({ ...days, group_by: 'day', compare_to: 'previous_period' })} to set each day against the week before.`,
          `3. Find what drove the change: call query_sales with ${JSON.stringify({ ...days, group_by: 'region', compare_to: 'previous_period' })}, then with group_by "category", and query_top_products with ${JSON.stringify({ ...days, limit: 10 })}.`,
          '4. Write the review: net revenue, orders and average order value per currency, how each moved against the week before, the two or three biggest drivers, and anything unusual (a day, a region or a category far from the rest).',
          '',
          RULES,
        ].join('\n'),
      ),
    ];
  },
});

export const explainChange = definePrompt({
  name: 'explain_change',
  title: 'Explain a change',
  description:
    'Explain why a sales figure (revenue, orders, average order value or units) changed over a period against the period before, and which regions and categories drove it.',
  arguments: z.strictObject({
    metric: oneOf(METRIC_NAMES, 'The figure whose change to explain'),
    period: oneOf(PERIODS, 'The period to explain, against the period of the same length before it'),
    region: z.string().min(1).max(100).optional().describe('Only this customer region (optional)'),
    category: z.string().min(1).max(100).optional().describe('Only this product category (optional)'),
  }),
  completions: { region: soldLately('region'), category: soldLately('category') },
  messages: ({ metric, period, region, category }, ctx) => {
    const days = resolvePeriod(period, ctx.today);
    const scope = [region && `region "${region}"`, category && `category "${category}"`].filter(Boolean).join(' and ');
    const running =
      days.end_date >= ctx.today
        ? ` The period is still running: today is ${ctx.today}. ${RUNNING} A figure asked for separately for the period before (query_top_products has no compare_to) covers it whole: do not set it against this one; say the comparison must wait until the period has ended.`
        : '';
    return [
      user(
        [
          `Explain why ${metric} changed over ${period} (${days.start_date} to ${days.end_date}, in the reporting time zone ${ctx.timeZone}) against the period of the same length just before it${scope ? `, for ${scope}` : ''}.${running}`,
          '',
          `1. Measure the change: ${MEASURE[metric](period)}`,
          `2. Find the drivers: call query_sales with ${JSON.stringify({ period, group_by: 'region', compare_to: 'previous_period' })}, then with group_by "category"${scope ? `, and look at the rows of ${scope}` : ''}; for units, call query_top_products with ${JSON.stringify({ period, metric: 'units' })}.`,
          `3. Explain it: how much ${metric} moved, in its unit and in percent, per currency; which groups account for most of the move, and whether it comes from more or fewer orders or from their value.`,
          '',
          RULES,
        ].join('\n'),
      ),
    ];
  },
});

/** How each figure's change is measured, with the tool that reports it. */
const MEASURE: Record<MetricName, (period: string) => string> = {
  revenue: (period) =>
    `call query_sales with ${JSON.stringify({ period, group_by: 'week', compare_to: 'previous_period' })} and compare the revenue of the two periods.`,
  order_count: (period) =>
    `call query_order_count with ${JSON.stringify({ period })} for the orders of every status (by_status shows whether cancellations or refunds moved), and query_sales with ${JSON.stringify({ period, group_by: 'week', compare_to: 'previous_period' })} for net orders.`,
  avg_order_value: (period) =>
    `call query_sales with ${JSON.stringify({ period, group_by: 'week', compare_to: 'previous_period' })}; the average order value is revenue / order_count of each currency, so see which of the two moved.`,
  units: (period) =>
    `call query_top_products with ${JSON.stringify({ period, metric: 'units', limit: 20 })} and compare it with the period before.`,
};

export const prompts = [weeklySalesReview, explainChange];
