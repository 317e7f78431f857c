/**
 * Charts as inline SVG, drawn here from the figures: nothing to load, nothing to run. Each is an image
 * with a title and a description for a screen reader (role="img"), each bar or point carries its
 * figure in a <title>, and the page puts the same figures in a table beside it. One chart shows one
 * unit: a renderer draws money of each currency in a chart of its own.
 */
import { markup, type Markup } from './html.js';

export interface ChartSeries {
  readonly name: string;
  /** One value per label; null leaves a gap. */
  readonly values: readonly (number | null)[];
}

export interface Chart {
  /** Unique in the page: the chart's title and description are named by it. */
  readonly id: string;
  readonly title: string;
  readonly description: string;
  readonly labels: readonly string[];
  readonly series: readonly ChartSeries[];
  /** How a value is written where the chart shows it exactly (a bar's or point's title). */
  readonly format: (value: number) => string;
  /** What the value axis counts (a currency), written at the chart's top right: "in EUR". */
  readonly unit?: string;
}

const WIDTH = 640;
const HEIGHT = 300;
const MARGIN = { top: 34, right: 16, bottom: 34, left: 60 } as const;
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });
const r1 = (n: number): number => Math.round(n * 10) / 10;

/** Round steps (1, 2 or 5 times a power of ten) from below the lowest value to above the highest, 0 among them. */
export function niceTicks(values: readonly number[], count = 5): number[] {
  const lo = Math.min(0, ...values);
  const hi = Math.max(0, ...values);
  if (lo === hi) return [0, 1];
  const rough = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough)!;
  const ticks: number[] = [];
  for (let t = Math.floor(lo / step) * step; t <= Math.ceil(hi / step) * step + step / 2; t += step) {
    ticks.push(Number(t.toPrecision(12)));
  }
  return ticks;
}

/** The value axis: its ticks, and where a value falls between `from` (the lowest tick) and `to`. */
function valueScale(chart: Chart, from: number, to: number): { ticks: number[]; at: (v: number) => number } {
  const ticks = niceTicks(chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null)));
  const [lo, hi] = [ticks[0]!, ticks.at(-1)!];
  return { ticks, at: (v) => r1(from + ((to - from) * (v - lo)) / (hi - lo)) };
}

/** The chart's frame: the svg element with its title, description and legend around what is drawn. */
function frame(chart: Chart, height: number, drawn: Markup): Markup {
  let x = MARGIN.left;
  const legend = chart.series.map((s, k) => {
    const item = markup`<g class="series-${k}"><rect class="swatch" x="${x}" y="8" width="12" height="12" rx="2"></rect><text class="legend" x="${x + 17}" y="18">${s.name}</text></g>`;
    x += 30 + s.name.length * 7;
    return item;
  });
  const unit = chart.unit
    ? markup`<text class="unit" x="${WIDTH - MARGIN.right}" y="18" text-anchor="end">in ${chart.unit}</text>`
    : '';
  return markup`<svg class="chart" id="${chart.id}" role="img" viewBox="0 0 ${WIDTH} ${height}" aria-labelledby="${chart.id}-title ${chart.id}-desc">
<title id="${chart.id}-title">${chart.title}</title>
<desc id="${chart.id}-desc">${chart.description}</desc>
${legend}${unit}
${drawn}
</svg>`;
}

/** A label cut to what fits; it stands whole in the bar's title and the table. */
const fit = (label: string, room: number): string => (label.length > room ? `${label.slice(0, room - 1)}…` : label);

/** Lines across the chart at the value ticks, labelled on the left. */
function valueGrid(ticks: readonly number[], at: (v: number) => number): Markup {
  const lines = ticks.map(
    (t) =>
      markup`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${at(t)}" y2="${at(t)}"></line><text x="${MARGIN.left - 8}" y="${at(t) + 4}" text-anchor="end">${compact.format(t)}</text>`,
  );
  return markup`<g class="grid">${lines}</g><line class="zero" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${at(0)}" y2="${at(0)}"></line>`;
}

/**
 * Bars grouped by label, one per series: upright for a run of days, or lying down (`horizontal`) for
 * named groups whose names need room.
 */
