/**
 * Result shaping: a statement's rows as a template's present() gets them, each column converted to
 * its kind and given its treatment (masks, tokens, buckets).
 */
import type { RawResult } from '../../db/connect.js';
import { ConfigError } from '../../lib/errors.js';
import { initials, lastFourDigits, maskEmail, type Tokenizer } from '../../lib/masking.js';
import { personalAt, sourcesOf } from '../sources.js';
import type { AnyTemplate, CellValue, ColumnKind, ResultRow, Treatment } from '../types.js';
import { bucketOf, convert } from './values.js';

/** What shaping reads of a registered template, and the placements it keeps on it. */
export interface ShapedTemplate {
  readonly template: AnyTemplate;
  /** The fewest distinct people a released protected count other than 0 stands for (src/lib/protected-counts.ts). */
  readonly threshold: number;
  readonly columns: readonly ShapedColumn[];
  /** Where the declared columns sit in the results, by the results' column names (see placeColumns). */
  readonly placements: Map<string, Placement>;
}

/** A declared column with what shaping needs resolved once: its JSON type, treatment and token entity. */
export interface ShapedColumn {
  readonly alias: string;
  readonly type: ColumnKind;
  readonly treatment: Treatment;
  /** For a tokenized column: the entity its source identifies, which prefixes the token. */
  readonly entity: string;
}

export function shapedColumns(template: AnyTemplate): ShapedColumn[] {
  return Object.entries(template.columns).map(([alias, column]) => ({
    alias,
    type: column.type,
    treatment: column.treatment,
    entity:
      sourcesOf(column)
        .map((source) => personalAt(template.personal, source)?.entity)
        .find((e) => e !== undefined) ?? 'ref',
  }));
}

/** A declared column and where it sits in PostgreSQL's rows. */
export interface PlacedColumn extends ShapedColumn {
  readonly index: number;
}

/** Where the declared columns sit: those that are returned. */
export interface Placement {
  readonly returned: readonly PlacedColumn[];
}

/**
 * Where each declared column sits in a result with these column names. The result's columns must be
 * exactly the declared ones: an undeclared column is refused, whatever its position. A template's
 * statement gives the same names in the same order every time, so the answer is kept for the next call.
 */
function placeColumns(entry: ShapedTemplate, names: readonly string[]): Placement {
  const key = names.join('\0');
  const known = entry.placements.get(key);
  if (known) return known;
  for (const name of names) {
    if (!(name in entry.template.columns)) throw new ConfigError(`query selected undeclared column ${name}`);
  }
  const placed = entry.columns.map((column) => {
    const index = names.indexOf(column.alias);
    if (index === -1) throw new ConfigError(`query did not select declared column ${column.alias}`);
    return { ...column, index };
  });
  const placement: Placement = {
    returned: placed.filter((c) => c.treatment !== 'drop'),
  };
  entry.placements.set(key, placement);
  return placement;
}

/**
 * Converts each returned column to its JSON type and applies its treatment; leaves out dropped columns,
 * and refuses a protected count that was not released (a value of 1 to threshold − 1).
 */
export function shapeRows(entry: ShapedTemplate, result: RawResult, count: number, tokenize: Tokenizer): ResultRow[] {
  const { returned } = placeColumns(entry, result.columns);
  const guarded = entry.template.protectedFigures ?? [];
  const rows: ResultRow[] = [];
  for (let r = 0; r < count; r++) {
    const raw = result.rows[r]!;
    const out: ResultRow = {};
    for (const column of returned) {
      const text = raw[column.index];
      // A protected count is 0 or at least the threshold (src/lib/protected-counts.ts), or not returned.
      if (guarded.includes(column.alias) && text !== null && text !== undefined) {
        const released = Number(text);
        if (!Number.isInteger(released) || (released !== 0 && released < entry.threshold)) {
          throw new ConfigError(`template ${entry.template.name}: protected count ${column.alias} was not released`);
        }
      }
      out[column.alias] =
        text === null || text === undefined
          ? null
          : column.treatment === 'plain'
            ? convert(column.type, text)
            : treat(column, text, tokenize);
    }
    rows.push(out);
  }
  return rows;
}

function treat(column: ShapedColumn, value: string, tokenize: Tokenizer): CellValue {
  const { treatment } = column;
  if (typeof treatment === 'object') return bucketOf(convert(column.type, value) as number, treatment.bucket);
  switch (treatment) {
    case 'mask_email':
      return maskEmail(value);
    case 'initials':
      return initials(value);
    case 'mask_phone':
      return lastFourDigits(value);
    case 'token':
      return tokenize(column.entity, value);
    default:
      return convert(column.type, value);
  }
}
