/**
 * The one definition of when a calendar day starts in a time zone, used by the SQL bounds, the
 * grouping of rows into days, weeks and months, and the echoed `starts_at` / `ends_before` alike:
 *
 *   a day D starts at the earliest instant whose local wall-clock time is D 00:00 or later.
 *
 * Where clocks fall back across midnight (Atlantic/Azores on the last Sunday of October: 01:00 back
 * to 00:00), local 00:00 happens twice and the day starts at the first; PostgreSQL's
 * `timestamp at time zone` takes the second, which is why the SQL gets these instants as bind
 * parameters instead of working them out itself. Where clocks skip midnight (America/Havana in
 * March: 00:00 straight to 01:00), the day starts at the jump. Offsets keep their seconds (Kolkata
 * in 1880: +05:21:10), and years 1 to 99 are years 1 to 99.
 *
 * Offsets come from the runtime's own zone data through Intl, to the second. @date-fns/tz's tzOffset
 * reads the same data, but in whole minutes plus a fraction and, in 1.5.0, with the sign of offsets
 * between -01:00 and 00:00 flipped (Africa/Monrovia's -00:44:30 read as +44.5 minutes), so it is not
 * used here.
 */
import { memoize } from './memo.js';

const SECOND = 1000;
const HOUR = 3_600_000;
/** Every offset in the zone database lies within ±16 hours, so the start of D lies within this of D 00:00 UTC. */
const WINDOW = 18 * HOUR;
/** Offsets are sampled this far apart; between two samples that differ, the change is found to the second. */
const STEP = 6 * HOUR;

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The zone's offset from UTC at an instant, in milliseconds (whole seconds). */
export function offsetAt(timeZone: string, instant: number): number {
  let format = offsetFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' });
    offsetFormats.set(timeZone, format);
  }
  // "6/1/1880, GMT+05:21:10", "1/1/2025, GMT" (UTC), "1/1/1960, GMT-00:44:30"
  const text = format.format(instant);
  const match = /GMT(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?$/.exec(text);
  if (!match) throw new RangeError(`unexpected offset "${text}" for ${timeZone}`);
  if (!match[1]) return 0;
  const magnitude = Number(match[2]) * HOUR + Number(match[3] ?? 0) * 60_000 + Number(match[4] ?? 0) * SECOND;
  return match[1] === '-' ? -magnitude : magnitude;
}

/** The first whole second, after `from`, at which the offset is no longer the one at `from`; `to` has another. */
function changeBetween(timeZone: string, from: number, to: number, before: number): number {
  let low = from; // offset === before
  let high = to; // offset !== before
  while (high - low > SECOND) {
    const middle = low + Math.floor((high - low) / 2 / SECOND) * SECOND;
    if (offsetAt(timeZone, middle) === before) low = middle;
    else high = middle;
  }
  return high;
}

/**
 * The instant (milliseconds since the epoch) at which the day whose UTC midnight is `midnightUtc`
 * starts in the zone. Exact as long as the zone does not change its offset twice, and back, within
 * six hours, which no zone's history does.
 */
export function dayStartMs(midnightUtc: number, timeZone: string): number {
  // Pieces of constant offset covering [midnight - WINDOW, midnight + WINDOW).
  const pieces: { from: number; offset: number }[] = [];
  let previous = offsetAt(timeZone, midnightUtc - WINDOW);
  pieces.push({ from: midnightUtc - WINDOW, offset: previous });
  for (let at = midnightUtc - WINDOW + STEP; at <= midnightUtc + WINDOW; at += STEP) {
    const offset = offsetAt(timeZone, at);
    if (offset !== previous) {
      let from = at - STEP;
      // Several changes between two samples are found one after the other.
      while (offsetAt(timeZone, from) !== offset) {
        const before = offsetAt(timeZone, from);
        from = changeBetween(timeZone, from, at, before);
        pieces.push({ from, offset: offsetAt(timeZone, from) });
      }
      previous = offset;
    }
  }
  // In each piece, local time (instant + offset) reaches midnight at midnight - offset; the first such
  // instant that lies inside its piece is the start of the day.
  for (let i = 0; i < pieces.length; i += 1) {
    const piece = pieces[i]!;
    const end = pieces[i + 1]?.from ?? midnightUtc + WINDOW;
    const candidate = Math.max(piece.from, midnightUtc - piece.offset);
    if (candidate < end) return candidate;
  }
  throw new RangeError(`no start of day found for ${new Date(midnightUtc).toISOString()} in ${timeZone}`);
}

