/**
 * What a pack declares for its metrics layer, as data the engine compiles into one tool
 * (`query_metrics`): metrics, dimensions, filters, and the sources (rollups and base views) that serve
 * them. The engine knows no table; the pack names its views and columns here, and every fragment the
 * compiler emits keeps to the registry's rules (bind parameters, data scope, protected counts, masking).
 */
import type { Expression, ExpressionBuilder, Kysely, SelectQueryBuilder, SqlBool } from 'kysely';
import type { HighWaterMark } from '../registry/types.js';

/**
 * How a metric's figure is measured. Money is summed per currency and never across two; a number is
 * any other sum (hours, say), returned as the database computes it.
 */
export type MetricUnit = 'count' | 'money' | 'ratio' | 'number';

/** A time bucket a figure can be grouped by, in the reporting time zone. */
export type TimeGrain = 'hour' | 'day' | 'week' | 'month' | 'quarter';
/** A cyclic time dimension: the local hour of day (0-23) or the ISO weekday (Monday first). */
export type CyclicTime = 'hour_of_day' | 'weekday';
export const TIME_GRAINS: readonly TimeGrain[] = ['hour', 'day', 'week', 'month', 'quarter'];
export const CYCLIC_TIMES: readonly CyclicTime[] = ['hour_of_day', 'weekday'];
/** The most labels an attribute's `valuesFrom` may declare: more is an identifier, or free text. */
export const MAX_LISTED_VALUES = 1000;
/** The most metrics one call may ask for. */
export const MAX_METRICS = 5;

/** A figure the tool computes. */
export interface MetricDeclaration {
  /** snake_case, as arguments and answers name it. */
  readonly name: string;
  /** What it means, what it leaves out, and when to use it: a model reads it. */
  readonly description: string;
  readonly unit: MetricUnit;
  /**
   * A ratio of two other metrics, computed from their sums over the same rows (never an average of
   * averages): [numerator, denominator]. A ratio of money over a count is money.
   */
  readonly ratio?: readonly [string, string];
  /** True for a count of distinct people (measured `count_distinct` of the source's `people` column). */
  readonly people?: boolean;
  /**
   * True for a count of people the pack protects: every figure of it is released by the cell-key rule
   * (src/lib/protected-counts.ts), never 1 to threshold − 1 and with a noise of at most ±2 that the same
   * people always get, so that no subtraction of figures recovers a small count. Nothing else in the
   * call changes: things counted and money stay exact, and a ratio with a protected part is computed
   * from the released figure. Protect a count when what a few people did is not otherwise listed; a
   * pack whose row lists show single records gains nothing by it.
   */
  readonly protected?: boolean;
}

/** An attribute a figure can be grouped or filtered by. A personal column is never one. */
export interface AttributeDeclaration {
  readonly name: string;
  readonly description: string;
  /**
   * What its values are: one of these four, or the attribute is refused at start-up (a free-text
   * column, a company's name, would list or single out whoever wrote it). `values`: a closed list, the
   * only values a filter accepts.
   */
  readonly values?: readonly [string, ...string[]];
  /**
   * Labels read from the data (categories): the "schema.view.column" they are kept in, and at most how
   * many there are (at most MAX_LISTED_VALUES). Start-up counts them as the reader, and refuses the
   * attribute when there are more.
   */
  readonly valuesFrom?: { readonly column: string; readonly atMost: number };
  /**
   * A code that names a thing, not a person (a SKU): the anchored pattern every value matches, which a
   * filter value must match too, and one value it matches (the start-up checks filter by it). A pattern
   * that accepts a space or nothing is free text, and refused.
   */
  readonly identifier?: { readonly pattern: string; readonly example: string };
  /**
   * The column ("schema.view.column") of a readable name returned beside the attribute's value as
   * `<attribute>_name` (a product's name beside its sku); each source names it in `labels`.
   */
  readonly labelled?: string;
  /** The data-scope dimension this attribute is, when it is one ("region"): its values are the caller's scope's. */
  readonly scope?: string;
  /**
   * For an attribute with more values than one answer holds (SKUs): the attribute (a product group)
   * whose values each get a call of their own when its completions are read, so that all are offered.
   */
  readonly completedWithin?: string;
}

// A source's rows are of the pack's views; the engine only adds clauses to them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SourceRows = SelectQueryBuilder<any, any, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SourceBuilder = ExpressionBuilder<any, any>;

/**
 * How a source computes one metric over its rows: the aggregate, what it adds up (a column, or an
 * expression of the row), and which rows it counts (`filter (where …)`): the statuses that leave
 * revenue out, say. A count of `people` is of distinct values.
 */
export interface Measure {
  /**
   * `percentile`: the continuous percentile (`percentile_cont`, interpolated between the two nearest
   * values) of `of` at `fraction`, over rows that are each one unit of the grain (one order): a
   * source whose rows repeat a unit (an order's items) must not measure it.
   */
  readonly aggregate: 'count' | 'sum' | 'count_distinct' | 'percentile';
  /** The column or row expression summed or counted distinct; a count without it counts rows. */
  readonly of?: string | ((eb: SourceBuilder) => Expression<unknown>);
  readonly rows?: RowCondition;
  /** For a percentile: 0.5 for the median, 0.9 for the 90th percentile. */
  readonly fraction?: number;
}

