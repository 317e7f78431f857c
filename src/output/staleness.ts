/**
 * Whether a report's data are fresh: its `data_through` (the pack's high-water mark) against a bound
 * the operator declares (`--stale-after`, or `stale_after` in the configuration file). A stale report
 * is still written, with this sentence in every format, and its run fails as stale.
 */
import { ConfigError } from '../lib/errors.js';
import { describeDuration } from '../lib/durations.js';
import { utcMinute } from '../lib/local-day.js';

/**
 * Why an answer is stale, when its newest data are older than the bound at `nowMs`; undefined when
 * fresh. A report whose pack declares no high-water mark cannot be held to a bound, and says so.
 */
export function staleness(answer: Record<string, unknown>, boundMs: number, nowMs: number): string | undefined {
  if (!('data_through' in answer)) {
    throw new ConfigError(
      'stale_after: this report has no data_through (its pack declares no high-water mark), so its freshness cannot be checked; leave stale_after out',
    );
  }
  const bound = describeDuration(boundMs);
  if (answer.data_through === null) return `No data at all: the feed has delivered nothing (bound: ${bound}).`;
  const through = Date.parse(answer.data_through as string);
  if (nowMs - through <= boundMs) return undefined;
  const minutes = Math.floor((nowMs - through) / 60_000);
  const age =
    minutes >= 48 * 60
      ? `${Math.floor(minutes / 1440)} days`
      : minutes >= 120
        ? `${Math.floor(minutes / 60)} hours`
        : `${minutes} minutes`;
  return `Stale data: the newest data are from ${utcMinute(through)}, ${age} before this report ran (${utcMinute(nowMs)}), older than its bound of ${bound}. The figures stop there.`;
}
