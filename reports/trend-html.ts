/**
 * The weekly sales trend as one HTML page, what `querygate report trend --format html` writes: for
 * each currency a line of its net revenue week by week, with the table of its weeks beside it. Every
 * figure is the JSON report's own, only laid out.
 */
import { formatMoney, formatNumber, signed } from '../src/render/figures.js';
import { htmlId, htmlNotes, htmlPage, htmlTable, markup } from '../src/render/html.js';
import { lineChart } from '../src/render/svg.js';
import type { SalesTrendReport } from './trend-shape.js';
import { trendCurrencies } from './trend-markdown.js';

export function trendHtml(r: SalesTrendReport): string {
  const title = `Weekly sales trend ${r.first_week} to ${r.last_week}`;
  const sections = trendCurrencies(r).map((currency) => {
    const rows = r.rows.filter((row) => row.currency === currency);
    const id = htmlId('trend', currency);
    const chart = lineChart({
      id: `${id}-chart`,
      title: `Net revenue per week, ${currency}`,
      description: `A point for each ISO week, ${r.first_week} to ${r.last_week}: its net revenue in ${currency}. The table beside it holds the figures.`,
      labels: rows.map((row) => row.week.slice(5)),
      series: [{ name: 'Net revenue', values: rows.map((row) => row.revenue) }],
      format: (value) => `${formatMoney(value)} ${currency}`,
      unit: currency,
    });
    const table = htmlTable({
      id,
      caption: `Week by week, ${currency}`,
      columns: [
        { title: 'Week' },
        { title: 'Monday' },
        { title: 'Revenue', numeric: true },
        { title: 'Net orders', numeric: true },
        { title: 'Avg. order value', numeric: true },
        { title: 'Change', numeric: true },
      ],
      rows: rows.map((row) => [
        row.week,
        row.start_date,
        formatMoney(row.revenue),
        formatNumber(row.order_count),
        formatMoney(row.avg_order_value),
        signed(row.change_pct, ' %'),
      ]),
    });
    return markup`<section>
<h2>${currency}</h2>
<div class="pair"><figure>${chart}</figure>${table}</div>
</section>`;
  });
  const partial = r.partial ? ' (the last week is still running)' : '';
  const body = markup`<header>
<h1>${title}</h1>
<p class="meta">${r.weeks} ISO weeks, ${r.start_date} to ${r.end_date}${partial}, time zone ${r.time_zone}.</p>
${htmlNotes(r)}</header>
${sections.length > 0 ? sections : markup`<p class="lead">No sales in these weeks.</p>`}
<footer><p class="note">Revenue and net orders leave out cancelled and refunded orders (the weekly report's orders placed count them); the change is against the week before; money is never added across currencies. Data as of ${r.data_as_of}.</p></footer>`;
  return htmlPage({ title, body });
}
