/**
 * The template's types: what a pack declares for one tool (its contract, its columns and their
 * treatments, its personal columns and data-scope dimensions), the context its builder gets and the
 * rows it gets back. The rest of the registry, and every pack, stands on this file, which imports
 * nothing of the registry's nor of a pack's.
 */
import type { CompiledQuery, Kysely } from 'kysely';
import type { z } from 'zod';
import type { Comparison } from '../lib/comparison.js';
import type { DataScope } from '../lib/data-scope.js';
import type { Mask, PersonalKind } from '../lib/masking.js';
import type { CountProtection } from '../lib/protected-counts.js';

/**
 * How a column's PostgreSQL text becomes JSON: `integer` a whole number, `number` any finite number (a
 * median, a ratio, hours), `money` a number rounded to cents, `date` YYYY-MM-DD, `timestamp` ISO 8601 in UTC.
 */
export type ColumnKind = 'text' | 'integer' | 'number' | 'money' | 'date' | 'timestamp';

/** A "schema.table.column" of the pack's tables; any string once a template's types are erased. */
export type SourceColumn = string;

/**
 * What the registry does with a column's value on its way out. Every column declares one:
 * - `plain`: returned as it is; only for a column no personal column is behind;
 * - `mask_email`, `mask_phone`, `initials`, `token`: the one mask of a personal column's kind (MASK_FOR);
 * - `drop`: selected for the query's own sake (an ORDER BY of a DISTINCT ON, say) and never returned,
 *   nor seen by present(); the one other treatment a personal column may have;
 * - `{ bucket: [b1, b2, …] }`: an amount returned as the range it falls in ("100 to under 500"), not itself.
 */
export type Treatment = 'plain' | Mask | 'drop' | { readonly bucket: readonly [number, ...number[]] };

export interface ColumnSpec<Source extends string = SourceColumn> {
  readonly type: ColumnKind;
  /**
   * The readable columns the value is computed from, or 'computed' when none of them is personal. A
   * personal column anywhere in the selected expression must be listed here, with its mask.
   */
  readonly source: Source | 'computed' | readonly [Source, ...Source[]];
  readonly treatment: Treatment;
}

export interface PersonalColumn {
  readonly kind: PersonalKind;
  /** For internal ids: the entity the id names, which becomes the token's prefix ("order", "ticket"). */
  readonly entity?: string;
}

/** "schema.table.column" for every column of a pack's generated table types; any string for erased types. */
export type SourceColumnOf<DB> = 0 extends 1 & DB
  ? string
  : { [T in keyof DB & string]: `${T}.${keyof DB[T] & string}` }[keyof DB & string];

/** Every column of a pack that must never leave the server raw, keyed "schema.table.column". */
export type PersonalColumns<DB = unknown> = Readonly<Partial<Record<SourceColumnOf<DB>, PersonalColumn>>>;

/**
 * A dimension along which a caller's view of the pack's data may be narrowed ("region"): a caller
 * scoped on it sees only the rows whose value is one of its own (see the templates' `dataScope`).
 */
export interface DataScopeDimension<Name extends string = string> {
  /** snake_case, as a caller's scope and an argument that filters on it name it. */
  readonly name: Name;
  /** What its values are, and which rows a value keeps: for an operator mapping identities to it. */
  readonly description: string;
}

/** The threshold of protected counts when a pack sets none: a released figure other than 0 stands for at least 5 people. */
export const DEFAULT_SMALL_GROUP_THRESHOLD = 5;

/** The seed of the person keys the start-up checks and tools without a server (doctor, tests) build with. */
export const CHECK_SEED = 'querygate-check-seed';

/**
 * The context a template's builder gets: `ctx`, and for a template that releases protected counts
 * (`protectedFigures`) the rule at `threshold` with the server's `seed`. The registry builds every
 * call's this way; so must anything else that builds a template's statement (doctor's EXPLAIN, the
 * contract suite).
 */
export function builderContext(
  template: AnyTemplate,
  ctx: QueryContext,
  threshold: number = DEFAULT_SMALL_GROUP_THRESHOLD,
  seed: string = CHECK_SEED,
): QueryContext {
  return (template.protectedFigures ?? []).length > 0 ? { ...ctx, protection: { threshold, seed } } : ctx;
}

/** What a template's builder must give back: a Kysely select the registry can cap and run. */
export interface RowQuery {
  limit(limit: number): { compile(): CompiledQuery };
}

export type CellValue = string | number | null;

export type ResultRow = Record<string, CellValue>;

