/**
 * Result shaping: a statement's rows as a template's present() gets them, each column converted to
 * its kind and given its treatment (masks, tokens, buckets), and the rows that stand for too few
 * people left out and counted.
 */
import type { RawResult } from '../../db/connect.js';
import { ConfigError } from '../../errors.js';
import { initials, lastFourDigits, maskEmail, type Tokenizer } from '../../lib/masking.js';
import { personalAt, sourcesOf } from '../sources.js';
import type { AnyTemplate, CellValue, ColumnKind, ResultRow, Treatment } from '../types.js';
import { bucketOf, convert } from './values.js';

/** What shaping reads of a registered template, and the placements it keeps on it. */
export interface ShapedTemplate {
  readonly template: AnyTemplate;
  /** The fewest distinct people a grouped row may stand for. */
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

/** Where the declared columns sit: those that are returned, the distinct-people count and the hidden cells, if any. */
export interface Placement {
  readonly returned: readonly PlacedColumn[];
  readonly people: PlacedColumn | undefined;
  readonly hidden: PlacedColumn | undefined;
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
    returned: placed.filter(
      (c) => c.treatment !== 'drop' && c.treatment !== 'distinct_people' && c.treatment !== 'hidden_groups',
    ),
    people: placed.find((c) => c.treatment === 'distinct_people'),
    hidden: placed.find((c) => c.treatment === 'hidden_groups'),
  };
  entry.placements.set(key, placement);
  return placement;
}

/** The rows a template's present() gets, and how many groups were left out as too small. */
interface ShapedRows {
  readonly rows: ResultRow[];
  readonly suppressed: number;
}

/**
 * Converts each returned column to its JSON type and applies its treatment; leaves out dropped columns,
 * and rows that stand for fewer distinct people than the threshold. The cells a `smallGroups` rule hid
 * are counted as every row gives them (the same count on each), which is why such a template must
 * return at least one row.
 */
export function shapeRows(entry: ShapedTemplate, result: RawResult, count: number, tokenize: Tokenizer): ShapedRows {
  const { returned, people, hidden } = placeColumns(entry, result.columns);
  const rows: ResultRow[] = [];
  let suppressed = 0;
  if (hidden) {
    const counted = result.rows[0]?.[hidden.index];
    const cells = typeof counted === 'string' ? Number(counted) : NaN;
    if (!Number.isInteger(cells) || cells < 0) {
      throw new ConfigError(
        `template ${entry.template.name} declares smallGroups but returned no count of hidden cells; return at least one row (a grand-total grouping set)`,
      );
    }
    suppressed += cells;
  }
  for (let r = 0; r < count; r++) {
    const raw = result.rows[r]!;
    const standsFor = people ? raw[people.index] : null;
    if (standsFor !== null && standsFor !== undefined && Number(standsFor) < entry.threshold) {
      suppressed++;
      continue;
    }
    const out: ResultRow = {};
    for (const column of returned) {
      const text = raw[column.index];
      out[column.alias] =
        text === null || text === undefined
          ? null
          : column.treatment === 'plain'
            ? convert(column.type, text)
            : treat(column, text, tokenize);
    }
    rows.push(out);
  }
  return { rows, suppressed };
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
