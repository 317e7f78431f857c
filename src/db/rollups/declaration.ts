/**
 * A rollup as a pack declares it: the rows it sums (facts), the rows each fact hangs from (a chain
 * of parents, nearest first), the columns it is keyed by, and what it adds up. The engine makes its
 * table, its triggers, its rebuild, its reader view and its check from this (statements.ts,
 * migration.ts, drift.ts); the isolation-safe trigger design lives there, once, and never again in
 * a pack's migrations.
 *
 * Example: amounts billed per client's country and UTC day, summed from bill lines:
 *   { name: 'country_days', schema: 'billing', readerSchema: 'billing_read', facts: 'lines',
 *     parents: [{ table: 'bills', key: 'id', link: 'bill_id' }, { table: 'clients', key: 'id', link: 'client_id' }],
 *     keys: [{ name: 'country', from: 'clients', column: 'country' },
 *            { name: 'day', from: 'bills', column: 'issued_at', truncate: 'day' }],
 *     measures: [{ name: 'line_count', count: true }, { name: 'amount', sum: ['units', 'price'], scale: 2 }] }
 * The sales pack's are in pack/rollups.ts.
 */
import { ConfigError } from '../../lib/errors.js';

/** A row the facts hang from: `<table>.<key> = <previous>.<link>`, the previous being the facts or the parent before. */
export interface RollupParent {
  readonly table: string;
  /** Its unique key column (`id`). */
  readonly key: string;
  /** The column of the previous table (the facts, or the parent before this one) that holds the key. */
  readonly link: string;
  /**
   * A small table every writer of facts reads (products, of items): the touch writes this parent's row
   * of `<schema>.<rollup>_<table>_touches` instead of the parent itself. At SERIALIZABLE a small table
   * is read whole, so writing it for every fact would refuse any two writers of facts at once.
   */
  readonly touchApart?: true;
}

/** Where the rows of a derived fact are summed by the rollups above it: their first parent, by a key of it. */
export interface DerivedFact {
  /** The first parent of every rollup that sums it (orders). */
  readonly table: string;
  /** That parent's unique key column (`id`). */
  readonly key: string;
  /** The key of this rollup, taken from a column of its facts, that holds it (`order_id`). */
  readonly link: string;
}

/** A key column of the rollup: a column of the facts or of a parent, a timestamp cut to its UTC hour or day. */
export interface RollupKey {
  readonly name: string;
  /** `facts`, or the table of a parent. */
  readonly from: string;
  readonly column: string;
  /** A timestamptz column summed per UTC hour or day. */
  readonly truncate?: 'hour' | 'day';
}

/** What a rollup adds up per key: a count of facts, or the sum of a fact column (or of two multiplied). */
export type RollupMeasure = (
  | { readonly name: string; readonly count: true }
  | {
      readonly name: string;
      readonly sum: readonly [string] | readonly [string, string];
      /** Decimal places of a money sum: numeric(18, scale). A whole-number sum (bigint) when omitted. */
      readonly scale?: number;
    }
) & {
  /**
   * No template reads it: the reader is not granted it (the reader reads only what the templates read).
   * A size count kept for its own sake still keeps empty rows out of the view.
   */
  readonly unread?: true;
};

