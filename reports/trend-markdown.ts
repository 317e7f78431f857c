/**
 * The weekly sales trend as Markdown, what `querygate report trend --format md` writes: a table for
 * each currency, since money is never added across currencies. Every figure is the JSON report's own.
 */
import { formatMoney, formatNumber, signed } from '../src/render/figures.js';
import { markdownNotes, markdownTable, markdownText } from '../src/render/markdown.js';
import type { SalesTrendReport } from './trend-shape.js';

/** The currencies of a trend's rows, in the order the rows give them. */
export function trendCurrencies(r: SalesTrendReport): string[] {
  return [...new Set(r.rows.map((row) => row.currency))];
}

export function trendMarkdown(r: SalesTrendReport): string {
  const parts = [
    `# Weekly sales trend ${r.first_week} to ${r.last_week}`,
    '',
    `${r.weeks} ISO weeks, ${r.start_date} to ${r.end_date}${r.partial ? ' (the last week is still running)' : ''}, time zone ${r.time_zone}.`,
    '',
    ...markdownNotes(r),
  ];
  const currencies = trendCurrencies(r);
  if (currencies.length === 0) parts.push('No sales in these weeks.', '');
  for (const currency of currencies) {
    parts.push(
      `## ${markdownText(currency)}`,
      '',
      markdownTable(
        ['Week', 'Monday', 'Revenue', 'Net orders', 'Average order value', 'Change'],
        r.rows
          .filter((row) => row.currency === currency)
          .map((row) => [
            row.week,
            row.start_date,
            formatMoney(row.revenue),
            formatNumber(row.order_count),
            formatMoney(row.avg_order_value),
            signed(row.change_pct, ' %'),
          ]),
      ),
    );
  }
  parts.push(
    `Revenue and net orders leave out cancelled and refunded orders (the weekly report's orders placed count them); the change is against the week before. Data as of ${r.data_as_of}.`,
    '',
  );
  return parts.join('\n');
}
