/**
 * The date-range rules as properties, judged by an oracle of their own (Date.UTC over a 400-year
 * shift, not the implementation's setUTCFullYear): many runs against the shared zod schema, and fewer through a real MCP client.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  checkDateRange,
  DATE_RANGE_ALWAYS,
  dateRangeFields,
  MAX_RANGE_DAYS,
  resolveRange,
} from '../../src/lib/date-range.js';
import { connectAdmin, startHarness, textOf, type Harness } from '../support/harness.js';
import { loadSalesData, ordersBetween, type SalesData } from '../support/sales-data.js';

const schema = z.strictObject({ ...dateRangeFields }).superRefine(checkDateRange, DATE_RANGE_ALWAYS);
type Field = 'start_date' | 'end_date';
const FIELDS: readonly Field[] = ['start_date', 'end_date'];

const DAY_MS = 86_400_000;
// Date.UTC reads years 0..99 as 1900..1999; 400 Gregorian years are exactly 146,097 days, so shift by them.
const CYCLE_YEARS = 400;
const CYCLE_DAYS = 146_097;

/**
 * The oracle: days since 1970-01-01 of a real calendar day written YYYY-MM-DD, otherwise undefined.
 * Year 0000 is not one: PostgreSQL has no year 0.
 */
function dayNumber(text: string): number | undefined {
  const match = /^([0-9]{4})-([0-9]{2})-([0-9]{2})$/.exec(text);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  const first = Date.UTC(year + CYCLE_YEARS, month - 1, 1) / DAY_MS - CYCLE_DAYS;
  const next = Date.UTC(year + CYCLE_YEARS, month, 1) / DAY_MS - CYCLE_DAYS;
  return day <= next - first ? first + day - 1 : undefined;
}

/** YYYY-MM-DD of a day number in years 0001..9999. */
const dayText = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);

const FIRST_DAY = dayNumber('0001-01-01')!;
const LAST_DAY = dayNumber('9999-12-31')!;
/** The oracle's rule: a range of real days is accepted iff it runs forward by at most 89 days (90 counted inclusively). */
const accepted = (start: number, end: number): boolean => end - start >= 0 && end - start <= 89;

const anyDay = fc.integer({ min: FIRST_DAY, max: LAST_DAY });
/** A start day and an end day, half the time within a few days of the 90-day limit. */
const dayPair = (starts: fc.Arbitrary<number>): fc.Arbitrary<[number, number]> =>
  starts.chain((start) =>
    fc.tuple(
      fc.constant(start),
      fc.oneof(fc.integer({ min: Math.max(FIRST_DAY, start - 3), max: Math.min(LAST_DAY, start + 93) }), anyDay),
    ),
  );

const digits = (length: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: length, maxLength: length });
/** Strings shaped like a day, most of them not real ones (month 13, day 31 in April, year 0000...). */
const dayShaped = fc.tuple(digits(4), digits(2), digits(2)).map(([y, m, d]) => `${y}-${m}-${d}`);
const pad = (n: number, width: number): string => String(n).padStart(width, '0');
/** Days at the edges of the calendar: months 0..13, days 0..32, century and leap years, year 0. */
const nearlyADay = fc
  .tuple(
    fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 4, 100, 400, 1900, 2000, 2023, 2024, 2100, 9999)),
    fc.integer({ min: 0, max: 13 }),
    fc.integer({ min: 0, max: 32 }),
  )
  .map(([y, m, d]) => `${pad(y, 4)}-${pad(m, 2)}-${pad(d, 2)}`);
/** Real days, slightly damaged. */
const MUTATIONS: readonly ((day: string, at: number) => string)[] = [
  (day) => `${day}Z`,
  (day) => `${day}T00:00:00Z`,
  (day) => `${day}+02:00`,
  (day) => `${day} `,
  (day) => ` ${day}`,
  (day) => `${day}\n`,
  (day) => `${day}\u0000`,
  (day) => `${day}\uD800`,
  (day) => `+${day}`,
  (day) => `0${day}`,
  (day, at) => day.slice(0, at) + day.slice(at + 1),
  (day, at) =>
    day.slice(0, at) + day.slice(at, at + 1).replace(/[0-9]/, (d) => String.fromCharCode(0xff10 + Number(d))),
  (day, at) =>
    day.slice(0, at) + day.slice(at, at + 1).replace(/[0-9]/, (d) => String.fromCharCode(0x0660 + Number(d))),
  (day) => day.replaceAll('-', '/'),
  (day) => day.replaceAll('-', '\u2010'),
  (day) => day.replaceAll('-', ''),
];
const damagedDay = fc
  .tuple(anyDay.map(dayText), fc.nat({ max: 9 }), fc.constantFrom(...MUTATIONS))
  .map(([day, at, mutate]) => mutate(day, at));
