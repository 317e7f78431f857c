/**
 * What changed in a report's figures between two editions of the same period: a late refund, an order
 * cancelled after the week was sent. Every number of an answer is a figure, named by where it stands
 * (a top-level field, or a table's row by its text fields and the column), so the engine compares any
 * pack's report without knowing its shape. Text (the summary, notes) and the answer's own time stamps
 * are not figures: they differ on every run and restate nothing.
 */
import { utcMinute } from '../lib/local-day.js';
import { formatNumber } from '../render/figures.js';

export interface FigureChange {
  /** Where the figure stands: `metrics: order_count`, `daily: 2025-06-10 EUR revenue`. */
  readonly figure: string;
  readonly was: number | null;
  readonly now: number | null;
}

/** Text fields that say something about a row rather than which row it is. */
const NOT_A_KEY = /(^|_)(note|summary|label|rule|unit)$/;

/** Every figure of an answer by its name; a figure that is missing (a row gone) is not in the map. */
export function figuresOf(answer: Record<string, unknown>): Map<string, number | null> {
  const figures = new Map<string, number | null>();
  for (const [field, value] of Object.entries(answer)) {
    if (typeof value === 'number') figures.set(field, value);
    if (!Array.isArray(value)) continue;
    const rows = value.filter((row): row is Record<string, unknown> => typeof row === 'object' && row !== null);
    // A column is a figure when it holds a number in some row: a null there is a figure missing, a null
    // in a text column (a metric without a currency) is not.
    const numeric = new Set(rows.flatMap((row) => Object.keys(row).filter((name) => typeof row[name] === 'number')));
    for (const row of rows) {
      const entries = Object.entries(row);
      const key = entries
        .filter(([name, v]) => typeof v === 'string' && !NOT_A_KEY.test(name))
        .map(([, v]) => v as string)
        .join(' ');
      for (const [name, v] of entries) {
        if (!numeric.has(name) || (typeof v !== 'number' && v !== null)) continue;
        const label = `${field}: ${[key, name === 'value' ? '' : name].filter((part) => part !== '').join(' ')}`;
        figures.set(label, v as number | null);
      }
    }
  }
  return figures;
}

/** The figures that differ between an earlier answer and a later one, in the later answer's order. */
export function restatedFigures(was: Record<string, unknown>, now: Record<string, unknown>): FigureChange[] {
  const before = figuresOf(was);
  const after = figuresOf(now);
  const changes: FigureChange[] = [];
  for (const [figure, value] of after) {
    const old = before.has(figure) ? before.get(figure)! : null;
    if (old !== value) changes.push({ figure, was: old, now: value });
  }
  for (const [figure, value] of before) {
    if (!after.has(figure) && value !== null) changes.push({ figure, was: value, now: null });
  }
  return changes;
}

/** How many changes the sentence names; the answer's `restated.changes` holds them all. */
const NAMED = 4;

const shown = (value: number | null): string => (value === null ? '–' : formatNumber(value));

/**
 * The sentence every format shows: "Restated since the edition of 2025-06-16 08:00 UTC: metrics:
 * order_count 177 → 176; … and 9 more figures."
 */
export function restatementSentence(sinceIso: string, changes: readonly FigureChange[]): string {
  const named = changes
    .slice(0, NAMED)
    .map((c) => `${c.figure} ${shown(c.was)} → ${shown(c.now)}`)
    .join('; ');
  const more = changes.length > NAMED ? `; and ${changes.length - NAMED} more figures` : '';
  return `Restated since the edition of ${utcMinute(Date.parse(sinceIso))}: ${named}${more}.`;
}
