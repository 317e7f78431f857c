/**
 * Ranges that have not ended. A range whose last day is today (or later) in the reporting time zone
 * is cut at the current minute: its figures cover its first instant up to then, never rows stamped
 * later (data may hold them), and the answer says so (partial, until). A range it is compared with
 * is cut at the same local time of day (src/lib/comparison.ts, comparisonCut), so that both sides
 * cover the same elapsed part of their days.
 */
import { z } from 'zod';
import { resolveRange, type DateRangeInput } from './date-range.js';
import { dayStart, instantOfWallTime, isoInZone, isoUtc, offsetAt } from './local-day.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * Validated arguments with `until` set when their range has not ended at `nowMs`: the start of the
 * current minute, or the range's first instant for a range that has not begun. Arguments without a
 * range, or with one that has ended, come back as they are.
 */
export function cutRunning<Args>(args: Args, timeZone: string, nowMs: number): Args {
  const value = args as DateRangeInput;
  if (typeof value !== 'object' || value === null) return args;
  if (typeof value.start_date !== 'string' || typeof value.end_date !== 'string') return args;
  const range = resolveRange({ start_date: value.start_date, end_date: value.end_date });
  const cut = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS;
  if (dayStart(range.endExclusive, timeZone).ms <= cut) return args;
  return { ...args, until: isoUtc(Math.max(cut, dayStart(range.startDate, timeZone).ms)) };
}

/**
 * Arguments whose range is still running (`until` set), cut where the data stop when that is earlier:
 * at the end of the minute that holds `dataThroughMs`, the newest data (so every row up to it counts,
 * and the comparison range is cut at the same local time of day); never before the range's first
 * instant. A feed that stopped yesterday evening is then compared with the same days and hours of the
 * other range, not with the hours it has not loaded yet.
 */
export function cutAtDataThrough<Args>(args: Args, dataThroughMs: number, timeZone: string): Args {
  const value = args as DateRangeInput;
  if (typeof value.until !== 'string' || typeof value.start_date !== 'string') return args;
  const end = Math.floor(dataThroughMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  if (end >= Date.parse(value.until)) return args;
  return { ...args, until: isoUtc(Math.max(end, dayStart(value.start_date, timeZone).ms)) };
}

/**
 * Whether a range covers only part of its days, and up to when: in every range and comparison echo,
 * and only then (`partial: true`): a range that has ended says nothing, as every answer's bytes are a
 * model's to read.
 */
export const cutFields = {
  partial: z.boolean().optional(),
  until: z.string().optional(),
};

/** What a result says about the end of what it covers: partial, and the instant it covers up to. */
export interface CutEcho {
  readonly partial?: true;
  readonly until?: string;
}

/** The echo of a range's cut, `until` in the zone's offset (ISO 8601; UTC when the offset has seconds). */
export function cutEcho(value: DateRangeInput, timeZone: string): CutEcho {
  return value.until === undefined ? {} : { partial: true, until: isoInZone(Date.parse(value.until), timeZone) };
}

/**
 * The instant at the same local time of day as `untilMs`, on the day `shiftDay` maps its local day
 * to, in that day's own offset; never before that day's start (where midnight is skipped).
 */
export function sameTimeOfDay(untilMs: number, timeZone: string, shiftDay: (day: string) => string): number {
  const wall = untilMs + offsetAt(timeZone, untilMs);
  const day = new Date(Math.floor(wall / DAY_MS) * DAY_MS).toISOString().slice(0, 10);
  const timeOfDay = wall - Math.floor(wall / DAY_MS) * DAY_MS;
  const other = shiftDay(day);
  const start = dayStart(other, timeZone).ms;
  return Math.max(start, instantOfWallTime(Date.parse(`${other}T00:00:00Z`) + timeOfDay, timeZone));
}
