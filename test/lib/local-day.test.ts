/**
 * Item 2 and item 4 of issue 8: when a day starts. src/lib/local-day.ts works it out from the
 * runtime's zone data (Intl); PostgreSQL, with its own zone engine and data, judges every answer: the
 * start s of day D must be local D 00:00 or later, and every instant shortly before it (a second, and
 * up to three hours, the longest a clock has fallen back across a midnight) must still be before D.
 * PostgreSQL's own `D::timestamp at time zone z` fails this in zones whose clocks fall back across
 * midnight, because it takes the later of two local midnights.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { connectReader } from '../../src/db/connect.js';
import { zoneRulesAgreement } from '../../src/db/zone-rules.js';
import { dayStart, dayStartMs, isoUtc, offsetAt } from '../../src/lib/local-day.js';
import { silentLogger } from '../../src/lib/logger.js';

const DAY = 86_400_000;
let admin: pg.Client;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: inject('adminUrl') });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
});

/** The days of D whose start s is refused by PostgreSQL, with the local times it reads. */
async function refusedByPostgres(
  timeZone: string,
  days: readonly string[],
  starts: readonly string[],
): Promise<Array<{ day: string; start: string }>> {
  const { rows } = await admin.query<{ day: string; start: string }>(
    `select t.day::text as day, t.start::text as start
       from unnest($1::date[], $2::timestamptz[]) as t(day, start)
      where not ((t.start at time zone $3) >= t.day::timestamp
                 and (select bool_and(((t.start - back) at time zone $3) < t.day::timestamp)
                        from unnest(array['1 second', '15 minutes', '30 minutes', '1 hour', '90 minutes',
                                          '2 hours', '3 hours']::interval[]) as back))`,
    [days, starts, timeZone],
  );
  return rows;
}

const isoDay = (ms: number): string => isoUtc(ms).slice(0, 10);

describe('item 2: the start of a day, in every zone', () => {
  it('item 2: matches PostgreSQL for every IANA zone on every day of 2022 to 2025', async () => {
    const { rows } = await admin.query<{ name: string }>('select name from pg_timezone_names');
    const known = new Set(rows.map((row) => row.name));
    const zones = Intl.supportedValuesOf('timeZone').filter((zone) => known.has(zone));
    expect(zones.length).toBeGreaterThan(300); // the sweep really covers the zone database
    // Years both zone databases agree on: Node 20's ICU (tz 2025c) and a newer PostgreSQL disagree from
    // November 2026 on, when British Columbia keeps summer time (America/Vancouver).
    const first = Date.UTC(2022, 0, 1);
    const count = (Date.UTC(2026, 0, 1) - first) / DAY;
    const refused: string[] = [];
    for (const zone of zones) {
      const days: string[] = [];
      const starts: string[] = [];
      for (let i = 0; i < count; i += 1) {
        days.push(isoDay(first + i * DAY));
        starts.push(isoUtc(dayStartMs(first + i * DAY, zone)));
      }
      for (const { day, start } of await refusedByPostgres(zone, days, starts)) refused.push(`${zone} ${day} ${start}`);
    }
    expect(refused).toEqual([]);
  }, 180_000);

  it("item 2: the check itself refuses PostgreSQL's later midnight in Atlantic/Azores and America/Havana", async () => {
    // Both fall back from 01:00 to 00:00: local midnight happens twice.
    for (const [zone, day] of [
      ['Atlantic/Azores', '2025-10-26'],
      ['America/Havana', '2025-11-02'],
    ] as const) {
      const { rows } = await admin.query<{ later: string }>('select ($1::timestamp at time zone $2)::text as later', [
        day,
        zone,
      ]);
      expect(await refusedByPostgres(zone, [day], [rows[0]!.later])).toHaveLength(1);
      expect(await refusedByPostgres(zone, [day], [dayStart(day, zone).sql])).toEqual([]);
      expect(Date.parse(dayStart(day, zone).sql)).toBeLessThan(Date.parse(rows[0]!.later));
    }
  });

  it('item 2: a day whose midnight is skipped starts at the jump, and echoes it', () => {
    // Havana springs from 00:00 to 01:00 on 2025-03-09; Apia skipped 2011-12-30 altogether.
    expect(dayStart('2025-03-09', 'America/Havana').local).toBe('2025-03-09T01:00:00.000-04:00');
    expect(dayStart('2011-12-30', 'Pacific/Apia').ms).toBe(dayStart('2011-12-31', 'Pacific/Apia').ms);
  });
});

