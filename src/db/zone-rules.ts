/**
 * Whether PostgreSQL's zone rules agree with Node's for the reporting zone. querygate cuts days with
 * Node's (src/lib/local-day.ts) and sends PostgreSQL instants only, so its figures do not depend on
 * the database's zone data; but an analyst who checks a figure in psql with `at time zone` does, and
 * two zone databases of different ages disagree wherever a zone changed its rules in between
 * (America/Vancouver from November 2026 between Node 20's tz 2025c and a newer PostgreSQL). The
 * server says so at start-up rather than let the two answers differ unexplained.
 */
import { dayStart, isoUtc } from '../lib/local-day.js';
import type { ReaderDatabase } from './connect.js';

const DAY_MS = 86_400_000;

export interface ZoneRulesAgreement {
  /** False when PostgreSQL does not know the zone at all. */
  readonly known: boolean;
  /** The days (YYYY-MM-DD) whose start PostgreSQL places elsewhere. */
  readonly disagreeing: readonly string[];
}

/**
 * Checks each day from `from` for `days` days: PostgreSQL must read the start Node gives (or
 * `startOf` gives) as that day's 00:00 or later, and the second before it as an earlier day.
 */
export async function zoneRulesAgreement(
  db: ReaderDatabase,
  timeZone: string,
  from: string,
  days: number,
  startOf: (day: string) => string = (day) => dayStart(day, timeZone).sql,
): Promise<ZoneRulesAgreement> {
  const first = Date.parse(`${from}T00:00:00Z`);
  const list = Array.from({ length: days }, (_, i) => isoUtc(first + i * DAY_MS).slice(0, 10));
  const starts = list.map(startOf);
  const known = await db.execute({
    sql: 'select exists (select 1 from pg_timezone_names where name = $1) as known',
    parameters: [timeZone],
  });
  if (known.rows[0]?.[0] !== 't') return { known: false, disagreeing: [] };
  const { rows } = await db.execute({
    sql: `select t.day::text from unnest($1::date[], $2::timestamptz[]) as t(day, start)
           where not ((t.start at time zone $3) >= t.day::timestamp
                      and ((t.start - interval '1 second') at time zone $3) < t.day::timestamp)
           order by t.day`,
    parameters: [list, starts, timeZone],
  });
  return { known: true, disagreeing: rows.map((row) => String(row[0])) };
}
