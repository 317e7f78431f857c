/** The sales pack's resource templates: its reports, as a client reads documents. */
import type { ResourceTemplate } from '../src/content/declarations.js';
import { InfraError } from '../src/lib/errors.js';
import { resolveWeek } from '../src/lib/weeks.js';
import type { WeeklySalesReport } from './weekly-shape.js';
import { weeklyMarkdown } from './weekly-markdown.js';

/** `querygate://reports/weekly/{week}`: the weekly sales report of a week, as Markdown. */
export const weeklyReportResource: ResourceTemplate = {
  uriTemplate: 'querygate://reports/weekly/{week}',
  name: 'weekly_sales_report',
  title: 'Weekly sales report',
  description:
    'The weekly sales report of one ISO week as Markdown: figures against the week before and a year earlier, days, top products, regions, categories and notable days. {week} is an ISO week (2026-W48), a day inside one, last_week or this_week.',
  mimeType: 'text/markdown',
  tools: ['weekly_sales_report'],
  completions: { week: { recentWeeks: 12 } },
  read: async ({ week }, ctx) => {
    // A malformed or future week is refused here, naming the variable (-32602), before any query.
    const resolved = resolveWeek(week ?? '', ctx.today);
    const result = await ctx.callTool('weekly_sales_report', { week: resolved.week });
    if (result.isError) {
      const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join(' ');
      throw new InfraError('query_failed', new Error(text));
    }
    return weeklyMarkdown(result.structuredContent as unknown as WeeklySalesReport);
  },
};
