/**
 * Notable days: a day whose revenue is far from what the same weekday usually brings. "Usually" is the
 * median of that weekday over the weeks before, and "far" is measured in a robust unit, so that one
 * odd week in the baseline neither hides a notable day nor makes ordinary ones look notable (a mean
 * and standard deviation would be dragged by the very outliers they are meant to find).
 */

/** The threshold of Iglewicz and Hoaglin for the modified z-score. */
const THRESHOLD = 3.5;
/** MAD × 1/0.6745 estimates the standard deviation of normal data. */
const MAD_SCALE = 0.6745;
/** Mean absolute deviation × 1.253314 estimates it too; the fallback when more than half the baseline is equal. */
const MEAN_AD_SCALE = 1.253314;

export const NOTABLE_RULE =
  'Modified z-score (Iglewicz and Hoaglin): z = 0.6745 × (revenue − median) / MAD, where median and MAD (median absolute deviation) are taken over the same weekday of the 8 weeks before, in the same currency, a day without sales counting as 0; a day is notable when |z| > 3.5. When MAD is 0 (more than half of those days equal), the mean absolute deviation × 1.253314 takes its place; when that is 0 too (all equal), a day is notable when its revenue differs from theirs, with robust_z null.';

const DAY_MS = 86_400_000;
const shift = (day: string, days: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface NotableDay {
  readonly date: string;
  readonly currency: string;
  readonly revenue: number;
  readonly baseline_median: number;
  readonly robust_z: number | null;
  readonly direction: 'high' | 'low';
}

/** The notable days of a range, per currency, given each day's revenue (0 for a day without sales). */
export function notableDays(
  range: { start_date: string; end_date: string },
  currencies: readonly string[],
  revenueOn: (day: string, currency: string) => number,
  weeks: number,
): NotableDay[] {
  const found: NotableDay[] = [];
  for (let day = range.start_date; day <= range.end_date; day = shift(day, 1)) {
    for (const currency of currencies) {
      const revenue = revenueOn(day, currency);
      const baseline = Array.from({ length: weeks }, (_, k) => revenueOn(shift(day, -7 * (k + 1)), currency));
      const center = median(baseline);
      const deviations = baseline.map((v) => Math.abs(v - center));
      const mad = median(deviations);
      const scale =
        mad > 0 ? mad / MAD_SCALE : (deviations.reduce((sum, d) => sum + d, 0) / deviations.length) * MEAN_AD_SCALE;
      const z = scale > 0 ? (revenue - center) / scale : null;
      const notable = z === null ? revenue !== center : Math.abs(z) > THRESHOLD;
      if (!notable) continue;
      found.push({
        date: day,
        currency,
        revenue,
        baseline_median: Math.round(center * 100) / 100,
        robust_z: z === null ? null : Math.round(z * 100) / 100,
        direction: revenue > center ? 'high' : 'low',
      });
    }
  }
  return found;
}