export interface QueryContext {
  /** IANA time zone in which date arguments are read. */
  readonly timeZone: string;
  /**
   * The caller's data scope, given only to a template that applies it (its `dataScope`): for each
   * dimension, the values whose rows the statement must keep to, each bound as a parameter.
   * Undefined for a caller who sees every row.
   */
  readonly dataScope?: DataScope;
  /**
   * For a template that releases protected counts (`protectedFigures`): the threshold and the seed of
   * the person keys, for releasedCount() (src/lib/protected-counts.ts), which binds both as parameters.
   */
  readonly protection?: CountProtection;
}

export interface Page {
  /** True when more rows matched than were returned. */
  readonly truncated: boolean;
}

/** What every tool is for a model: its name and words, and its argument and result contracts. */
/**
 * A statement that reads nothing (LIMIT 0) over a declaration's rows, run as the reader at start-up:
 * it fails where the reader may not read them, and its `time` column, when it has one, must be a
 * timestamptz (a date or a timestamp without zone has no instant to put in the caller's zone).
 */
export interface DeclarationProbe {
  /** The declaration, as a refusal names it: "metrics of query_metrics: source <name>". */
  readonly declaration: string;
  readonly statement: Pick<CompiledQuery, 'sql' | 'parameters'>;
  /** The declared expression of the `time` column the statement selects, when it selects one. */
  readonly time?: string;
  /** The fix where the database refuses the statement for another reason than a missing grant. */
  readonly fix?: string;
  /**
   * For a count the declaration bounds (an attribute's `valuesFrom`): the statement returns one row
   * whose `n` must be at most this, else the declaration is refused with `fix`.
   */
  readonly atMost?: { readonly what: string; readonly count: number; readonly fix: string };
  /**
   * For a template's free text inputs (src/registry/checks/text-inputs.ts): the statement is prepared,
   * not run, and each of these parameters ($position) must not be read as a date, a time or an interval.
   */
  readonly textParameters?: readonly { readonly field: string; readonly position: number }[];
  /**
   * For a rollup (src/metrics/rollup-agreement.ts): the statement reads the data's newest instant,
   * `data_through`, and these are the calls over the days before it, each read from the rollup and from
   * the base rows in one snapshot; the two must return the same rows, else the declaration is refused.
   */
  readonly agrees?: (through: Date) => readonly {
    readonly call: string;
    readonly rollup: Pick<CompiledQuery, 'sql' | 'parameters'>;
    readonly base: Pick<CompiledQuery, 'sql' | 'parameters'>;
  }[];
}

export interface ToolContract<Args, Output extends Record<string, unknown>> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: z.ZodType<Args>;
  /**
   * Example arguments, as a model would send them. The first is shown in the description;
   * all must validate, and they give the start-up check its dates and numbers (see assertSelections).
   */
  readonly examples: readonly [Record<string, unknown>, ...Record<string, unknown>[]];
  readonly output: z.ZodType<Output>;
  /**
   * The argument sets the start-up checks compile, for a tool whose every combination of enumerable
   * arguments is too many (query_metrics: metrics × dimensions × filters); it says why these cover
   * every statement. Unset, the checks compile every combination (src/lib/argument-combinations.ts).
   */
  readonly checkedArguments?: readonly Record<string, unknown>[];
  /**
   * What the start-up checks ask the database about the tool's declarations (query_metrics: each
   * source's rows and time), before anything is served (src/db/doctor/declared-sources.ts).
   */
  readonly probes?: (db: Kysely<unknown>) => readonly DeclarationProbe[];
  /**
   * Markdown that querygate://catalog shows under the tool's arguments: for a tool whose arguments
   * name declared things (query_metrics: its metrics, dimensions and filters), what each means and an
   * example call per common question.
   */
  readonly guide?: string;
  /**
   * The guide one page at a time: a Markdown page per value of one thing the arguments name
   * (query_metrics: per metric), served as querygate://catalog/{tool}/{<variable>} (src/content/docs.ts), so
   * that a model reads the part it needs rather than the whole catalog.
   */
  readonly guidePages?: { readonly variable: string; readonly pages: Readonly<Record<string, string>> };
}

