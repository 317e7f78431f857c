/**
 * The stale-data sentence of `querygate report --stale-after` (report-cli.test.ts runs the command; this
 * holds its arithmetic at the edges): at the bound is fresh, a minute past it is stale, and the age is
 * said in minutes, hours or days as it grows. A report with no high-water mark cannot be held to one.
 */
import { describe, expect, it } from 'vitest';
import { staleness } from '../../src/output/staleness.js';
import { ConfigError } from '../../src/lib/errors.js';

const NOW = Date.parse('2026-12-04T07:00:00Z');
const MINUTE = 60_000;
const at = (minutesBefore: number) => ({ data_through: new Date(NOW - minutesBefore * MINUTE).toISOString() });

describe('staleness', () => {
  it('passes data exactly at the bound and fails them a minute past it', () => {
    expect(staleness(at(90), 90 * MINUTE, NOW)).toBeUndefined();
    expect(staleness(at(91), 90 * MINUTE, NOW)).toBe(
      'Stale data: the newest data are from 2026-12-04 05:29 UTC, 91 minutes before this report ran (2026-12-04 07:00 UTC), older than its bound of 90 minutes. The figures stop there.',
    );
  });

  it('says the age in hours from two hours, and in days from two days', () => {
    expect(staleness(at(150), 60 * MINUTE, NOW)).toContain(', 2 hours before this report ran');
    expect(staleness(at(47 * 60 + 59), 36 * 60 * MINUTE, NOW)).toContain(
      ', 47 hours before this report ran (2026-12-04 07:00 UTC), older than its bound of 36 hours.',
    );
    expect(staleness(at(3 * 24 * 60 + 5), 2 * 24 * 60 * MINUTE, NOW)).toContain(
      'the newest data are from 2026-12-01 06:55 UTC, 3 days before this report ran (2026-12-04 07:00 UTC), older than its bound of 2 days.',
    );
  });

  it('fails a pack with no data at all, and refuses a report with no high-water mark', () => {
    expect(staleness({ data_through: null }, MINUTE, NOW)).toBe(
      'No data at all: the feed has delivered nothing (bound: 1 minute).',
    );
    expect(() => staleness({ week: '2026-W49' }, MINUTE, NOW)).toThrow(ConfigError);
  });
});