const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) }),
  dayShaped,
  nearlyADay,
  nearlyADay,
  damagedDay,
);
const notADay = anyText.filter((text) => dayNumber(text) === undefined);
/** Real dates from year 1 to 9999, at any time of day. */
const anyDate = fc.date({
  min: new Date('0001-01-01T00:00:00.000Z'),
  max: new Date('9999-12-31T23:59:59.999Z'),
  noInvalidDate: true,
});

describe('the oracle', () => {
  it('knows the Gregorian leap years and day numbers', () => {
    expect(dayNumber('1970-01-01')).toBe(0);
    expect(dayNumber('1970-01-02')).toBe(1);
    expect(dayNumber('1969-12-31')).toBe(-1);
    for (const leap of ['2024-02-29', '2000-02-29', '0400-02-29', '0004-02-29'])
      expect(dayNumber(leap), leap).toBeDefined();
    for (const none of [
      '2023-02-29',
      '1900-02-29',
      '0100-02-29',
      '2025-04-31',
      '2025-13-01',
      '2025-00-01',
      '0000-01-01',
    ])
      expect(dayNumber(none), none).toBeUndefined();
    expect(dayNumber('2024-03-01')! - dayNumber('2024-02-28')!).toBe(2);
    expect(dayNumber('2025-03-31')! - dayNumber('2025-01-01')!).toBe(89);
  });

  it('reads back every day it writes', () => {
    fc.assert(fc.property(anyDay, (day) => dayNumber(dayText(day)) === day));
  });

  it('matches the documented limit of 90 days', () => {
    expect(MAX_RANGE_DAYS).toBe(90);
  });
});