/** A local day's start: the instant for SQL, and the same instant as the echo shows it. */
export interface DayStart {
  /** The instant as PostgreSQL reads a timestamptz ("2025-10-26T00:00:00.000+00:00"), for a bind parameter. */
  readonly sql: string;
  /** ISO 8601 in local time with the offset ("2025-10-26T00:00:00.000+00:00"); in UTC when the offset has seconds. */
  readonly local: string;
  readonly ms: number;
}

/** The start of a YYYY-MM-DD day (years 1 to 10000) in a zone. Memoized: the same few days come back. */
export function dayStart(day: string, timeZone: string): DayStart {
  return dayStartMemo(`${day} ${timeZone}`);
}

const dayStartMemo = memoize((key: string): DayStart => {
  const [day, timeZone] = key.split(' ') as [string, string];
  const [year, month, date] = day.split('-').map(Number) as [number, number, number];
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month - 1, date); // unlike Date.UTC, takes years 1..99 as they are
  const ms = dayStartMs(midnight.getTime(), timeZone);
  const offset = offsetAt(timeZone, ms);
  return Object.freeze({ sql: postgresTimestamp(ms), local: isoWithOffset(ms, offset), ms });
});

/** An instant as ISO 8601 in the zone's offset at that instant, as the echoed day starts are written. */
export function isoInZone(ms: number, timeZone: string): string {
  return isoWithOffset(ms, offsetAt(timeZone, ms));
}

/**
 * The instant a local wall-clock time (`wall`: the local date and time read as if UTC, in
 * milliseconds) has in a zone, in that instant's own offset. A time that the clocks skip is read in
 * the offset before the jump (02:30 on a spring-forward night is 03:30 after it), as PostgreSQL reads
 * it; a time that happens twice is the later one, as PostgreSQL takes it.
 */
export function instantOfWallTime(wall: number, timeZone: string): number {
  const first = wall - offsetAt(timeZone, wall);
  return wall - offsetAt(timeZone, first);
}

/** ISO 8601 in UTC with four-digit years ("0000" is 1 BC, as ISO 8601 counts). */
export function isoUtc(ms: number): string {
  return isoWithOffset(ms, 0);
}

/**
 * An instant as PostgreSQL reads a timestamptz. PostgreSQL has no year 0: the start of 0001-01-01
 * east of Greenwich falls in 1 BC, which it writes "0001-12-31 ... BC".
 */
export function postgresTimestamp(ms: number): string {
  const year = new Date(ms).getUTCFullYear();
  if (year >= 1) return isoUtc(ms);
  const iso = isoUtc(ms).replace(/^-?\d+/, pad(1 - year, 4));
  return `${iso.replace('T', ' ')} BC`;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * ISO 8601 of an instant as local time at `offset`: four-digit years (Date's toISOString writes
 * year 10000 as +010000, which PostgreSQL does not read), and UTC with Z when the offset has seconds,
 * which ISO 8601 offsets cannot carry.
 */
function isoWithOffset(ms: number, offset: number): string {
  const exact = offset % 60_000 === 0 ? offset : 0;
  const local = new Date(ms + exact);
  const stamp =
    `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}` +
    `T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}.${pad(local.getUTCMilliseconds(), 3)}`;
  if (exact !== offset) return `${stamp}Z`;
  const sign = exact < 0 ? '-' : '+';
  const minutes = Math.abs(exact) / 60_000;
  return `${stamp}${sign}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}

/** An instant to the minute as a person reads it in a report or a listing: "2026-12-04 23:44 UTC". */
export function utcMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