/**
 * A tool over one query: its contract, and one Kysely builder over the pack's tables (DB). A pack
 * writes its templates with the helper templateKit gives it (src/pack.ts).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface QueryTemplate<Args, Output extends Record<string, unknown>, DB = any> extends ToolContract<
  Args,
  Output
> {
  /** Every column the query selects, by its alias, with its type, source and treatment. */
  readonly columns: Readonly<Record<string, ColumnSpec<SourceColumnOf<DB>>>>;
  /** The pack's personal columns, which the registry holds the selected columns to. */
  readonly personal: PersonalColumns;
  /** The pack's data-scope dimensions, which `dataScope` may name (given by templateKit). */
  readonly dimensions?: readonly DataScopeDimension[];
  /** How many rows the caller asked for; the registry caps it at MAX_ROWS and fetches one more. */
  readonly rowLimit?: (args: Args) => number;
  /**
   * The data-scope dimensions (its pack's) that the query applies: for a scoped caller, `ctx.dataScope`
   * holds their values, which every branch of the query must bind (`where(column, 'in', values)`). A
   * caller scoped on a dimension the template does not apply is not served it. An argument named
   * after a dimension filters on it, and a scoped caller's value outside its scope is refused.
   */
  readonly dataScope?: readonly string[];
  /**
   * The answer's figures that are counts of people the pack protects (a metric declared `protected`):
   * the builder releases each with releasedCount() (src/lib/protected-counts.ts), never its true value.
   * At start-up, a pack that also lists those people's records in another tool is warned about.
   */
  readonly protectedFigures?: readonly string[];
  /** The query, without LIMIT: the registry adds it. Every value must be a bind parameter. */
  readonly query: (db: Kysely<DB>, args: Args, ctx: QueryContext) => RowQuery;
  /** Shapes converted, masked rows into the structured result. */
  readonly present: (rows: ResultRow[], page: Page, args: Args, ctx: QueryContext) => Output;
  /**
   * For a template whose input takes `compare_to` (src/lib/comparison.ts): merges the result for the
   * comparison range into the current one. The registry runs the template's statement once for each
   * range, so each statement covers at most the range a call may span.
   */
  compare?(current: Output, prior: Output, comparison: ComparisonEcho): Output;
  /**
   * The arguments of the comparison range's statement, from the call's (with the other range): a
   * template that pairs rows can ask for more of them there (every group, not the top few), so that a
   * group listed now finds its prior figure. Unset, the same arguments.
   */
  readonly priorArguments?: (args: Args) => Args;
  /**
   * Rows a statement returns first beside the capped ones, never counted in the cap: the totals of a
   * tool whose `limit: 100` gives 100 rows and its totals. At most this many.
   */
  readonly totalRows?: number;
  /**
   * For a tool that routes calls to rollups (query_metrics): the same tool reading only its base rows.
   * The contract suite holds every routed answer to the baseline's, so a rollup that disagrees with
   * the rows it sums fails.
   */
  readonly baseline?: () => QueryTemplate<Args, Output, DB>;
  /**
   * The pack's high-water mark (given by templateKit, or a metrics model's `dataThrough`): read before
   * each call, it becomes the answer's `data_through`, and a range still running is cut there when
   * the data stop before now.
   */
  readonly dataThrough?: HighWaterMark<DB>;
}

/**
 * How a pack reads how far its data reach: a select of one row whose one column, `data_through`, is a
 * timestamptz (the newest order, or the last load in a load log); no row or NULL when there is no data
 * yet. It runs as every statement does: through the reader role, read-only, under the statement
 * timeout, and for a scoped caller it binds every value of `ctx.dataScope` (the newest data it may see).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type HighWaterMark<DB = any> = (db: Kysely<DB>, ctx: QueryContext) => RowQuery;

/** The range a result is compared with, as compare() gets it and the result echoes it. */
export interface ComparisonEcho {
  readonly compare_to: Comparison;
  readonly start_date: string;
  readonly end_date: string;
  /** Only when the current range had not ended: this one is cut at the same local time of day, `until`. */
  readonly partial?: true;
  readonly until?: string;
}

// Templates differ in their argument and output types; the registry only needs them erased.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTemplate = QueryTemplate<any, Record<string, unknown>>;

/**
 * Every tool only reads, and only the pack's own views: closed-world. MCP's defaults are the other way
 * (readOnlyHint false, openWorldHint true), so both are said; destructiveHint and idempotentHint are
 * left out, since MCP gives them meaning only when readOnlyHint is false.
 */
export const TOOL_ANNOTATIONS = {
  readOnlyHint: true,
  openWorldHint: false,
} as const;

/** Tool names: snake_case, a verb and at least one noun (`query_order_count`). */
export const TOOL_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/;

/** Limits the configuration file sets on one template, below the template's and the server's own. */
export interface TemplateLimits {
  readonly maxRows?: number;
  readonly timeoutMs?: number;
}
