/**
 * A `query_metrics` answer beside the same call's answer for the comparison range: every row and every
 * total with its prior figure and its change (`<metric>_prior`, `<metric>_change_pct`).
 */
import { MAX_ROWS } from '../lib/arguments.js';
import { changeOf, pairGroups } from '../lib/comparison.js';
import type { ComparisonEcho } from '../registry/types.js';
import { TIME_GRAINS } from './declarations.js';

type Figures = Record<string, string | number | boolean | null>;

const DAY_MS = 86_400_000;
/**
 * Where a row sits, dimension by dimension, for pairing with the other range's rows: its value for an
 * attribute or cyclic dimension, and for a time bucket its place from the range's first bucket (days,
 * weeks, months or quarters in; hours by their order in the answer).
 */
function placeInRange(
  dims: readonly string[],
  current: Record<string, unknown>,
  prior: Record<string, unknown>,
): (dim: string, row: Figures, range: Record<string, unknown>) => unknown {
  const hours = new Map<Record<string, unknown>, string[]>();
  for (const r of [current, prior]) {
    hours.set(r, [...new Set(((r.rows as Figures[]) ?? []).map((x) => String(x.hour)))].sort());
  }
  return (dim, row, range) => {
    const value = row[dim];
    const start = String(range.start_date);
    const days = (label: string): number => Math.round((Date.parse(label) - Date.parse(start)) / DAY_MS);
    const months = (label: string): number =>
      Number(label.slice(0, 4)) * 12 +
      Number(label.slice(5, 7)) -
      (Number(start.slice(0, 4)) * 12 + Number(start.slice(5, 7)));
    switch (dim) {
      case 'day':
        return days(String(value));
      case 'week':
        return Math.floor((days(String(value)) + 6) / 7);
      case 'month':
        return months(String(value));
      case 'quarter':
        return Math.floor(months(String(value)) / 3);
      case 'hour':
        return hours.get(range)!.indexOf(String(value));
      default:
        return dims.includes(dim) ? value : undefined;
    }
  };
}

/**
 * Every row with its prior figure and change, as every total: a row pairs with the prior row of the
 * same attributes and currency, and of the same place in the range for a time bucket (the third day,
 * the second week). A group of the prior range missing now fell to zero and is listed with zeros,
 * unless the current answer was cut (it may lie past the cut). A group missing from a complete prior
 * answer had zero then; from a cut one, its prior figure is unknown (null).
 */
export function compareAnswers(
  current: Record<string, unknown>,
  prior: Record<string, unknown>,
  comparison: ComparisonEcho,
  unitOf: (metric: string) => string,
): Record<string, unknown> {
  const metrics = Object.keys((current.totals as Figures[])[0] ?? (prior.totals as Figures[])[0] ?? {}).filter(
    (k) => k !== 'currency',
  );
  const zero = (m: string): number | null => (unitOf(m) === 'count' || unitOf(m) === 'money' ? 0 : null);
  const paired = (
    now: Figures | undefined,
    before: Figures | undefined,
    priorKnown: boolean,
    keys: Figures,
  ): Figures => {
    const t: Figures = { ...keys, ...(now ?? Object.fromEntries(metrics.map((m) => [m, zero(m)]))) };
    for (const m of metrics) {
      const value = (before?.[m] ?? (before || !priorKnown ? null : zero(m))) as number | null;
      t[`${m}_prior`] = value;
      t[`${m}_change_pct`] = changeOf((t[m] ?? null) as number | null, value).change_pct;
    }
    return t;
  };
  const totalKey = (t: Figures): string => String(t.currency ?? '');
  const totals = pairGroups(current.totals as Figures[], prior.totals as Figures[], totalKey).map(({ now, before }) => {
    const currency = (now ?? before)!.currency;
    const t = paired(now, before, true, currency ? { currency } : {});
    // The totals keep their shape: the prior figure under the metric's name, and its change.
    return Object.fromEntries(
      Object.entries(t)
        .filter(([k]) => !metrics.includes(k))
        .map(([k, v]) => [k.endsWith('_prior') ? k.slice(0, -'_prior'.length) : k, v]),
    );
  });
  totals.sort((a, b) => totalKey(a).localeCompare(totalKey(b)));
  const rows = current.rows as Figures[] | undefined;
  if (rows === undefined) return { ...current, comparison: { ...comparison, totals } };
  const dims = Object.keys(rows[0] ?? (prior.rows as Figures[])[0] ?? {}).filter(
    (k) => !metrics.includes(k) && !['currency', 'partial', 'first_day', 'last_day', 'until'].includes(k),
  );
  const placeOf = placeInRange(dims, current, prior);
  const key = (r: Figures, range: Record<string, unknown>): string =>
    JSON.stringify([...dims.map((d) => placeOf(d, r, range)), r.currency ?? null]);
  const before = new Map((prior.rows as Figures[]).map((r) => [key(r, prior), r]));
  const out: Figures[] = [];
  for (const r of rows) {
    const k = key(r, current);
    out.push(paired(r, before.get(k), prior.truncated !== true, {}));
    before.delete(k);
  }
  if (current.truncated !== true) {
    for (const r of before.values()) {
      if (out.length >= MAX_ROWS) break;
      const keys = Object.fromEntries(
        Object.entries(r).filter(
          ([k]) => !metrics.includes(k) && !['partial', 'first_day', 'last_day', 'until'].includes(k),
        ),
      );
      // A time bucket that had figures then but none now is not a group that fell: it is another date.
      if (dims.some((d) => (TIME_GRAINS as readonly string[]).includes(d))) continue;
      out.push(paired(undefined, r, true, keys));
    }
  }
  return { ...current, rows: out, comparison: { ...comparison, totals } };
}
