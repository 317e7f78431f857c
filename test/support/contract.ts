/**
 * The contract every template gets for free: rules written once, as functions that return what a
 * template breaks ({ rule, template, message, fix }), so that test/contract.test.ts can loop over every
 * template of every pack and a failure says which rule and how to fix it. Each rule is also run on a
 * template broken on purpose (in the suite), so none can pass by finding nothing to check.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createCompiler } from '../../src/db/connect.js';
import type { PlanCost } from '../../src/db/doctor/index.js';
import { checkedCombinations } from '../../src/lib/argument-combinations.js';
import { MAX_ROWS } from '../../src/lib/arguments.js';
import { MAX_RANGE_DAYS } from '../../src/lib/date-range.js';
import { widestArguments } from '../../src/lib/widest-arguments.js';
import type { Pack } from '../../src/pack.js';
import {
  builderContext,
  createRegistry,
  resolvePeriods,
  DEFAULT_SMALL_GROUP_THRESHOLD,
  type AnyTemplate,
  type ColumnSpec,
  type Registry,
} from '../../src/registry/index.js';

export interface Violation {
  /** The rule broken, as the suite's test names say it. */
  readonly rule: string;
  readonly template: string;
  readonly message: string;
  /** What to change so the rule holds. */
  readonly fix: string;
}

/** A tool call through a real MCP client. */
export type Call = (name: string, args: Record<string, unknown>) => Promise<CallToolResult>;

/** The assertion message: every violation with its fix, one per paragraph. */
export function explainViolations(violations: readonly Violation[]): string {
  return violations.map((v) => `[${v.rule}] ${v.template}: ${v.message}\n  fix: ${v.fix}`).join('\n\n');
}

const DAY_MS = 86_400_000;
const addDays = (day: string, n: number): string =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const ISO_DAY_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

interface Property {
  readonly type?: string;
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly anyOf?: readonly Property[];
}

/**
 * The arguments of a tool by kind, read from its whole input schema: the one `tools/list` gives with
 * what it leaves to the instructions (a period's names) put back (the registry's argumentSchemas).
 */
export interface ArgumentKinds {
  readonly dates: readonly string[];
  readonly enums: ReadonlyArray<{ readonly name: string; readonly values: readonly string[] }>;
  readonly numbers: ReadonlyArray<{
    readonly name: string;
    readonly integer: boolean;
    readonly minimum?: number;
    readonly maximum?: number;
  }>;
  readonly texts: readonly string[];
  /** start_date and end_date, the shared date range. */
  readonly range: boolean;
}

export function argumentKinds(tool: Tool): ArgumentKinds {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, Property>;
  const dates: string[] = [];
  const enums: { name: string; values: string[] }[] = [];
  const numbers: { name: string; integer: boolean; minimum?: number; maximum?: number }[] = [];
  const texts: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const values = property.enum ?? property.anyOf?.flatMap((p) => p.enum ?? []);
    if (values && values.length > 0) enums.push({ name, values: values.map(String) });
    else if (property.type === 'string' && (property.format === 'date' || property.pattern === ISO_DAY_PATTERN))
      dates.push(name);
    else if (property.type === 'integer' || property.type === 'number') {
      numbers.push({
        name,
        integer: property.type === 'integer',
        minimum: property.minimum,
        maximum: property.maximum,
      });
    } else if (property.type === 'string') texts.push(name);
  }
  return { dates, enums, numbers, texts, range: dates.includes('start_date') && dates.includes('end_date') };
}

// ---------------------------------------------------------------------------------------------------
// The description is long enough to choose by.

export const MIN_DESCRIPTION = 120;