export interface RollupDeclaration {
  /** The table `<schema>.<name>` and the reader's view `<readerSchema>.<name>`. */
  readonly name: string;
  /** The schema of the base tables, where the rollup and its functions are made too. */
  readonly schema: string;
  /** The schema of the views the reader role reads. */
  readonly readerSchema: string;
  /** The table whose rows are summed. */
  readonly facts: string;
  /** Nearest first; each is found from the one before (the first from the facts). */
  readonly parents: readonly RollupParent[];
  readonly keys: readonly RollupKey[];
  /** The first count is the rollup's size: a row whose count is 0 is empty, and the reader never sees it. */
  readonly measures: readonly RollupMeasure[];
  /**
   * Its rows are facts that other rollups sum (each order's items per category, a row an order holding
   * the category, counted once however many items it holds), declared after it in the same migration.
   * The engine then keeps no empty row (a row whose count falls to 0 is deleted, so that a count of its
   * rows counts only the keys that hold facts), makes no reader view, locks the rows of `table` its
   * writers will move FOR NO KEY UPDATE, in key order, before anything else it locks there (so that two
   * writers of it never each hold a share lock the other's touch waits for), and its rebuild mends
   * only the rows that differ, which the rollups above then follow through their own triggers.
   */
  readonly derived?: DerivedFact;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** PostgreSQL's NAMEDATALEN less one: the longest names the engine makes are `<table>_<name>_a_touch_new` and `<name>_touch_<table>`. */
const MAX_NAME = 63;
/** Chains the trigger design has been checked for: the facts, their parent, and its parent. */
const MAX_PARENTS = 2;

function fail(declaration: string, what: string, fix: string): never {
  throw new ConfigError(`rollup ${declaration}: ${what}; ${fix}`);
}

/** The table an identifier belongs to, for messages. */
function identifier(rollup: string, where: string, value: unknown): string {
  if (typeof value !== 'string' || !IDENTIFIER.test(value)) {
    fail(rollup, `${where} ${JSON.stringify(value)} is not a lower-case SQL name`, 'use letters, digits and _');
  }
  return value;
}

/**
 * Refuses a declaration the engine cannot keep exact, with a one-line message naming the field and
 * the fix. What only the database can tell (the columns exist, the foreign keys' actions) the
 * migration checks against the catalog.
 */
export function checkRollupDeclaration(d: RollupDeclaration): RollupDeclaration {
  const name = identifier(String(d.name), 'name', d.name);
  identifier(name, 'schema', d.schema);
  identifier(name, 'readerSchema', d.readerSchema);
  identifier(name, 'facts', d.facts);
  if (d.parents.length > MAX_PARENTS) {
    fail(name, `parents has ${d.parents.length} tables`, `at most ${MAX_PARENTS}: declare a rollup of a nearer table`);
  }
  const tables = [d.facts];
  for (const [i, parent] of d.parents.entries()) {
    identifier(name, `parents[${i}].table`, parent.table);
    identifier(name, `parents[${i}].key`, parent.key);
    identifier(name, `parents[${i}].link`, parent.link);
    if (tables.includes(parent.table)) {
      fail(name, `parents[${i}].table ${parent.table} is already in the chain`, 'each table may appear once');
    }
    tables.push(parent.table);
  }
  if (d.keys.length === 0) fail(name, 'keys is empty', 'key the rollup by at least one column');
  const names = new Set<string>();
  const column = (where: string, value: string): void => {
    identifier(name, where, value);
    if (names.has(value))
      fail(name, `${where} ${value} names a column twice`, 'give each key and measure its own name');
    names.add(value);
  };
  for (const [i, key] of d.keys.entries()) {
    column(`keys[${i}].name`, key.name);
    identifier(name, `keys[${i}].column`, key.column);
    if (key.from !== 'facts' && !d.parents.some((p) => p.table === key.from)) {
      fail(
        name,
        `keys[${i}].from ${JSON.stringify(key.from)} is neither facts nor a parent`,
        `use one of: ${['facts', ...d.parents.map((p) => p.table)].join(', ')}`,
      );
    }
    if (key.truncate !== undefined && key.truncate !== 'hour' && key.truncate !== 'day') {
      fail(name, `keys[${i}].truncate ${JSON.stringify(key.truncate)} is not a grain`, 'use hour or day');
    }
  }
  if (!d.measures.some((m) => 'count' in m)) {
    fail(name, 'measures has no count', "add { name: 'rows', count: true }: it tells an empty row from a zero sum");
  }
  for (const [i, measure] of d.measures.entries()) {
    column(`measures[${i}].name`, measure.name);
    if ('sum' in measure) {
      if (measure.sum.length < 1 || measure.sum.length > 2) {
        fail(name, `measures[${i}].sum has ${measure.sum.length} columns`, 'sum one column, or two multiplied');
      }
      measure.sum.forEach((c, j) => identifier(name, `measures[${i}].sum[${j}]`, c));
      if (
        measure.scale !== undefined &&
        !(Number.isInteger(measure.scale) && measure.scale >= 0 && measure.scale <= 6)
      ) {
        fail(name, `measures[${i}].scale ${measure.scale} is not 0 to 6`, 'give the decimal places of the sum');
      }
    } else if (measure.count !== true) {
      fail(name, `measures[${i}] neither counts nor sums`, 'give count: true or sum: [column]');
    }
  }
  if (d.derived !== undefined) {
    identifier(name, 'derived.table', d.derived.table);
    identifier(name, 'derived.key', d.derived.key);
    const link = d.keys.find((k) => k.name === d.derived!.link);
    if (link?.from !== 'facts' || link.truncate !== undefined) {
      fail(
        name,
        `derived.link ${JSON.stringify(d.derived.link)} is not a key taken from the facts`,
        `name the key that holds ${d.derived.table}.${d.derived.key}, one of: ${d.keys
          .filter((k) => k.from === 'facts' && k.truncate === undefined)
          .map((k) => k.name)
          .join(', ')}`,
      );
    }
  }
  const apart = d.parents.filter((p) => p.touchApart).map((p) => `${name}_${p.table}_touches`);
  for (const made of [...apart, ...tables.flatMap((t) => [`${t}_${name}_a_touch_new`, `${name}_touch_${t}`])]) {
    if (made.length > MAX_NAME) fail(name, `the name makes ${made}, over ${MAX_NAME} characters`, 'shorten the name');
  }
  return d;
}
