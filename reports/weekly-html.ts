/**
 * The weekly sales report as one HTML page, what `querygate report weekly --format html` writes: the
 * figures, and for each currency its days (bars of this week beside the week before) and its regions
 * (bars of each region, this week and the week before), each chart with its table beside it; then the
 * top products, categories and notable days. Every figure is the JSON report's own, only laid out.
 */
import { formatMoney, formatNumber, formatRate, signed } from '../src/render/figures.js';
import { htmlId, htmlNotes, htmlPage, htmlTable, markup, type Markup } from '../src/render/html.js';
import { barChart } from '../src/render/svg.js';
import { changeUnit, headlineOf, METRIC_NAMES, metricFigure } from './weekly-figures.js';
import type { WeeklySalesReport } from './weekly-shape.js';

type Report = WeeklySalesReport;

/**
 * The headline figures: each metric this week, its change against the week before, and whether that is
 * better or worse for the business, said in words and in colour (green or red, never colour alone).
 */
function headlines(r: Report): Markup {
  const cards = r.metrics.map((m) => {
    const { label, value, change, way } = headlineOf(m);
    return markup`<div class="headline${way ? ` ${way}` : ''}">
<p class="label">${label}</p>
<p class="value">${value}</p>
<p class="change">${change}</p>
</div>
`;
  });
  return markup`<div class="headlines">
${cards}</div>`;
}

function figures(r: Report): Markup {
  return htmlTable({
    id: 'figures',
    caption: `${r.week} against the week before and 52 weeks before`,
    columns: [
      { title: 'Figure' },
      { title: 'Currency' },
      { title: 'This week', numeric: true },
      { title: 'Week before', numeric: true },
      { title: 'Change', numeric: true },
      { title: 'Year before', numeric: true },
      { title: 'Change', numeric: true },
    ],
    rows: r.metrics.map((m) => [
      METRIC_NAMES[m.metric] ?? m.metric,
      m.currency,
      metricFigure(m, m.value),
      metricFigure(m, m.last_week),
      signed(m.change_vs_last_week, changeUnit(m)),
      metricFigure(m, m.year_ago),
      signed(m.change_vs_year_ago, changeUnit(m)),
    ]),
  });
}

/** One group's net revenue this week against the same days the week before. */
interface Compared {
  /** As the table writes it, and (short) as the chart does. */
  readonly label: string;
  readonly short: string;
  readonly revenue: number;
  readonly last: number;
  readonly change: number | null;
}

/** A section of one currency: a pair of bars for each group, and the table of their figures beside it. */
function compared(
  r: Report,
  currency: string,
  what: { readonly id: string; readonly title: string; readonly group: string; readonly horizontal: boolean },
  rows: readonly Compared[],
): Markup {
  const id = htmlId(what.id, currency);
  const title = `${what.title}, ${currency}`;
  const chart = barChart({
    id: `${id}-chart`,
    title,
    description: `A pair of bars for each ${what.group.toLowerCase()}: its net revenue in ${currency} in ${r.week} (${r.start_date} to ${r.through_date}), and in the same days of the week before. The table beside it holds the figures.`,
    labels: rows.map((row) => row.short),
    series: [
      { name: r.week, values: rows.map((row) => row.revenue) },
      { name: 'Week before', values: rows.map((row) => row.last) },
    ],
    format: (value) => `${formatMoney(value)} ${currency}`,
    unit: currency,
    horizontal: what.horizontal,
  });
  const table = htmlTable({
    id,
    caption: title,
    columns: [
      { title: what.group },
      { title: 'Revenue', numeric: true },
      { title: 'Week before', numeric: true },
      { title: 'Change', numeric: true },
    ],
    rows: rows.map((row) => [row.label, formatMoney(row.revenue), formatMoney(row.last), signed(row.change, ' %')]),
  });
  return markup`<section>
<h2>${title}</h2>
<div class="pair"><figure>${chart}</figure>${table}</div>
</section>`;
}

