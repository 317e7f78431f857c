/**
 * Comparisons with an earlier range (`compare_to`): which range a result is compared with, and how a
 * change is stated. The earlier range is queried on its own, so every statement still covers at most
 * the 90 days a range may span.
 */
import { z } from 'zod';
import { oneOf } from './arguments.js';
import { shiftYears } from './calendar.js';
import { localToday } from './periods.js';
import { cutFields, sameTimeOfDay } from './running.js';

export const COMPARISONS = ['previous_period', 'previous_year'] as const;
export type Comparison = (typeof COMPARISONS)[number];

/** The optional argument, spread into a tool's input. */
export const compareToField = {
  // What each comparison means the server's instructions say once, for every tool that takes it.
  compare_to: oneOf(COMPARISONS).optional(),
};

const DAY_MS = 86_400_000;
const ms = (day: string): number => Date.parse(`${day}T00:00:00Z`);
const day = (t: number): string => new Date(t).toISOString().slice(0, 10);

/** True when a range is whole ISO weeks: it starts on a Monday and spans a multiple of 7 days. */
export function isWholeWeeks(startDate: string, endDate: string): boolean {
  const start = ms(startDate);
  const days = Math.round((ms(endDate) - start) / DAY_MS) + 1;
  return new Date(start).getUTCDay() === 1 && days % 7 === 0;
}

/** The day of the comparison range that stands where `d` stands in the range. */
function dayShift(startDate: string, endDate: string, compareTo: Comparison): (d: string) => string {
  if (compareTo === 'previous_period') {
    const length = ms(endDate) - ms(startDate) + DAY_MS;
    return (d) => day(ms(d) - length);
  }
  if (isWholeWeeks(startDate, endDate)) return (d) => day(ms(d) - 364 * DAY_MS);
  // The same calendar day a year earlier; 29 February becomes 28 February.
  return (d) => shiftYears(d, -1);
}

/** The range a result is compared with (inclusive days, YYYY-MM-DD). */
export function comparisonRange(
  startDate: string,
  endDate: string,
  compareTo: Comparison,
): { start_date: string; end_date: string } {
  const shift = dayShift(startDate, endDate, compareTo);
  return { start_date: shift(startDate), end_date: shift(endDate) };
}

/**
 * Where the comparison range of a range cut at `untilMs` (one that has not ended) is cut: at the same
 * local hour and minute, on the day that stands where the cut's day stands, in that day's own offset
 * (src/lib/running.ts). Both sides then cover the same part of their days.
 */
export function comparisonCut(
  startDate: string,
  endDate: string,
  compareTo: Comparison,
  untilMs: number,
  timeZone: string,
): number {
  return sameTimeOfDay(untilMs, timeZone, dayShift(startDate, endDate, compareTo));
}

/** A group (a region, a category) in a current result and a prior one: either side may lack it. */
export interface PairedGroup<Row> {
  readonly now?: Row;
  readonly before?: Row;
}

/**
 * Every group of either side, matched by key: the current rows in their order, then the groups only
 * the prior side has, in its order. A group that sold before and nothing now is not lost, so its fall
 * to 0 shows (a caller that lists only the current rows hides exactly the groups that fell most).
 */
export function pairGroups<Row>(
  current: readonly Row[],
  prior: readonly Row[],
  keyOf: (row: Row) => string,
): PairedGroup<Row>[] {
  const before = new Map(prior.map((r) => [keyOf(r), r]));
  const paired: PairedGroup<Row>[] = current.map((r) => {
    const match = before.get(keyOf(r));
    before.delete(keyOf(r));
    return match === undefined ? { now: r } : { now: r, before: match };
  });
  return [...paired, ...[...before.values()].map((r) => ({ before: r }))];
}

/**
 * Why a range still running cannot be compared on equal elapsed time, or undefined when it can: a year
 * earlier has no 29 February, so a running range that holds one before its cut would be held to a
 * range a day shorter. Such a comparison is refused rather than answered with figures that mislead.
 */
export function unequalElapsed(
  startDate: string,
  endDate: string,
  compareTo: Comparison,
  untilMs: number,
  timeZone: string,
): string | undefined {
  const shift = dayShift(startDate, endDate, compareTo);
  const cutDay = localToday(timeZone, untilMs);
  if (cutDay < startDate) return undefined;
  const span = (from: string, to: string): number => Math.round((ms(to) - ms(from)) / DAY_MS);
  if (span(startDate, cutDay) === span(shift(startDate), shift(cutDay))) return undefined;
  return `the range is still running and holds 29 February, which the year before does not have, so the same days a year earlier would be one day fewer; use previous_period, or a range of whole ISO weeks (52 weeks earlier), or ask again once the range has ended`;
}

export interface Change {
  /** (current − prior) / prior × 100, rounded to one decimal; null when it has no meaning. */
  readonly change_pct: number | null;
  /** Why change_pct is null; absent when it is a number. */
  readonly change_note?: string;
}

/** The change from a prior value to a current one, in percent; null, with the reason, when prior is 0 or absent. */
export function changeOf(current: number | null, prior: number | null): Change {
  if (current === null) return { change_pct: null, change_note: 'no value in the current range' };
  if (prior === null) return { change_pct: null, change_note: 'no value in the comparison range' };
  if (prior === 0) {
    return {
      change_pct: null,
      change_note:
        current === 0 ? 'zero in both ranges' : 'the comparison range had zero, so no percentage can be given',
    };
  }
  return { change_pct: Math.round(((current - prior) / Math.abs(prior)) * 1000) / 10 };
}

/** The output fields of a change: change_note is the reason change_pct is null, in words. */
export const changeFields = {
  change_pct: z.number().nullable(),
  change_note: z.string().optional(),
};

/** The comparison range a result echoes. */
export const comparisonEcho = z.object({
  compare_to: z.enum(COMPARISONS),
  start_date: z.string(),
  end_date: z.string(),
  ...cutFields,
});
