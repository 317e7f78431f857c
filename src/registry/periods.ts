import { localToday, resolvePeriod, type Period } from '../lib/periods.js';
import { cutRunning } from '../lib/running.js';

/**
 * A validated call's arguments with its `period`, if any, turned into the days it stands for on the
 * day `nowMs` falls on in the reporting time zone; the period stays, for the result to echo. A range
 * still running at `nowMs` gets `until`, the instant it is cut at.
 */
export function resolvePeriods(args: unknown, timeZone: string, nowMs: number): unknown {
  if (typeof args !== 'object' || args === null) return args;
  const { period } = args as { period?: Period };
  const days = period === undefined ? args : { ...args, ...resolvePeriod(period, localToday(timeZone, nowMs)) };
  // A range that has not ended is cut at the current minute (src/lib/running.ts).
  return cutRunning(days, timeZone, nowMs);
}