export function descriptionViolations(template: AnyTemplate, tool: Tool): Violation[] {
  const rule = 'description';
  const found: Violation[] = [];
  const own = template.description.trim();
  if (own.length < MIN_DESCRIPTION) {
    found.push({
      rule,
      template: template.name,
      message: `the description has ${own.length} characters; a model needs at least ${MIN_DESCRIPTION} to choose between tools`,
      fix: 'say what the tool answers, when to use it ("Use it for ..."), what it leaves out and its limits',
    });
  }
  if (!/\buse (it|this tool)\b/i.test(own)) {
    found.push({
      rule,
      template: template.name,
      message: 'the description does not say when to use the tool',
      fix: 'add a sentence starting "Use it for ..." with two or three questions it answers',
    });
  }
  const shown = /Example input: (\{[^}]*\})/.exec(tool.description ?? '');
  let example: unknown;
  try {
    example = shown ? JSON.parse(shown[1]!) : undefined;
  } catch {
    example = undefined;
  }
  if (example === undefined || !template.input.safeParse(example).success) {
    found.push({
      rule,
      template: template.name,
      message: `the listed description shows no valid example input (${shown ? shown[1] : 'none'})`,
      fix: 'give `examples` argument sets a model would send; the registry appends the first to the description',
    });
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// Argument edges are enforced, through a real client.

interface Refusal {
  readonly label: string;
  readonly args: Record<string, unknown>;
  readonly field: string;
  readonly rule: RegExp;
}

/** The calls each tool must refuse, derived from its input schema, each with the field and rule the refusal must name. */
export function refusalsFor(template: AnyTemplate, tool: Tool): Refusal[] {
  const kinds = argumentKinds(tool);
  const base = { ...template.examples[0] };
  const refusals: Refusal[] = [];
  if (kinds.range && typeof base.start_date === 'string') {
    const start = base.start_date;
    refusals.push({
      label: `a range of ${MAX_RANGE_DAYS + 1} days`,
      args: { ...base, end_date: addDays(start, MAX_RANGE_DAYS) },
      field: 'end_date',
      rule: new RegExp(`at most ${MAX_RANGE_DAYS} days`),
    });
    refusals.push({
      label: 'an end before the start',
      args: { ...base, end_date: addDays(start, -1) },
      field: 'end_date',
      rule: /before/,
    });
  }
  for (const name of kinds.dates) {
    refusals.push({
      label: `${name} not a real day`,
      args: { ...base, [name]: '2025-02-30' },
      field: name,
      rule: /not a real calendar day/,
    });
    refusals.push({
      label: `${name} not in YYYY-MM-DD form`,
      args: { ...base, [name]: '2025-3-01' },
      field: name,
      rule: /YYYY-MM-DD/,
    });
  }
  for (const { name, values } of kinds.enums) {
    refusals.push({
      label: `${name} outside its set`,
      args: { ...base, [name]: 'qg_not_a_value' },
      field: name,
      // Every allowed value, in any order, so the model can pick one.
      rule: new RegExp(values.map((v) => `(?=[^]*\\b${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b)`).join('')),
    });
  }
  for (const { name, integer, minimum, maximum } of kinds.numbers) {
    if (minimum !== undefined) {
      refusals.push({
        label: `${name} ${minimum - 1}, below its minimum`,
        args: { ...base, [name]: minimum - 1 },
        field: name,
        rule: new RegExp(`(at least |>= ?)${minimum}\\b`),
      });
    }
    if (maximum !== undefined) {
      refusals.push({
        label: `${name} ${maximum + 1}, above its maximum`,
        args: { ...base, [name]: maximum + 1 },
        field: name,
        rule: new RegExp(`(at most |<= ?)${maximum}\\b`),
      });
    }
    if (integer) {
      refusals.push({
        label: `${name} not a whole number`,
        args: { ...base, [name]: (minimum ?? 0) + 1.5 },
        field: name,
        rule: /whole number|integer/,
      });
    }
  }
  refusals.push({
    label: 'an unknown argument',
    args: { ...base, qg_no_such_argument: 1 },
    field: 'qg_no_such_argument',
    rule: /not a known argument/,
  });
  return refusals;
}

export async function argumentEdgeViolations(call: Call, template: AnyTemplate, tool: Tool): Promise<Violation[]> {
  const found: Violation[] = [];
  for (const refusal of refusalsFor(template, tool)) {
    const result = await call(template.name, refusal.args);
    const text = textOf(result);
    const problem = !result.isError
      ? 'was accepted'
      : result.structuredContent !== undefined
        ? 'was refused but still carries structured content'
        : !new RegExp(`\\b${refusal.field}\\b`).test(text)
          ? `was refused without naming ${refusal.field}: ${JSON.stringify(text)}`
          : !refusal.rule.test(text)
            ? `was refused without saying the rule (${refusal.rule.source}): ${JSON.stringify(text)}`
            : undefined;
    if (problem) {
      found.push({
        rule: 'argument edges',
        template: template.name,
        message: `${refusal.label} ${JSON.stringify(refusal.args)} ${problem}`,
        fix: 'build the input from the shared argument types (dateRangeFields with checkDateRange, oneOf, rowLimit) in z.strictObject, whose messages name the field and the rule',
      });
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// Every personal column has a treatment.

/** The declared personal column a source names ("table.column" matches it in any schema, as the registry reads it). */
function personalKey(pack: Pack, source: string): string | undefined {
  return Object.keys(pack.personalColumns).find(
    (key) => key === source || (source.split('.').length === 2 && key.endsWith(`.${source}`)),
  );
}

export function sourcesOf(column: ColumnSpec): readonly string[] {
  if (column.source === 'computed') return [];
  return typeof column.source === 'string' ? [column.source] : column.source;
}

export function treatmentViolations(pack: Pack, template: AnyTemplate): Violation[] {
  const rule = 'personal columns';
  const found: Violation[] = [];
  try {
    createRegistry([template]);
  } catch (err) {
    found.push({
      rule: 'registry',
      template: template.name,
      message: `the registry refuses it: ${(err as Error).message}`,
      fix: 'do what the message says; the registry checks every argument combination at start-up',
    });
  }
  if (JSON.stringify(template.personal) !== JSON.stringify(pack.personalColumns)) {
    found.push({
      rule,
      template: template.name,
      message: `its personal-column declarations are not pack ${pack.name}'s`,
      fix: "write the template with the pack's own defineTemplate (pack/kit.ts), so it is held to the pack's personal columns",
    });
  }
  for (const [alias, column] of Object.entries(template.columns)) {
    const personal = sourcesOf(column).flatMap((source) => personalKey(pack, source) ?? []);
    if (personal.length > 0 && (column.treatment === undefined || column.treatment === 'plain')) {
      found.push({
        rule,
        template: template.name,
        message: `column ${alias} comes from personal column ${personal.join(', ')} and declares no treatment`,
        fix: `declare the treatment of ${alias} (mask_email, mask_phone, initials, token, drop, a bucket) in its columns entry`,
      });
    }
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// Every input value reaches the compiled SQL as a bind parameter, never in its text.

/** Days no template puts in its SQL by itself: a 70-day range in 1987. */
export const SENTINEL_DAYS = ['1987-06-13', '1987-08-21'] as const;
const SENTINEL_TEXT = 'qgSentinel7Q';
const ZONES = ['UTC', 'Asia/Kolkata'];

function sentinelNumber(minimum: number | undefined, maximum: number | undefined, integer: boolean): number {
  const [low, high] = [minimum ?? 0, maximum ?? 10_000];
  const value = low + (high - low) * 0.77;
  return integer ? Math.round(value) : value;
}

/** Parameter values as text: arrays flattened, dates as ISO 8601. */
function parameterTexts(parameters: readonly unknown[]): string[] {
  return parameters.flatMap((p) =>
    Array.isArray(p) ? parameterTexts(p) : [p instanceof Date ? p.toISOString() : String(p)],
  );
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function bindParameterViolations(template: AnyTemplate, tool: Tool): Violation[] {
  const rule = 'bind parameters';
  const kinds = argumentKinds(tool);
  const compiler = createCompiler();
  const found = new Map<string, Violation>();
  const flag = (key: string, message: string, fix: string): void => {
    if (!found.has(key)) found.set(key, { rule, template: template.name, message, fix });
  };
  let checked = 0;
  for (const combination of checkedCombinations(template)) {
    // A period reaches a template as the days it stands for (the registry resolves it first): the
    // combinations with days check those.
    if ('period' in combination) continue;
    const args: Record<string, unknown> = { ...combination };
    const sentinels: { name: string; value: string | number; day?: boolean }[] = [];
    kinds.dates
      .filter((name) => name in args)
      .slice(0, SENTINEL_DAYS.length)
      .forEach((name, i) => sentinels.push({ name, value: SENTINEL_DAYS[i]!, day: true }));
    for (const { name, integer, minimum, maximum } of kinds.numbers) {
      if (name in args) sentinels.push({ name, value: sentinelNumber(minimum, maximum, integer) });
    }
    for (const name of kinds.texts) if (name in args) sentinels.push({ name, value: SENTINEL_TEXT });
    for (const { name, value } of sentinels) args[name] = value;
    const parsed = template.input.safeParse(args);
    if (!parsed.success) continue; // a combination the schema refuses is never compiled for a caller either
    const data = parsed.data as Record<string, unknown>;
    for (const timeZone of ZONES) {
      const cap = Math.min(template.rowLimit?.(data) ?? MAX_ROWS, MAX_ROWS);
      const { sql, parameters } = template
        .query(compiler, data, builderContext(template, { timeZone }))
        .limit(cap + 1)
        .compile();
      const params = parameterTexts(parameters);
      checked++;
      for (const { name, value, day } of sentinels) {
        const inText = day
          ? sql.includes(String(value)) || sql.includes(String(value).slice(0, 4))
          : new RegExp(`(?<![\\w$.])${escape(String(value))}(?![\\w.])`).test(sql);
        if (inText) {
          flag(
            `${name} text`,
            `argument ${name} (${JSON.stringify(value)}) is written into the SQL text (arguments ${JSON.stringify(data)}, time zone ${timeZone})`,
            'pass every value through the builder (where(col, op, value), eb.val(), sql`${value}`), never sql.raw, sql.lit or string concatenation',
          );
        }
        if (timeZone !== 'UTC') continue; // elsewhere a day's start is another day's date
        const carried = day
          ? params.some((p) => p.includes(String(value)) || p.includes(addDays(String(value), 1)))
          : params.includes(String(value)) || (template.rowLimit?.(data) === value && params.includes(String(cap + 1)));
        if (!carried) {
          flag(
            `${name} parameter`,
            `argument ${name} (${JSON.stringify(value)}) reaches no bind parameter (arguments ${JSON.stringify(data)}); parameters ${JSON.stringify(params).slice(0, 300)}`,
            'use the argument in the query as a bound value, or drop it from the input if the SQL does not depend on it',
          );
        }
      }
      for (const { name } of kinds.enums) {
        const value = data[name];
        if (typeof value === 'string' && sql.includes(`'${value}'`)) {
          flag(
            `${name} literal`,
            `argument ${name} ("${value}") is written into the SQL text as a literal (time zone ${timeZone})`,
            'compare with the value as a bind parameter (where(col, "=", args.x)), or choose a branch of the builder by it',
          );
        }
      }
    }
  }
  if (checked === 0) {
    flag(
      'none',
      'no argument combination could be compiled with sentinel values, so nothing was checked',
      'give the template examples that validate, with dates, numbers and texts the sentinels can replace',
    );
  }
  return [...found.values()];
}

// ---------------------------------------------------------------------------------------------------
// Results validate against the listed output schema, and against the whole answer schema it outlines
// (every column typed), when one is given.

const ajv = new Ajv2020({ allErrors: true, strict: false });
const validators = new Map<object, ReturnType<typeof ajv.compile>>();

export function outputViolations(
  template: AnyTemplate,
  tool: Tool,
  label: string,
  result: CallToolResult,
  answer?: Record<string, unknown>,
): Violation[] {
  const rule = 'output schema';
  if (result.isError || result.structuredContent === undefined) {
    return [
      {
        rule,
        template: template.name,
        message: `${label} failed: ${textOf(result)}`,
        fix: 'the call must succeed: check the query against the test data, and the server log for the cause',
      },
    ];
  }
  const schemas: [string, object][] = [['outputSchema', tool.outputSchema ?? {}]];
  if (answer) schemas.push(['answer schema', answer]);
  const found: Violation[] = [];
  for (const [what, schema] of schemas) {
    let validate = validators.get(schema);
    if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
    if (validate(result.structuredContent)) continue;
    found.push({
      rule,
      template: template.name,
      message: `${label} returned structuredContent that breaks its ${what}: ${ajv.errorsText(validate.errors)}`,
      fix: 'make present() return exactly what the output schema declares',
    });
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// The row cap and `truncated` are right.

interface RowsEnvelope {
  readonly rows: unknown[];
  readonly row_count: number;
  readonly truncated: boolean;
  readonly suppressed_groups?: number;
}

/** True when a tool's whole answer schema is a capped list of rows (rowsEnvelope); its listing says only "object". */
export function returnsRows(answer: Record<string, unknown> | undefined): boolean {
  const properties = (answer?.properties ?? {}) as Record<string, unknown>;
  return 'rows' in properties && 'row_count' in properties && 'truncated' in properties;
}

/** The argument that bounds the rows returned: the one rowLimit reflects, or one named `limit`. */
export function limitArgument(template: AnyTemplate, tool: Tool, sample: Record<string, unknown>): string | undefined {
  const bounded = argumentKinds(tool).numbers.filter((n) => n.integer && n.maximum !== undefined);
  const reflected = bounded.find(({ name, minimum }) => {
    const value = (minimum ?? 1) + 1;
    const parsed = template.input.safeParse({ ...sample, [name]: value });
    return parsed.success && template.rowLimit?.(parsed.data) === value;
  });
  return reflected?.name ?? bounded.find((n) => n.name === 'limit')?.name;
}

/**
 * How many rows a template's query yields for some arguments, counted outside the server; with
 * `where`, only the rows whose column is below a number.
 */
export type CountRows = (
  statement: { sql: string; parameters: readonly unknown[] },
  where?: { readonly column: string; readonly below: number },
) => Promise<number>;

/** The template's SQL with no cap, as the registry would run it in UTC (at a small-group threshold), for an independent count. */
export function uncappedStatement(
  template: AnyTemplate,
  args: Record<string, unknown>,
  threshold: number = DEFAULT_SMALL_GROUP_THRESHOLD,
): { sql: string; parameters: readonly unknown[] } {
  // A period is resolved as the server resolves it, on today's date in UTC.
  const days = resolvePeriods(args, 'UTC', Date.now());
  return template
    .query(createCompiler(), days, builderContext(template, { timeZone: 'UTC' }, threshold))
    .limit(1_000_000_000)
    .compile();
}

/**
 * What this generic check can know: the number of rows the template's own SQL yields (counted through
 * the admin connection, outside the server's cap and present()), so that no more rows than that or the
 * cap come back, and `truncated` must be true when more rows matched than the cap. What it cannot know:
 * whether the SQL itself selects the right rows, nor whether present() loses one (it may fold a total
 * row out of `rows`): the template's end-to-end test computes its figures independently; and whether a
 * `truncated: true` that present() sets on its own (a per-group limit) is right beyond "a wider call
 * returns more rows". A template without a limit argument is only seen truncated when the test data
 * holds more than MAX_ROWS rows over its widest range.
 */
export async function rowCapViolations(
  call: Call,
  countRows: CountRows,
  template: AnyTemplate,
  tool: Tool,
  lastDay: string,
): Promise<Violation[]> {
  const rule = 'row cap';
  const found: Violation[] = [];
  const flag = (message: string, fix: string): void => void found.push({ rule, template: template.name, message, fix });
  const checkCall = async (args: Record<string, unknown>): Promise<RowsEnvelope | undefined> => {
    const parsed = template.input.parse(args) as Record<string, unknown>;
    const result = await call(template.name, args);
    if (result.isError) {
      flag(`the call ${JSON.stringify(args)} failed: ${textOf(result)}`, 'the call must succeed over the test data');
      return undefined;
    }
    const out = result.structuredContent as unknown as RowsEnvelope;
    const matched = await countRows(uncappedStatement(template, parsed));
    const cap = Math.min(template.rowLimit?.(parsed) ?? MAX_ROWS, MAX_ROWS);
    const call_ = `the call ${JSON.stringify(args)}`;
    if (out.row_count !== out.rows.length) {
      flag(
        `${call_} says row_count ${out.row_count} but returns ${out.rows.length} rows`,
        'set row_count to rows.length in present()',
      );
    }
    // Rows plus suppressed groups may be fewer than the query yields (present() may fold a total row out of
    // `rows`), never more than it yields or the cap allows. The cells a smallGroups rule hides are left
    // out by the query itself, so they are none of its rows.
    const suppressed = template.smallGroups ? 0 : (out.suppressed_groups ?? 0);
    if (out.rows.length + suppressed > Math.min(matched, cap)) {
      flag(
        `${call_} returned ${out.rows.length} rows (and suppressed ${suppressed} groups) where its query yields ${matched} and the cap is ${cap}`,
        'return at most the rows the registry hands present(), and let rowLimit say how many the caller asked for',
      );
    }
    if (matched > cap && !out.truncated) {
      flag(
        `${call_} says truncated: false, but its query yields ${matched} rows and ${cap} were returned`,
        'set truncated from the page the registry gives present() (page.truncated)',
      );
    }
    return out;
  };

  const widest = widestArguments(template, lastDay) as Record<string, unknown>[];
  if (widest.length === 0) {
    flag('no widest call could be derived from the input schema', 'give the template examples that validate');
    return found;
  }
  let fullest: { args: Record<string, unknown>; rows: number } | undefined;
  for (const args of widest) {
    const out = await checkCall(args);
    if (out && (!fullest || out.row_count > fullest.rows)) fullest = { args, rows: out.row_count };
  }
  const limit = limitArgument(template, tool, widest[0]!);
  if (limit === undefined || !fullest) return found;
  if (fullest.rows < 2) {
    flag(
      `the widest calls return at most ${fullest.rows} row, so a smaller ${limit} cannot be seen to cut them`,
      'seed the test data so that the widest range holds several rows for this template',
    );
    return found;
  }
  const minimum = argumentKinds(tool).numbers.find((n) => n.name === limit)?.minimum ?? 1;
  const small = Math.max(minimum, Math.min(3, fullest.rows - 1));
  const out = await checkCall({ ...fullest.args, [limit]: small });
  if (!out) return found;
  const call_ = `the call with ${limit} ${small}`;
  if (template.rowLimit && out.row_count > small) {
    flag(
      `${call_} returned ${out.row_count} rows`,
      `rowLimit must return args.${limit}, and the query must not add rows`,
    );
  }
  if (out.row_count === small && fullest.rows > small && !out.truncated) {
    flag(
      `${call_} returned ${small} rows and says truncated: false, though the same range gives ${fullest.rows} rows at the widest ${limit}`,
      'set truncated from page.truncated (or true when your own per-group limit cut rows)',
    );
  }
  if (out.truncated && fullest.rows <= out.row_count) {
    flag(
      `${call_} says truncated: true, but the widest ${limit} returns no more rows (${fullest.rows})`,
      'truncated must be true only when more rows matched than were returned',
    );
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------
// EXPLAIN over the widest allowed arguments stays under the pack's ceiling.

export function planViolations(plan: PlanCost): Violation[] {
  const rule = 'plan cost';
  if (plan.totalCost === undefined) {
    return [
      {
        rule,
        template: plan.tool,
        message: `EXPLAIN over its widest arguments failed: ${plan.error}`,
        fix: 'the reader must be able to plan the query: grant the columns it reads (a migration), or fix the SQL',
      },
    ];
  }
  if (plan.totalCost <= plan.maxCost) return [];
  return [
    {
      rule,
      template: plan.tool,
      message: `its plan costs ${plan.totalCost.toFixed(2)} over the widest arguments ${JSON.stringify(plan.args)}, above the pack's maxPlanCost ${plan.maxCost}`,
      fix: 'add an index or a rollup, narrow the template, or raise the pack maxPlanCost with the reason in a comment',
    },
  ];
}

// ---------------------------------------------------------------------------------------------------
// Small groups are suppressed.

/** The column that counts the distinct people behind a grouped row, if the template has one. */
export function peopleColumn(template: AnyTemplate): string | undefined {
  return Object.entries(template.columns).find(([, c]) => c.treatment === 'distinct_people')?.[0];
}

export function declaresPeopleCount(template: AnyTemplate): boolean {
  return peopleColumn(template) !== undefined;
}

/** The thresholds the check serves a template at: the lowest the registry takes, the default, one above any group. */
export const THRESHOLDS = [2, DEFAULT_SMALL_GROUP_THRESHOLD, 1_000_000] as const;

/** A registry whose every tool leaves out groups of fewer than k people. */
export function registryWithThreshold(templates: readonly AnyTemplate[], k: number): Registry {
  return createRegistry(templates, { smallGroupThresholds: Object.fromEntries(templates.map((t) => [t.name, k])) });
}

interface GroupedResult {
  readonly rows?: unknown[];
  readonly truncated?: boolean;
  readonly suppressed_groups?: number;
  readonly figures_cover?: string;
}

/** The column a `smallGroups` template counts its hidden cells in. */
const hiddenColumn = (template: AnyTemplate): string | undefined =>
  Object.entries(template.columns).find(([, c]) => c.treatment === 'hidden_groups')?.[0];

/**
 * For each example, at each threshold k: the groups the template's own SQL yields and how many of them
 * stand for fewer than k people are counted through the admin connection; the server must return the
 * others and count those in suppressed_groups. Above every group's count, every group is left out.
 */
export async function smallGroupViolations(
  callAt: (k: number, args: Record<string, unknown>) => Promise<CallToolResult>,
  countRows: CountRows,
  template: AnyTemplate,
): Promise<Violation[]> {
  const rule = 'small groups';
  const found: Violation[] = [];
  const flag = (message: string, fix: string): void => void found.push({ rule, template: template.name, message, fix });
  const people = peopleColumn(template)!;
  let seen = 0;
  for (const args of template.examples) {
    const parsed = template.input.parse(args) as Record<string, unknown>;
    // A call the rule does not hold for counts no one (query_metrics without a count of people).
    if (template.smallGroups?.appliesTo?.(parsed) === false) continue;
    // With compare_to, suppressed_groups adds the comparison range's cells, which the one statement
    // counted here does not hold: the range alone is checked by the other examples.
    if (parsed.compare_to !== undefined) continue;
    const statement = uncappedStatement(template, parsed);
    const groups = await countRows(statement);
    if (groups === 0 || groups > Math.min(template.rowLimit?.(parsed) ?? MAX_ROWS, MAX_ROWS)) continue;
    seen++;
    const hidden = hiddenColumn(template);
    for (const k of THRESHOLDS) {
      const call_ = `${JSON.stringify(args)} at threshold ${k}`;
      const result = await callAt(k, args);
      if (result.isError) {
        flag(`${call_} failed: ${textOf(result)}`, 'the example must succeed');
        continue;
      }
      const out = result.structuredContent as GroupedResult;
      const rows = out.rows?.length ?? 0;
      if (hidden) {
        // Cells of too few people are left out of the statement itself: what it yields at k must
        // stand for k people or more, and the answer must count the cells the statement says it hid.
        const atK = uncappedStatement(template, parsed, k);
        const yielded = await countRows(atK);
        const small = await countRows(atK, { column: people, below: k });
        const suppressed = out.suppressed_groups ?? -1;
        const says =
          (await countRows(atK, { column: hidden, below: suppressed + 1 })) === yielded &&
          (await countRows(atK, { column: hidden, below: suppressed })) === 0;
        const cover = suppressed > 0 ? 'visible_groups_only' : 'all';
        if (small > 0 || rows > yielded || !says || out.figures_cover !== cover) {
          flag(
            `${call_} returned ${rows} rows, suppressed_groups ${String(out.suppressed_groups)} and figures_cover ${String(out.figures_cover)}; its query yields ${yielded} rows, ${small} of them for fewer than ${k} people`,
            'build the query from visibleGroupsOnly(rows, ctx), select hiddenGroupCount(eb, rows, ctx) as the hidden_groups column, and return at least one row',
          );
        }
        if (k === THRESHOLDS[THRESHOLDS.length - 1] && (rows > 0 || suppressed <= 0)) {
          flag(
            `${call_} returned ${rows} rows and suppressed_groups ${suppressed}, above every group's people`,
            'leave every cell out above every group, and count them',
          );
        }
        continue;
      }
      const small = await countRows(statement, { column: people, below: k });
      if (out.suppressed_groups !== small || rows + small !== groups) {
        flag(
          `${call_} returned ${rows} rows and suppressed_groups ${String(out.suppressed_groups)}; its query yields ${groups} groups, ${small} of them for fewer than ${k} people`,
          `leave out every group whose ${people} is below the threshold, count them in suppressed_groups, and return the others`,
        );
      }
    }
  }
  if (seen === 0) {
    flag(
      'no example yields groups (all of them within the row cap), so suppression was never seen',
      'give the template an example over the test data that returns at least one group',
    );
  }
  return found;
}

export function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

// ---------------------------------------------------------------------------------------------------
// Routings agree with the base rows.

/** An answer without what differs between two calls of the same data: when it was read. */
function figuresOf(result: CallToolResult): unknown {
  const { data_as_of: _asOf, ...rest } = (result.structuredContent ?? {}) as Record<string, unknown>;
  return rest;
}

/**
 * For a template that routes calls to rollups (it gives a `baseline`): every call the checks compile,
 * answered by the template and by its baseline, which reads the base rows only, must be the same
 * answer. A rollup whose measures or triggers drift from the rows it sums fails here.
 */
export async function routingViolations(call: Call, base: Call, template: AnyTemplate): Promise<Violation[]> {
  const rule = 'routing';
  const found: Violation[] = [];
  let compared = 0;
  for (const args of checkedCombinations(template)) {
    const [routed, rows] = [await call(template.name, args), await base(template.name, args)];
    const call_ = JSON.stringify(args);
    if (routed.isError || rows.isError) {
      found.push({
        rule,
        template: template.name,
        message: `${call_} failed: ${textOf(routed.isError ? routed : rows)}`,
        fix: 'every checked call must succeed over the test data',
      });
      continue;
    }
    compared++;
    if (JSON.stringify(figuresOf(routed)) !== JSON.stringify(figuresOf(rows))) {
      found.push({
        rule,
        template: template.name,
        message: `${call_} answers ${JSON.stringify(figuresOf(routed)).slice(0, 300)} but its base rows give ${JSON.stringify(figuresOf(rows)).slice(0, 300)}`,
        fix: "make the rollup's measures sum what the base rows do, and rebuild it (its triggers must keep it exact)",
      });
    }
  }
  if (compared === 0) {
    found.push({
      rule,
      template: template.name,
      message: 'no checked call could be compared',
      fix: 'give the template checked calls that succeed',
    });
  }
  return found;
}
