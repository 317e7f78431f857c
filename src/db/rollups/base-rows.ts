/**
 * The names the engine gives a rollup's objects, and the rollup's rows computed from its base rows:
 * what its triggers (statements.ts), its rebuilds (rebuilds.ts) and its check (drift.ts) are written
 * from. Only names reach this text, each checked to be a lower-case SQL name (declaration.ts) and
 * double-quoted; no value ever does.
 */
import type { RollupDeclaration, RollupKey, RollupMeasure } from './declaration.js';

export const q = (name: string): string => `"${name}"`;

/** Which row (a record, a trigger's old or new, or a join alias) stands for each table of the chain. */
export type Binding = ReadonlyMap<string, string>;

export function keyValue(key: RollupKey, at: Binding): string {
  const column = `${at.get(key.from)!}.${q(key.column)}`;
  return key.truncate === undefined ? column : `date_trunc('${key.truncate}', ${column}, 'UTC')`;
}

/** A measure of one fact, as the row `fact` holds it. */
export function factMeasure(measure: RollupMeasure, fact: string): string {
  if ('count' in measure) return '1';
  return measure.sum.map((column) => `${fact}.${q(column)}`).join(' * ');
}

/** A measure of many facts aliased `f`. */
export function aggregateMeasure(measure: RollupMeasure): string {
  return 'count' in measure ? 'count(*)::bigint' : `sum(${factMeasure(measure, 'f')})`;
}

/** The facts' table, then each parent's, nearest first. */
export const chainOf = (d: RollupDeclaration): string[] => [d.facts, ...d.parents.map((p) => p.table)];

export function rollupNames(d: RollupDeclaration) {
  const fn = (suffix: string): string => `${q(d.schema)}.${q(`${d.name}_${suffix}`)}`;
  return {
    table: `${q(d.schema)}.${q(d.name)}`,
    view: `${q(d.readerSchema)}.${q(d.name)}`,
    base: (table: string): string => `${q(d.schema)}.${q(table)}`,
    add: fn('add'),
    facts: fn('facts'),
    touch: (table: string): string => fn(`touch_${table}`),
    parent: (table: string): string => fn(`on_${table}`),
    deleted: fn('deleted'),
    truncate: fn('truncate'),
    rebuild: fn('rebuild'),
    rebuildRange: fn('rebuild_range'),
    /** A parent's touches, for a parent touched apart. */
    touches: (table: string): string => `${q(d.schema)}.${q(`${d.name}_${table}_touches`)}`,
  };
}

/** The non-empty rows, as the reader's view and the check read them. */
export function rollupColumns(d: RollupDeclaration): string[] {
  return [...d.keys.map((k) => k.name), ...d.measures.map((m) => m.name)];
}

/** The columns the reader is granted on the rollup's view: every key, and every measure a template reads. */
export function readerColumns(d: RollupDeclaration): string[] {
  return [...d.keys.map((k) => k.name), ...d.measures.filter((m) => !m.unread).map((m) => m.name)];
}

/** The column that tells an empty row: the first count. */
export function sizeColumn(d: RollupDeclaration): string {
  return d.measures.find((m) => 'count' in m)!.name;
}

/** `from <facts> f join <parent 1> p1 on … join <parent n> pn on …`, up to parent `upTo` (all by default). */
export function chainJoin(d: RollupDeclaration, upTo = d.parents.length): string {
  const names = rollupNames(d);
  let text = `from ${names.base(d.facts)} f`;
  let previous = 'f';
  for (const [i, parent] of d.parents.slice(0, upTo).entries()) {
    const alias = `p${i + 1}`;
    text += ` join ${names.base(parent.table)} ${alias} on ${alias}.${q(parent.key)} = ${previous}.${q(parent.link)}`;
    previous = alias;
  }
  return text;
}

/** The alias of each table of the chain in the base rows' query: the facts `f`, the parents `p1`, `p2`. */
export const chainAliases = (d: RollupDeclaration): Binding =>
  new Map<string, string>([['facts', 'f'], ...d.parents.map((p, i): [string, string] => [p.table, `p${i + 1}`])]);

/**
 * The rollup's rows computed from the base rows: what the rebuild writes and the check compares; with
 * `within`, only those whose time key falls in [from, before) (two SQL expressions at the key's grain).
 */
export function baseRowsQuery(d: RollupDeclaration, within?: { from: string; before: string }): string {
  const at = chainAliases(d);
  const keys = d.keys.map((k) => keyValue(k, at));
  const measures = d.measures.map(aggregateMeasure);
  const groups = d.keys.map((_, i) => i + 1).join(', ');
  const key = timeKey(d);
  const time = key === undefined ? undefined : `${at.get(key.from)!}.${q(key.column)}`;
  const where = within && time ? ` where ${time} >= ${within.from} and ${time} < ${within.before}` : '';
  return `select ${[...keys, ...measures].join(', ')} ${chainJoin(d)}${where} group by ${groups}`;
}

/** The one key cut to a UTC hour or day, which a range rebuild goes by; none where there is not exactly one. */
export function timeKey(d: RollupDeclaration): RollupKey | undefined {
  const cut = d.keys.filter((k) => k.truncate !== undefined);
  return cut.length === 1 ? cut[0] : undefined;
}