const days = (r: Report, currency: string): Markup =>
  compared(
    r,
    currency,
    { id: 'daily', title: 'Net revenue by day', group: 'Day', horizontal: false },
    r.daily
      .filter((d) => d.currency === currency)
      .map((d) => ({
        label: `${d.weekday.slice(0, 3)} ${d.date}`,
        short: `${d.weekday.slice(0, 3)} ${d.date.slice(5)}`,
        revenue: d.revenue,
        last: d.last_week_revenue,
        change: d.change_pct,
      })),
  );

const regions = (r: Report, currency: string): Markup =>
  compared(
    r,
    currency,
    { id: 'regions', title: 'Net revenue by region', group: 'Region', horizontal: true },
    r.regions
      .filter((s) => s.currency === currency)
      .map((s) => ({
        label: s.region,
        short: s.region,
        revenue: s.revenue,
        last: s.last_week_revenue,
        change: s.change_pct,
      })),
  );

const topProducts = (r: Report): Markup =>
  htmlTable({
    id: 'top-products',
    caption: 'The best products of each currency by net revenue',
    columns: [
      { title: 'Rank', numeric: true },
      { title: 'Product' },
      { title: 'SKU' },
      { title: 'Category' },
      { title: 'Currency' },
      { title: 'Revenue', numeric: true },
      { title: 'Units', numeric: true },
      { title: 'Rank the week before', numeric: true },
    ],
    rows: r.top_products.map((p) => [
      p.rank,
      p.name,
      p.sku,
      p.category,
      p.currency,
      formatMoney(p.revenue),
      formatNumber(p.units),
      p.rank_last_week,
    ]),
  });

const categories = (r: Report): Markup =>
  htmlTable({
    id: 'categories',
    caption: 'Net revenue by category',
    columns: [
      { title: 'Category' },
      { title: 'Currency' },
      { title: 'Revenue', numeric: true },
      { title: 'Week before', numeric: true },
      { title: 'Change', numeric: true },
    ],
    rows: r.categories.map((s) => [
      s.category,
      s.currency,
      formatMoney(s.revenue),
      formatMoney(s.last_week_revenue),
      signed(s.change_pct, ' %'),
    ]),
  });

const notableDays = (r: Report): Markup =>
  htmlTable({
    id: 'notable-days',
    caption: 'Days whose revenue is far from the same weekday of the 8 weeks before',
    columns: [
      { title: 'Day' },
      { title: 'Currency' },
      { title: 'Revenue', numeric: true },
      { title: 'Usual (median)', numeric: true },
      { title: 'Robust z', numeric: true },
      { title: 'Direction' },
    ],
    rows: r.notable_days.map((d) => [
      `${d.weekday} ${d.date}`,
      d.currency,
      formatMoney(d.revenue),
      formatMoney(d.baseline_median),
      formatRate(d.robust_z),
      d.direction,
    ]),
  });

export function weeklyHtml(r: Report): string {
  const currencies = [...new Set([...r.daily, ...r.regions].map((row) => row.currency))].sort();
  const partial = r.partial ? ` (partial: through ${r.through_date})` : '';
  const body = markup`<header>
<h1>Weekly sales report ${r.week}</h1>
<p class="meta">${r.start_date} to ${r.end_date}${partial}, time zone ${r.time_zone}. Compared with the same days of the week before (${r.last_week.start_date} to ${r.last_week.end_date}) and 52 weeks before (${r.year_ago.start_date} to ${r.year_ago.end_date}).</p>
${htmlNotes(r)}<p class="lead">${r.summary}</p>
${headlines(r)}
</header>
<section>
<h2>Figures</h2>
${figures(r)}
</section>
${currencies.map((c) => days(r, c))}
${currencies.map((c) => regions(r, c))}
<section>
<h2>Top products</h2>
${topProducts(r)}
</section>
<section>
<h2>By category</h2>
${categories(r)}
</section>
<section>
<h2>Notable days</h2>
${notableDays(r)}
<p class="note">${r.notable_rule}</p>
</section>
<footer><p class="note">Revenue is net of cancelled and refunded orders; orders placed count every order, cancelled and refunded ones too (the trend's net orders leave them out); money is never added across currencies. Data as of ${r.data_as_of}.</p></footer>`;
  return htmlPage({ title: `Weekly sales report ${r.week}`, body });
}