describe('the shared date-range schema', () => {
  it('accepts a pair of real days iff 0 <= end - start <= 89, and otherwise names end_date', () => {
    fc.assert(
      fc.property(dayPair(anyDay), ([start, end]) => {
        const [startDate, endDate] = [dayText(start), dayText(end)];
        const result = schema.safeParse({ start_date: startDate, end_date: endDate });
        expect(result.success).toBe(accepted(start, end));
        if (result.success) {
          expect(result.data).toEqual({ start_date: startDate, end_date: endDate });
          return;
        }
        expect(result.error.issues.map((i) => i.path)).toEqual([['end_date']]);
        const message = result.error.issues[0]!.message;
        if (end < start) expect(message).toContain(`end_date ${endDate} is before start_date ${startDate}`);
        else {
          expect(message).toContain(`spans ${end - start + 1} days`);
          expect(message).toContain(`end_date may be at most ${dayText(start + 89)}`);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts 89 days after the start and refuses 90 after it, or one before', () => {
    fc.assert(
      fc.property(fc.integer({ min: FIRST_DAY + 1, max: LAST_DAY - 90 }), (start) => {
        const parse = (end: number): boolean =>
          schema.safeParse({ start_date: dayText(start), end_date: dayText(end) }).success;
        expect([parse(start), parse(start + 89), parse(start + 90), parse(start - 1)]).toEqual([
          true,
          true,
          false,
          false,
        ]);
      }),
      { numRuns: 500 },
    );
  });

  it('accepts a string as a single-day range iff it is a real day, naming both fields otherwise', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const result = schema.safeParse({ start_date: text, end_date: text });
        expect(result.success).toBe(dayNumber(text) !== undefined);
        if (!result.success) expect(new Set(result.error.issues.map((i) => i.path[0]))).toEqual(new Set(FIELDS));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses any string that is not a real day, naming only its field', () => {
    fc.assert(
      fc.property(notADay, fc.constantFrom(...FIELDS), anyDay, (text, field, other) => {
        const result = schema.safeParse({ start_date: dayText(other), end_date: dayText(other), [field]: text });
        expect(result.success).toBe(false);
        expect(result.error!.issues.length).toBeGreaterThan(0);
        for (const issue of result.error!.issues) expect(issue.path).toEqual([field]);
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts the day of any real Date, as toISOString writes it, as a single-day range', () => {
    fc.assert(
      fc.property(anyDate, (date) => {
        const day = date.toISOString().slice(0, 10);
        expect(dayNumber(day)).toBeDefined();
        expect(schema.safeParse({ start_date: day, end_date: day }).success).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('resolves an accepted range to its day count and the day after its end', () => {
    fc.assert(
      fc.property(dayPair(anyDay), ([start, end]) => {
        fc.pre(accepted(start, end) && end < LAST_DAY);
        const range = { start_date: dayText(start), end_date: dayText(end) };
        expect(resolveRange(range)).toMatchObject({ days: end - start + 1, endExclusive: dayText(end + 1) });
      }),
      { numRuns: 1000 },
    );
  });

  // Days that some zone's clocks skipped: validation or arithmetic on local-time dates would get them wrong.
  it('accepts and resolves a real day whatever the time zone of the process', () => {
    const saved = process.env.TZ;
    try {
      for (const [zone, day, before] of [
        ['Pacific/Apia', '2011-12-30', '2011-12-29'],
        ['Pacific/Kiritimati', '1994-12-31', '1994-12-30'],
      ] as const) {
        process.env.TZ = zone;
        expect(schema.safeParse({ start_date: day, end_date: day }).success, `${day} in ${zone}`).toBe(true);
        expect(resolveRange({ start_date: before, end_date: before }).endExclusive, `${before} in ${zone}`).toBe(day);
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe('through query_order_count', () => {
  let harness: Harness;
  let data: SalesData;
  beforeAll(async () => {
    const admin = await connectAdmin();
    try {
      data = await loadSalesData(admin);
    } finally {
      await admin.end();
    }
    harness = await startHarness();
  });
  afterAll(() => harness.close());

  // Half the starts fall where the seeded orders are, so the counts are not all zero.
  const seeded = fc.integer({ min: dayNumber('2023-06-01')!, max: dayNumber('2025-07-31')! });
  const RUNS = { numRuns: 50 };

  it('accepts a pair of real days iff the oracle does, with the right count, and otherwise names end_date', async () => {
    await fc.assert(
      fc.asyncProperty(dayPair(fc.oneof(seeded, anyDay)), async ([start, end]) => {
        const [startDate, endDate] = [dayText(start), dayText(end)];
        const result = await harness.call('query_order_count', { start_date: startDate, end_date: endDate });
        if (accepted(start, end)) {
          expect(result.isError, textOf(result)).toBeFalsy();
          expect(result.structuredContent).toMatchObject({
            start_date: startDate,
            end_date: endDate,
            order_count: ordersBetween(data, startDate, endDate).length,
          });
        } else {
          expect(result.isError).toBe(true);
          expect(textOf(result)).toMatch(/^Invalid arguments: end_date[: ]/);
        }
      }),
      RUNS,
    );
  });

  it('refuses any string that is not a real day, naming its field', async () => {
    await fc.assert(
      fc.asyncProperty(notADay, fc.constantFrom(...FIELDS), seeded, async (text, field, other) => {
        const args = { start_date: dayText(other), end_date: dayText(other), [field]: text };
        const result = await harness.call('query_order_count', args);
        expect(result.isError).toBe(true);
        expect(textOf(result).startsWith(`Invalid arguments: ${field}: `), textOf(result)).toBe(true);
      }),
      RUNS,
    );
  });

  it('answers for the day of any real Date as a single-day range', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          seeded.map((day) => new Date(day * DAY_MS + 43_200_000)),
          anyDate,
        ),
        async (date) => {
          const day = date.toISOString().slice(0, 10);
          const result = await harness.call('query_order_count', { start_date: day, end_date: day });
          expect(result.isError, textOf(result)).toBeFalsy();
          expect(result.structuredContent).toMatchObject({ order_count: ordersBetween(data, day, day).length });
        },
      ),
      RUNS,
    );
  });
});
