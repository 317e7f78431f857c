/** PostgreSQL's text for a value, as the JSON of its declared column kind, and an amount as its bucket. */
import { ConfigError } from '../../lib/errors.js';
import type { CellValue, ColumnKind } from '../types.js';

/** PostgreSQL's text for a column, as the JSON value of its declared type. */
export function convert(type: ColumnKind, text: string): CellValue {
  switch (type) {
    case 'integer':
      return Number(text);
    case 'number':
      return finiteNumber(text);
    case 'money':
      return roundMoney(text);
    case 'timestamp':
      return isoTimestamp(text);
    case 'date':
    case 'text':
      return text;
  }
}

/** A numeric, float or integer column's text as a JSON number; NaN and the infinities have none. */
function finiteNumber(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value)) throw new ConfigError(`number column returned ${JSON.stringify(text.slice(0, 40))}`);
  return value;
}

const PG_TIMESTAMPTZ = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?([+-]\d\d(?::\d\d){0,2})$/;

/** The common case, a whole second in UTC, read without taking the text apart. */
const PG_WHOLE_SECOND_UTC = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+00$/;

/**
 * "2026-06-30 12:34:56.789123+00" -> "2026-06-30T12:34:56.789Z": ISO 8601 in UTC, to the millisecond
 * (truncated). Reader connections run in UTC, so this is string work; any other offset goes through a Date.
 */
export function isoTimestamp(text: string): string {
  if (PG_WHOLE_SECOND_UTC.test(text)) return `${text.slice(0, 10)}T${text.slice(11, 19)}.000Z`;
  const match = PG_TIMESTAMPTZ.exec(text);
  if (!match) throw new ConfigError(`timestamp column returned ${JSON.stringify(text.slice(0, 40))}`);
  const [, day, time, fraction = '', offset = ''] = match;
  const iso = `${day}T${time}.${fraction.slice(0, 3).padEnd(3, '0')}Z`;
  if (offset === '+00') return iso;
  const [hours = '0', minutes = '0', seconds = '0'] = offset.slice(1).split(':');
  const offsetMs = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * 1000;
  return new Date(Date.parse(iso) - (offset.startsWith('-') ? -offsetMs : offsetMs)).toISOString();
}

const AT_MOST_CENTS = /^-?\d+(?:\.\d{0,2})?$/;

/**
 * A numeric string rounded to cents, half away from zero as PostgreSQL's round() does, in decimal
 * arithmetic: the binary float of "1.005" is below 1.005, and Math.round would give 1.00.
 */
export function roundMoney(text: string): number {
  if (AT_MOST_CENTS.test(text)) return Number(text); // numeric(12, 2) columns: nothing to round
  const match = /^(-?)(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!match) throw new ConfigError(`money column returned ${JSON.stringify(text.slice(0, 40))}`);
  const [, sign, whole, fraction = ''] = match;
  if (fraction.length <= 2) return Number(text);
  let cents = BigInt(whole! + fraction.slice(0, 2));
  if (fraction.charCodeAt(2) >= 53 /* '5' */) cents += 1n;
  return Number(`${sign}${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`);
}

/** The range an amount falls in, for a model to read: "under 0", "100 to under 500", "500 or more". */
export function bucketOf(value: number, bounds: readonly [number, ...number[]]): string {
  if (value < bounds[0]) return `under ${bounds[0]}`;
  for (let k = 1; k < bounds.length; k++) {
    if (value < bounds[k]!) return `${bounds[k - 1]} to under ${bounds[k]}`;
  }
  return `${bounds.at(-1)} or more`;
}