describe('item 4: old days, handled exactly', () => {
  it('item 4: years 1 to 99 are those years, not 19xx', async () => {
    for (const day of ['0001-01-01', '0050-06-01', '0099-12-31']) {
      const start = dayStart(day, 'UTC');
      expect(start.local).toBe(`${day}T00:00:00.000+00:00`);
      const { rows } = await admin.query<{ same: boolean }>(
        "select $1::timestamptz = ($2::date::timestamp at time zone 'UTC') as same",
        [start.sql, day],
      );
      expect(rows[0]!.same).toBe(true);
    }
  });

  it('item 4: offsets with seconds keep them (Kolkata 1880: +05:21:10), and PostgreSQL agrees', async () => {
    expect(offsetAt('Asia/Kolkata', Date.UTC(1880, 5, 1))).toBe((5 * 3600 + 21 * 60 + 10) * 1000);
    expect(offsetAt('Africa/Monrovia', Date.UTC(1960, 0, 1))).toBe(-(44 * 60 + 30) * 1000);
    const kolkata = dayStart('1880-06-01', 'Asia/Kolkata');
    // ISO 8601 offsets have no seconds: such an instant is echoed in UTC, exactly.
    expect(kolkata.local).toBe('1880-05-31T18:38:50.000Z');
    for (const [zone, day] of [
      ['Asia/Kolkata', '1880-06-01'],
      ['Africa/Monrovia', '1960-01-01'],
      ['Europe/Amsterdam', '1930-07-01'],
      ['Asia/Tokyo', '0001-01-01'], // starts in 1 BC, which PostgreSQL must be sent as such
      ['Asia/Kolkata', '0001-01-02'],
    ] as const) {
      expect(await refusedByPostgres(zone, [day], [dayStart(day, zone).sql])).toEqual([]);
    }
  });
});

describe('item 2: start-up compares the zone rules with PostgreSQL', () => {
  it('item 2: finds the days whose start PostgreSQL places elsewhere, and none where the rules agree', async () => {
    const reader = connectReader(inject('readerUrl'), { statementTimeoutMs: 5000, poolMax: 1 }, silentLogger);
    try {
      // Where the rules agree, even across Azores' double midnight, nothing is reported.
      expect(await zoneRulesAgreement(reader, 'Atlantic/Azores', '2025-01-01', 365)).toEqual({
        known: true,
        disagreeing: [],
      });
      // A start one hour late, PostgreSQL's own later midnight, is reported on that day alone.
      const lateOnDoubleMidnight = (day: string): string =>
        day === '2025-10-26' ? '2025-10-26T01:00:00+00:00' : dayStart(day, 'Atlantic/Azores').sql;
      expect(await zoneRulesAgreement(reader, 'Atlantic/Azores', '2025-10-20', 14, lateOnDoubleMidnight)).toEqual({
        known: true,
        disagreeing: ['2025-10-26'],
      });
      // America/Vancouver in December 2026: whether the two zone databases agree depends on their ages;
      // the offsets, read from each, say what to expect.
      const instant = '2026-12-15T12:00:00Z';
      const { rows } = await admin.query<{ offset: string }>(
        "select extract(epoch from ($1::timestamptz at time zone 'America/Vancouver') - ($1::timestamptz at time zone 'UTC'))::int as offset",
        [instant],
      );
      const agree = Number(rows[0]!.offset) * 1000 === offsetAt('America/Vancouver', Date.parse(instant));
      const found = await zoneRulesAgreement(reader, 'America/Vancouver', '2026-12-01', 31);
      expect(found.disagreeing.length).toBe(agree ? 0 : 31);
    } finally {
      await reader.close();
    }
  });
});