export function barChart(chart: Chart & { readonly horizontal?: boolean }): Markup {
  const per = chart.series.length;
  const tip = (label: string, s: ChartSeries, v: number): string => `${label}, ${s.name}: ${chart.format(v)}`;
  if (chart.horizontal) {
    const left = 170;
    const band = 10 + 16 * per;
    const height = MARGIN.top + chart.labels.length * band + MARGIN.bottom;
    const { ticks, at } = valueScale(chart, left, WIDTH - MARGIN.right);
    const grid = ticks.map(
      (t) =>
        markup`<line x1="${at(t)}" x2="${at(t)}" y1="${MARGIN.top}" y2="${height - MARGIN.bottom}"></line><text x="${at(t)}" y="${height - MARGIN.bottom + 16}" text-anchor="middle">${compact.format(t)}</text>`,
    );
    const groups = chart.labels.map((label, i) => {
      const y0 = MARGIN.top + i * band + 5;
      const bars = chart.series.map((s, k) => {
        const v = s.values[i];
        if (v === null || v === undefined) return '';
        const [a, b] = [at(Math.min(0, v)), at(Math.max(0, v))];
        return markup`<rect class="bar series-${k}" x="${a}" y="${y0 + 16 * k}" width="${r1(b - a)}" height="14"><title>${tip(label, s, v)}</title></rect>`;
      });
      return markup`<text x="${left - 8}" y="${r1(y0 + (band - 10) / 2 + 4)}" text-anchor="end">${fit(label, 24)}</text>${bars}`;
    });
    const zero = markup`<line class="zero" x1="${at(0)}" x2="${at(0)}" y1="${MARGIN.top}" y2="${height - MARGIN.bottom}"></line>`;
    return frame(chart, height, markup`<g class="grid">${grid}</g>${zero}${groups}`);
  }
  const band = (WIDTH - MARGIN.left - MARGIN.right) / Math.max(chart.labels.length, 1);
  const width = (band * 0.8) / per;
  const { ticks, at } = valueScale(chart, HEIGHT - MARGIN.bottom, MARGIN.top);
  const groups = chart.labels.map((label, i) => {
    const x0 = MARGIN.left + i * band + band * 0.1;
    const bars = chart.series.map((s, k) => {
      const v = s.values[i];
      if (v === null || v === undefined) return '';
      const [top, bottom] = [at(Math.max(0, v)), at(Math.min(0, v))];
      return markup`<rect class="bar series-${k}" x="${r1(x0 + width * k)}" y="${top}" width="${r1(width)}" height="${r1(bottom - top)}"><title>${tip(label, s, v)}</title></rect>`;
    });
    return markup`<text x="${r1(MARGIN.left + (i + 0.5) * band)}" y="${HEIGHT - MARGIN.bottom + 18}" text-anchor="middle">${fit(label, 12)}</text>${bars}`;
  });
  return frame(chart, HEIGHT, markup`${valueGrid(ticks, at)}${groups}`);
}

/** Below this many units between two points, their labels stand on end (and smaller) so that every one is written. */
const UPRIGHT_SPACING = 30;
/** The room labels standing on end take below the chart. */
const ON_END_ROOM = 30;

/** A line per series through a point per label, every label written under it. */
export function lineChart(chart: Chart): Markup {
  const n = chart.labels.length;
  const span = WIDTH - MARGIN.left - MARGIN.right - 20;
  const x = (i: number): number => r1(MARGIN.left + 10 + (n === 1 ? 0.5 : i / (n - 1)) * span);
  const { ticks, at } = valueScale(chart, HEIGHT - MARGIN.bottom, MARGIN.top);
  const upright = n <= 1 || span / (n - 1) >= UPRIGHT_SPACING;
  const y = HEIGHT - MARGIN.bottom + (upright ? 18 : 10);
  const labels = chart.labels.map((label, i) =>
    upright
      ? markup`<text x="${x(i)}" y="${y}" text-anchor="middle">${fit(label, 12)}</text>`
      : markup`<text class="on-end" x="${x(i)}" y="${y}" text-anchor="end" transform="rotate(-90 ${x(i)} ${y})">${fit(label, 12)}</text>`,
  );
  const lines = chart.series.map((s, k) => {
    let path = '';
    s.values.forEach((v, i) => {
      if (v !== null) path += `${path === '' || s.values[i - 1] === null ? 'M' : 'L'}${x(i)} ${at(v)} `;
    });
    const points = s.values.map((v, i) =>
      v === null
        ? ''
        : markup`<circle class="point" cx="${x(i)}" cy="${at(v)}" r="3.5"><title>${chart.labels[i]}, ${s.name}: ${chart.format(v)}</title></circle>`,
    );
    return markup`<g class="series-${k}"><path class="line" d="${path.trim()}"></path>${points}</g>`;
  });
  return frame(chart, HEIGHT + (upright ? 0 : ON_END_ROOM), markup`${valueGrid(ticks, at)}${labels}${lines}`);
}