/**
 * An amount each row of a source's unit carries, in the row's currency (an order's value): a call can
 * keep the rows at or above `min_<name>` and below `max_<name>`, and group or filter by `<name>_band`,
 * the band of `bands` it falls in. Answers that read it are always per currency.
 */
export interface AmountDeclaration {
  readonly name: string;
  readonly description: string;
  /** The band edges, ascending: [25, 50] gives the bands "under 25", "25-50" and "50 and over". */
  readonly bands: readonly [number, ...number[]];
}

/**
 * A unit of analysis beside the rows (dbt's entities, Cube's subquery dimensions): the customer of an
 * order. From its id on a source's rows and its whole history, the engine derives dimensions: `<name>`
 * (its opaque token: the id never leaves raw), `<name>_<counts>` (how many of the call's rows, in its
 * range, filters and scope, are the entity's: "1" … "9", "10+"), `<name>_type` (`one_time` or `repeat`
 * by that count) and `<name>_since` (`new` when its first history row ever falls in the range, else
 * `returning`). The history is read whole for `_since`, whatever the call's filters: declare an entity
 * only where a caller's data scope, if any, is a property of the entity (a customer's region), so its
 * history is in scope.
 */
export interface EntityDeclaration {
  readonly name: string;
  readonly description: string;
  /** "schema.view.column" of its id, a personal internal id: the dimension returns its token. */
  readonly id: string;
  /** Its history: the view, its id column and its time column, and the plural of what one history row is. */
  readonly history: { readonly from: string; readonly id: string; readonly time: string; readonly counts: string };
}

/**
 * One place the figures can be read from: a rollup or the base views. The engine reads, for each call,
 * the first source (in declaration order: smallest first) that serves every metric, dimension, filter
 * and data-scope dimension of the call, and whose time grain the call's range and zone allow.
 */
export interface MetricSource {
  /** For doctor and the catalog ("hourly rollup", "base rows"). */
  readonly name: string;
  /**
   * True for a rollup (a table the database keeps summed beside the base views): a routing, which
   * must give the same answers as the base views it sums (the contract suite compares them).
   */
  readonly rollup?: boolean;
  /** The rows, with their joins and without a selection; every reference below is to their aliases. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly rows: (db: Kysely<any>) => SourceRows;
  /** "schema.view" of every relation the rows read, for the column declarations' sources. */
  readonly reads: readonly string[];
  /** The timestamp column ranges and time dimensions read ("o.ordered_at"); a stock's rows hold from it. */
  readonly time: string;
  /**
   * For a source of stock figures (MRR, open balances, subscribed accounts: semi-additive measures):
   * the timestamptz column of the instant each row stops holding, null while it still holds. Its
   * metrics are figures as of an instant, added up over the rows that hold then (started before it,
   * not ended before it) and never over time: as of the end of each time bucket a call groups by, or
   * of its range, and, in a range that has not ended, as of the newest data. Such a source is base
   * rows (no rollup, no timeGrain), names no entity, and cannot group by an hour or a weekday.
   */
  readonly until?: string;
  /**
   * 'hour' for a rollup keyed by whole UTC hours: it serves a call only when every bound of the range
   * falls on a whole UTC hour (zones with whole-hour offsets, a range not cut inside an hour). 'day'
   * for one keyed by UTC days: it serves a call only when every bound falls on a UTC midnight (the
   * reporting zone is UTC on those days) and the call groups by no hour.
   */
  readonly timeGrain?: 'hour' | 'day';
  /** The currency column of its money figures; required of a source that measures money. */
  readonly currency?: string;
  /** The attributes it can group and filter by, as the column of each ("c.region"). */
  readonly attributes: Readonly<Record<string, string>>;
  /** A readable name beside an attribute's value, returned as `<attribute>_name` ({ product: 'p.name' }). */
  readonly labels?: Readonly<Record<string, string>>;
  /** The metrics it computes, by name; ratios come from their parts. */
  readonly measures: Readonly<Record<string, Measure>>;
  /** The column of a person, for metrics that count people: a protected count keys its cells by it. */
  readonly people?: string;
  /** The model's amounts its rows carry, as the column of each ({ order_value: 'o.total_amount' }). */
  readonly amounts?: Readonly<Record<string, string>>;
  /** The model's entities its rows name, as the column of each id ({ customer: 'o.customer_id' }). */
  readonly entities?: Readonly<Record<string, string>>;
}

/** Everything a pack declares for `query_metrics`. */
export interface MetricsModel {
  /**
   * The tool's name, `query_metrics` unless given: packs served together each derive one tool, and
   * tool names must differ, so every pack but one names its own (snake_case, starting `query_`).
   */
  readonly toolName?: string;
  readonly metrics: readonly MetricDeclaration[];
  readonly attributes: readonly AttributeDeclaration[];
  readonly sources: readonly MetricSource[];
  readonly amounts?: readonly AmountDeclaration[];
  readonly entities?: readonly EntityDeclaration[];
  /** The tool's words for a model beyond the generated ones: what the figures are about. */
  readonly subject: string;
  /** The pack's high-water mark, the one its templateKit is given (src/pack.ts): answers then say data_through. */
  readonly dataThrough?: HighWaterMark;
  /** Common questions and the call that answers each, for querygate://catalog (the first few also check the tool at start-up). */
  readonly questions?: readonly { readonly question: string; readonly arguments: Record<string, unknown> }[];
}

/** Helper for a source's filter expression: `where` conditions are written with the builder. */
export type RowCondition = (eb: SourceBuilder) => Expression<SqlBool>;
