/**
 * The weekly sales report as Markdown: what `querygate://reports/weekly/{week}` reads and what
 * `querygate report weekly --format md` writes. Every figure is the JSON report's own, only laid out.
 */
import { formatMoney, formatNumber, formatRate, signed } from '../src/render/figures.js';
import { markdownNotes, markdownTable as table } from '../src/render/markdown.js';
import { changeUnit, headlineOf, METRIC_NAMES, metricFigure } from './weekly-figures.js';
import type { WeeklySalesReport } from './weekly-shape.js';

type Report = WeeklySalesReport;

/** A segment's net revenue this week and the week before, one row per segment and currency. */
const segments = (
  title: string,
  rows: readonly (Omit<Report['regions'][number], 'region'> & { readonly name: string })[],
): string =>
  table(
    [title, 'Currency', 'Revenue', 'Week before', 'Change'],
    rows.map((s) => [
      s.name,
      s.currency,
      formatMoney(s.revenue),
      formatMoney(s.last_week_revenue),
      signed(s.change_pct, ' %'),
    ]),
  );

export function weeklyMarkdown(r: Report): string {
  const parts = [
    `# Weekly sales report ${r.week}`,
    '',
    `${r.start_date} to ${r.end_date}${r.partial ? ` (partial: through ${r.through_date})` : ''}, time zone ${r.time_zone}.`,
    '',
    ...markdownNotes(r),
    `**${r.summary}**`,
    '',
    ...r.metrics.map((m) => {
      const headline = headlineOf(m);
      return `- ${headline.label}: **${headline.value}**, ${headline.change}`;
    }),
    '',
    `## Figures`,
    '',
    `Compared with the same days of the week before (${r.last_week.start_date} to ${r.last_week.end_date}) and 52 weeks before (${r.year_ago.start_date} to ${r.year_ago.end_date}).`,
    '',
    table(
      ['Figure', 'Currency', 'This week', 'Week before', 'Change', 'Year before', 'Change'],
      r.metrics.map((m) => [
        METRIC_NAMES[m.metric] ?? m.metric,
        m.currency,
        metricFigure(m, m.value),
        metricFigure(m, m.last_week),
        signed(m.change_vs_last_week, changeUnit(m)),
        metricFigure(m, m.year_ago),
        signed(m.change_vs_year_ago, changeUnit(m)),
      ]),
    ),
    `## Revenue by day`,
    '',
    table(
      ['Day', 'Currency', 'Revenue', 'Same day, week before', 'Change'],
      r.daily.map((d) => [
        `${d.weekday} ${d.date}`,
        d.currency,
        formatMoney(d.revenue),
        formatMoney(d.last_week_revenue),
        signed(d.change_pct, ' %'),
      ]),
    ),
    `## Top products`,
    '',
    table(
      ['Rank', 'Product', 'Category', 'Currency', 'Revenue', 'Units', 'Rank the week before'],
      r.top_products.map((p) => [
        p.rank,
        `${p.name} (${p.sku})`,
        p.category,
        p.currency,
        formatMoney(p.revenue),
        formatNumber(p.units),
        p.rank_last_week,
      ]),
    ),
    `## By region`,
    '',
    segments(
      'Region',
      r.regions.map((s) => ({ ...s, name: s.region })),
    ),
    `## By category`,
    '',
    segments(
      'Category',
      r.categories.map((s) => ({ ...s, name: s.category })),
    ),
    `## Notable days`,
    '',
    table(
      ['Day', 'Currency', 'Revenue', 'Usual (median)', 'Robust z', 'Direction'],
      r.notable_days.map((d) => [
        `${d.weekday} ${d.date}`,
        d.currency,
        formatMoney(d.revenue),
        formatMoney(d.baseline_median),
        formatRate(d.robust_z),
        d.direction,
      ]),
    ),
    `_${r.notable_rule}_`,
    '',
    `Revenue is net of cancelled and refunded orders; orders placed count every order, cancelled and refunded ones too (the trend's net orders leave them out); money is never added across currencies. Data as of ${r.data_as_of}.`,
    '',
  ];
  return parts.join('\n');
}
