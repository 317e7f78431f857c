/**
 * How the weekly report writes its metrics for a person, in Markdown and HTML alike: each metric's name,
 * its value in its own kind of figure (money, a rate, a count), its change with its unit, and the
 * headline's words. One module, so that the two pages cannot say a figure two ways.
 */
import { formatMoney, formatNumber, formatRate, signed } from '../src/render/figures.js';
import { direction, metricKind, type WeeklySalesReport } from './weekly-shape.js';

type Metric = WeeklySalesReport['metrics'][number];

/** What each figure of the report is called where a person reads it. */
export const METRIC_NAMES: Readonly<Record<string, string>> = {
  revenue: 'Net revenue',
  order_count: 'Orders placed',
  avg_order_value: 'Average order value',
  cancellation_rate: 'Cancellation rate (%)',
  refund_rate: 'Refund rate (%)',
};

/** A change's unit: percent for money and counts, percentage points for rates. */
export const changeUnit = (m: Metric): string => (m.change_unit === 'percent' ? ' %' : ' pp');

/** One of the metric's values (this week's, the week before's, a year before's) as its kind of figure is written. */
export const metricFigure = (m: Metric, v: number | null): string =>
  ({ money: formatMoney, rate: formatRate, count: formatNumber })[metricKind(m)](v);

/** A headline: the metric's name, its value, and its change against the week before called better or worse. */
export function headlineOf(m: Metric): {
  readonly label: string;
  readonly value: string;
  readonly change: string;
  readonly way: ReturnType<typeof direction>;
} {
  const way = direction(m);
  const arrow = way === 'better' ? '▲ ' : way === 'worse' ? '▼ ' : '';
  const verdict = way && way !== 'unchanged' ? ` (${way})` : '';
  return {
    label: `${METRIC_NAMES[m.metric] ?? m.metric}${m.currency ? `, ${m.currency}` : ''}`,
    value: metricFigure(m, m.value),
    change: `${arrow}${signed(m.change_vs_last_week, changeUnit(m))} against the week before${verdict}`,
    way,
  };
}
