/**
 * The registry is the only door to the database. Templates declare; the registry enforces, in one
 * place and for every tool: argument validation, the read-only transaction, the row cap, type
 * conversion, masking, output validation and error shaping.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  AggregateFunctionNode,
  AliasNode,
  ColumnNode,
  IdentifierNode,
  ReferenceNode,
  SelectAllNode,
  SelectionNode,
  SelectQueryNode,
  type CompiledQuery,
  type Kysely,
  type OperationNode,
  type OperationNodeSource,
} from 'kysely';
import { z } from 'zod';
import { callerFields, type AuditEntry, type AuditLog, type AuditOutcome } from './audit.js';
import { createCompiler, type RawResult, type ReaderDatabase, type Statement } from './db/connect.js';
import { readSelections, UnreadableSelection, type Selection } from './db/selections.js';
import {
  ArgumentError,
  ConfigError,
  INVALID_PARAMS,
  InfraError,
  ProtocolError,
  classifyDatabaseError,
  errorResult,
  type ArgumentIssue,
} from './errors.js';
import { argumentCombinations } from './lib/argument-combinations.js';
import { MAX_ROWS } from './lib/arguments.js';
import { assertDateInputs } from './lib/date-inputs.js';
import { parseDay, quote } from './lib/date-range.js';
import { comparisonCut, comparisonRange, unequalElapsed, type Comparison } from './lib/comparison.js';
import { appliesScope, outsideScope, scopeOf, unboundScopeValues, type DataScope } from './lib/data-scope.js';
import { localToday, resolvePeriod, type Period } from './lib/periods.js';
import { isoUtc } from './lib/local-day.js';
import { cutEcho, cutRunning } from './lib/running.js';
import type { SmallGroupContext, SmallGroupRule } from './lib/small-groups.js';
import { MASK_FOR, MASKS, initials, lastFourDigits, maskEmail, type Mask, type Tokenizer } from './lib/masking.js';
import type { CallLimits } from './limits.js';
import type { Logger } from './logger.js';
import type { DataScopeDimension, PersonalColumn, PersonalColumns, PersonalKind, SourceColumnOf } from './pack.js';
import type { AnyReport, ReportContext, RunTemplate } from './reports.js';
import type { JobService, RunEnding } from './jobs/service.js';
import type { JobReader, JobRow } from './jobs/store.js';
import {
  CANCEL_ANNOTATIONS,
  CANCEL_JOB_TOOL,
  GET_ANNOTATIONS,
  GET_JOB_TOOL,
  jobIdInput,
  jobOutput,
  jobView,
  SUBMIT_ANNOTATIONS,
} from './jobs/tools.js';
import { preSerialized } from './protocol/json-rpc.js';

/**
 * How a column's PostgreSQL text becomes JSON: `integer` a whole number, `number` any finite number (a
 * median, a ratio, hours), `money` a number rounded to cents, `date` YYYY-MM-DD, `timestamp` ISO 8601 in UTC.
 */
export type ColumnKind = 'text' | 'integer' | 'number' | 'money' | 'date' | 'timestamp';

/** A "schema.table.column" of the pack's tables; any string once a template's types are erased. */
type SourceColumn = string;

/**
 * What the registry does with a column's value on its way out. Every column declares one:
 * - `plain`: returned as it is; only for a column no personal column is behind;
 * - `mask_email`, `mask_phone`, `initials`, `token`: the one mask of a personal column's kind (MASK_FOR);
 * - `drop`: selected for the query's own sake (an ORDER BY of a DISTINCT ON, say) and never returned,
 *   nor seen by present(); the one other treatment a personal column may have;
 * - `{ bucket: [b1, b2, …] }`: an amount returned as the range it falls in ("100 to under 500"), not itself;
 * - `distinct_people`: how many distinct people a grouped row stands for (a `count(distinct …)` of a
 *   personal id). A row for fewer people than the pack's threshold is left out and counted in the
 *   result's `suppressed_groups`, so that a breakdown cannot single anyone out; the count itself is
 *   never returned. NULL says the row is not about people (a branch that groups by day, say) and
 *   keeps it.
 * - `hidden_groups`: how many cells the template's `smallGroups` rule hid from every figure, selected
 *   with hiddenGroupCount() (src/lib/small-groups.ts); read into `suppressed_groups`, never returned.
 */
export type Treatment =
  'plain' | Mask | 'drop' | 'distinct_people' | 'hidden_groups' | { readonly bucket: readonly [number, ...number[]] };

export interface ColumnSpec<Source extends string = SourceColumn> {
  readonly type: ColumnKind;
  /**
   * The readable columns the value is computed from, or 'computed' when none of them is personal. A
   * personal column anywhere in the selected expression must be listed here, with its mask.
   */
  readonly source: Source | 'computed' | readonly [Source, ...Source[]];
  readonly treatment: Treatment;
}

/** The small-group threshold when a pack sets none: a breakdown row stands for at least 5 people. */
export const DEFAULT_SMALL_GROUP_THRESHOLD = 5;

/**
 * The context a template's builder gets: `ctx`, and for a template that declares `smallGroups` its
 * rule at `threshold`. The registry builds every call's this way; so must anything else that builds a
 * template's statement (doctor's EXPLAIN, the contract suite).
 */
export function builderContext(
  template: AnyTemplate,
  ctx: QueryContext,
  threshold: number = DEFAULT_SMALL_GROUP_THRESHOLD,
): QueryContext {
  return template.smallGroups ? { ...ctx, smallGroups: { ...template.smallGroups, threshold } } : ctx;
}

export interface RegistryOptions {
  /** Per tool: the fewest distinct people a grouped row may stand for (DEFAULT_SMALL_GROUP_THRESHOLD). */
  readonly smallGroupThresholds?: Readonly<Record<string, number>>;
  /** Per tool: limits the configuration file sets, below the template's and the server's own. */
  readonly limits?: Readonly<Record<string, TemplateLimits>>;
  /** Reports built from the templates (src/reports.ts), listed and called as tools beside them. */
  readonly reports?: readonly AnyReport[];
  /**
   * Whether a job store is there: then the reports that declare `job` are also served as jobs (their
   * submit tools, get_report_job and cancel_report_job). Without one they are served synchronously only.
   */
  readonly jobs?: boolean;
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
   * For a template that declares `smallGroups`: its rule and the threshold, for visibleGroupsOnly()
   * and hiddenGroupCount() (src/lib/small-groups.ts), which bind the threshold as a parameter.
   */
  readonly smallGroups?: SmallGroupContext;
}

export interface Page {
  /** True when more rows matched than were returned. */
  readonly truncated: boolean;
}

/** What every tool is for a model: its name and words, and its argument and result contracts. */
export interface ToolContract<Args, Output extends Record<string, unknown>> {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: z.ZodType<Args>;
  /**
   * Example arguments, as a model would send them. The first ones are shown in the description;
   * all must validate, and they give the start-up check its dates and numbers (see assertSelections).
   */
  readonly examples: readonly [Record<string, unknown>, ...Record<string, unknown>[]];
  readonly output: z.ZodType<Output>;
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
   * For figures that count people: who a person is and the attributes a caller can group or filter
   * by. Every branch of the query must keep to visibleGroupsOnly() and select hiddenGroupCount() under
   * a `hidden_groups` column, and must return at least one row (a grand-total grouping set), so that
   * the answer can say how many cells it left out even when it left out all of them.
   */
  readonly smallGroups?: SmallGroupRule;
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
}

/** The range a result is compared with, as compare() gets it and the result echoes it. */
export interface ComparisonEcho {
  readonly compare_to: Comparison;
  readonly start_date: string;
  readonly end_date: string;
  /** True when the current range had not ended: this one is cut at the same local time of day, `until`. */
  readonly partial: boolean;
  readonly until?: string;
}

// Templates differ in their argument and output types; the registry only needs them erased.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTemplate = QueryTemplate<any, Record<string, unknown>>;

/** Every tool only reads, always gives the same answer for the same data, and talks to nothing else. */
export const TOOL_ANNOTATIONS = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
} as const;

export interface CallDeps {
  readonly db: ReaderDatabase;
  readonly tokenize: Tokenizer;
  readonly logger: Logger;
  readonly audit: AuditLog;
  readonly limits: CallLimits;
  readonly ctx: QueryContext;
  /** False until the start-up safety check has passed against a reachable database. */
  readonly isReady: () => boolean;
  /** Aborted when a stopping server gives up waiting: calls still running are cancelled. */
  readonly shutdown?: AbortSignal;
  /** The clock `period` arguments are resolved by (milliseconds since the epoch); Date.now when unset. */
  readonly now?: () => number;
  /** The job store and runner, when one is configured (src/jobs/service.ts). */
  readonly jobs?: JobService;
}

/** Who is calling: a token's name and toolset, or the stdio session. */
export interface Caller {
  readonly id: string;
  /** The tools this caller may see and call; undefined means all. */
  readonly tools?: ReadonlySet<string>;
  /** Data-scope values by dimension: the caller sees only rows whose dimension value is one of these. Undefined or {}: unscoped. */
  readonly dataScope?: Readonly<Record<string, readonly string[]>>;
  /** Who the caller is, for the audit line only (already hashed when the configuration asks for it). */
  readonly subject?: string;
  /** The OAuth client the caller used, for the audit line only. */
  readonly clientId?: string;
}

/** The levels of a log message to the client (MCP's, from syslog). */
export type ClientLogLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency';

export interface CallOptions {
  readonly caller: Caller;
  /** Aborted when the client cancels or goes away; the running query is then cancelled. */
  readonly signal?: AbortSignal;
  /** The request's W3C trace context, written into the call's audit and log lines. */
  readonly traceparent?: string;
  /**
   * Tells the client how the call ended (MCP's notifications/message): the outcome, row count and
   * timing, or the error code. Never arguments, rows or anything personal.
   */
  readonly report?: (level: ClientLogLevel, data: Record<string, unknown>) => void;
  /** Told after each step of a call that takes several (a report's template runs): steps done, of how many. */
  readonly progress?: (done: number, total: number, message: string) => void;
  /** Told how the call ended (its audit outcome and error code): a job's runner records it. */
  readonly ended?: (ending: RunEnding) => void;
}

export interface Registry {
  /** Every tool exactly as `tools/list` returns it, computed once. */
  readonly tools: readonly Tool[];
  /**
   * The data-scope dimensions the packs of the served templates declare: a caller's scope may name
   * these only (one scoped on another sees no template).
   */
  readonly dataScopeDimensions: ReadonlySet<string>;
  /** The tools one caller may see: those of its toolset that can apply its data scope. */
  toolsFor(caller: Caller): readonly Tool[];
  /**
   * Runs a tool. Bad arguments, refusals and database trouble come back as isError results; an
   * unknown tool, or one the caller may not see, throws the protocol error -32602.
   */
  call(name: string, args: unknown, deps: CallDeps, options: CallOptions): Promise<CallToolResult>;
  /** True for a tool that runs as a job (a report that declares `job`), when jobs are served. */
  runsAsJob(name: string): boolean;
  /**
   * Whether this caller may run the report `name` as a job now (its toolset and data scope allow the
   * report or its submit tool): only then may it read, poll or cancel the report's jobs.
   */
  mayRunAsJob(caller: Caller, name: string): boolean;
  /**
   * Submits a call of a tool that runs as a job, checked as call() checks it (the caller's toolset,
   * the arguments): gives the job, or the call's error result (bad arguments, too many jobs).
   */
  submit(
    name: string,
    args: unknown,
    deps: CallDeps,
    options: CallOptions,
  ): Promise<{ readonly job: JobRow } | { readonly result: CallToolResult }>;
}

/**
 * What each data-scope dimension hides: for each dimension the served packs declare, the tools a
 * caller scoped on it does not see (the templates that do not apply it, and every report and job tool
 * that runs one of them), read from the registry's own toolsFor. Empty lists for a dimension that hides nothing.
 */
export function hiddenByDataScope(registry: Registry): Map<string, string[]> {
  const hidden = new Map<string, string[]>();
  for (const dimension of [...registry.dataScopeDimensions].sort()) {
    const seen = new Set(
      registry
        .toolsFor({ id: 'data-scope-check', dataScope: { [dimension]: ['\u0000scope-check'] } })
        .map((t) => t.name),
    );
    hidden.set(
      dimension,
      registry.tools.filter((t) => !seen.has(t.name)).map((t) => t.name),
    );
  }
  return hidden;
}

/** Tool names: snake_case, a verb and at least one noun (`query_order_count`). */
export const TOOL_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/;
const PERSONAL_LOOKING_NAME = /(^|_)(email|phone|name|first_name|last_name|id)$/;

/** Limits the configuration file sets on one template, below the template's and the server's own. */
export interface TemplateLimits {
  readonly maxRows?: number;
  readonly timeoutMs?: number;
}

/** Checks every template against the contract and refuses to build on the first violation. */
export function createRegistry(templates: readonly AnyTemplate[], options: RegistryOptions = {}): Registry {
  const byName = new Map<string, Entry>();
  const tools: Tool[] = [];
  const dimensions = new Set<string>();
  for (const template of templates) {
    assertTemplate(template);
    for (const dimension of assertDimensions(template)) dimensions.add(dimension);
    if (byName.has(template.name)) throw new ConfigError(`duplicate tool name: ${template.name}`);
    const inputSchema = jsonSchema(template.input, 'input') as Tool['inputSchema'];
    assertDateInputs(
      `template ${template.name}`,
      template.input,
      (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>,
      template.examples,
    );
    if ('compare_to' in (inputSchema.properties ?? {}) !== (template.compare !== undefined)) {
      throw new ConfigError(
        `template ${template.name}: a template that takes compare_to must declare compare(), and one that declares compare() must take compare_to`,
      );
    }
    if (!(template.output instanceof z.ZodObject))
      throw new ConfigError(`template ${template.name}: output must be an object`);
    const suppresses =
      template.smallGroups !== undefined ||
      Object.values(template.columns).some((c) => c.treatment === 'distinct_people');
    const output = template.output.extend({
      data_as_of: DATA_AS_OF,
      data_stale: DATA_STALE,
      // Only a template that applies a data scope is ever served to a scoped caller.
      ...(scopable([template]) ? { data_scope: DATA_SCOPE } : {}),
      ...(suppresses ? { suppressed_groups: SUPPRESSED_GROUPS } : {}),
      ...(template.smallGroups ? { figures_cover: FIGURES_COVER } : {}),
    });
    const threshold = options.smallGroupThresholds?.[template.name] ?? DEFAULT_SMALL_GROUP_THRESHOLD;
    if (!Number.isInteger(threshold) || threshold < 2) {
      throw new ConfigError(
        `template ${template.name}: the small-group threshold must be a whole number of at least 2`,
      );
    }
    byName.set(template.name, {
      template,
      output,
      threshold,
      suppresses,
      knownArgs: Object.keys(inputSchema.properties ?? {}),
      columns: shapedColumns(template),
      statements: new Map(),
      placements: new Map(),
    });
    assertSelections(template);
    assertBoundValues(template, inputSchema);
    tools.push({
      name: template.name,
      title: template.title,
      description: describe(template, inputSchema),
      inputSchema,
      outputSchema: jsonSchema(output, 'output') as Tool['outputSchema'],
      annotations: { title: template.title, ...TOOL_ANNOTATIONS },
    });
  }

  const reports = new Map<string, ReportEntry>();
  let jobsOutput: z.ZodObject | undefined;
  for (const report of options.reports ?? []) {
    const where = `report ${report.name}`;
    if (!TOOL_NAME.test(report.name)) throw new ConfigError(`${where}: name must be snake_case verb_noun`);
    if (byName.has(report.name) || reports.has(report.name))
      throw new ConfigError(`duplicate tool name: ${report.name}`);
    if (typeof report.description !== 'string') throw new ConfigError(`${where}: description is missing; give it one`);
    if (report.description.trim().length < 40) throw new ConfigError(`${where}: description is too short to choose by`);
    for (const used of report.uses) {
      if (byName.get(used.name)?.template !== used) {
        throw new ConfigError(`${where} runs template ${used.name}, which is not served beside it`);
      }
    }
    for (const example of report.examples) {
      if (!report.input.safeParse(example).success) {
        throw new ConfigError(`${where}: example ${JSON.stringify(example)} does not validate`);
      }
    }
    const inputSchema = jsonSchema(report.input, 'input') as Tool['inputSchema'];
    if (!(report.output instanceof z.ZodObject)) throw new ConfigError(`${where}: output must be an object`);
    const output = report.output.extend({
      data_as_of: DATA_AS_OF,
      ...(scopable(report.uses) ? { data_scope: DATA_SCOPE } : {}),
    });
    reports.set(report.name, { report, output, knownArgs: Object.keys(inputSchema.properties ?? {}) });
    tools.push({
      name: report.name,
      title: report.title,
      description: `${report.description} Example input: ${report.examples
        .slice(0, 2)
        .map((e) => JSON.stringify(e))
        .join(' or ')}.`,
      inputSchema,
      outputSchema: jsonSchema(output, 'output') as Tool['outputSchema'],
      annotations: { title: report.title, ...TOOL_ANNOTATIONS },
    });
  }

  // The reports that run as jobs, each with its submit tool, then the two tools every job shares.
  const submitTools = new Map<string, ReportEntry>();
  for (const entry of options.jobs ? reports.values() : []) {
    const { report } = entry;
    if (!report.job) continue;
    const name = report.job.submitTool;
    if (!TOOL_NAME.test(name))
      throw new ConfigError(`report ${report.name}: job.submitTool must be snake_case verb_noun`);
    if (
      byName.has(name) ||
      reports.has(name) ||
      submitTools.has(name) ||
      name === GET_JOB_TOOL ||
      name === CANCEL_JOB_TOOL
    )
      throw new ConfigError(`duplicate tool name: ${name}`);
    submitTools.set(name, entry);
    tools.push({
      name,
      title: `${report.title} (as a job)`,
      description: `${report.title}, run in the background for a client that cannot wait for it: answers at once with a job_id; poll get_report_job with it until the state is completed (the result is what ${report.name} answers) or failed, or stop it with cancel_report_job. Takes the arguments of ${report.name}. Example input: ${JSON.stringify(report.examples[0])}.`,
      inputSchema: jsonSchema(report.input, 'input') as Tool['inputSchema'],
      outputSchema: jsonSchema(jobOutput(entry.output), 'output') as Tool['outputSchema'],
      annotations: { title: `${report.title} (as a job)`, ...SUBMIT_ANNOTATIONS },
    });
  }
  const jobEntries = [...submitTools.values()];
  if (jobEntries.length > 0) {
    const results = jobEntries.map((e) => e.output);
    const anyResult = results.length === 1 ? results[0]! : z.union(results as [z.ZodType, z.ZodType, ...z.ZodType[]]);
    jobsOutput = jobOutput(anyResult);
    const polled = jobEntries.map((e) => e.report.job!.submitTool).join(', ');
    tools.push(
      {
        name: GET_JOB_TOOL,
        title: 'Report job',
        description: `The state of a report job (${polled}): pending or running with progress, completed with the report's result, failed with the reason, or cancelled. Poll it every poll_interval_ms until the state is final. Example input: {"job_id": "…"}.`,
        inputSchema: jsonSchema(jobIdInput, 'input') as Tool['inputSchema'],
        outputSchema: jsonSchema(jobsOutput, 'output') as Tool['outputSchema'],
        annotations: { title: 'Report job', ...GET_ANNOTATIONS },
      },
      {
        name: CANCEL_JOB_TOOL,
        title: 'Cancel a report job',
        description: `Stops a report job (${polled}) that is pending or running, cancelling its query on the database; answers with the job, which turns cancelled once its replica has stopped it. A finished job stays as it is. Example input: {"job_id": "…"}.`,
        inputSchema: jsonSchema(jobIdInput, 'input') as Tool['inputSchema'],
        outputSchema: jsonSchema(jobsOutput, 'output') as Tool['outputSchema'],
        annotations: { title: 'Cancel a report job', ...CANCEL_ANNOTATIONS },
      },
    );
  }
  const isJobTool = (name: string): boolean =>
    submitTools.has(name) || (jobEntries.length > 0 && (name === GET_JOB_TOOL || name === CANCEL_JOB_TOOL));
  /**
   * What a caller may see and call. Its toolset allows the tools it names, and the job tools of the
   * reports it names (or of the submit tools it names); get_report_job and cancel_report_job come with
   * any of those. Its data scope allows the templates that apply every dimension it is scoped on, and
   * the reports (and their jobs) whose templates all do.
   */
  const allowed = (caller: Caller, name: string): boolean => {
    const scope = scopeOf(caller);
    const scoped = (used: readonly AnyTemplate[]): boolean => used.every((t) => appliesScope(t.dataScope, scope));
    const named = !caller.tools || caller.tools.has(name);
    const entry = byName.get(name);
    if (entry) return named && scoped([entry.template]);
    const report = reports.get(name);
    if (report) return named && scoped(report.report.uses);
    const grants = (e: ReportEntry): boolean =>
      scoped(e.report.uses) &&
      (!caller.tools || caller.tools.has(e.report.name) || caller.tools.has(e.report.job!.submitTool));
    const submitted = submitTools.get(name);
    if (submitted) return grants(submitted);
    return isJobTool(name) && jobEntries.some((e) => (named ? scoped(e.report.uses) : grants(e)));
  };

  const mayRunAsJob = (caller: Caller, name: string): boolean => {
    const report = reports.get(name);
    return (
      report !== undefined &&
      jobEntries.includes(report) &&
      (allowed(caller, name) || allowed(caller, report.report.job!.submitTool))
    );
  };

  const limits = options.limits;
  /** Runs one of a report's templates, through the same steps as a call of the template itself. */
  const runFor =
    (
      report: AnyReport,
      deps: CallDeps,
      signal: AbortSignal,
      nowMs: number,
      scope: DataScope | undefined,
      step: (rows: number) => void,
    ): RunTemplate =>
    async (template, args, options) => {
      const entry = byName.get(template.name);
      if (!entry || entry.template !== template || !report.uses.includes(template)) {
        throw new ConfigError(`report ${report.name} ran template ${template.name}, which it does not declare`);
      }
      const parsed = entry.template.input.safeParse(args);
      if (!parsed.success) {
        throw new ConfigError(
          `report ${report.name} gave ${template.name} arguments it refuses: ${parsed.error.message}`,
        );
      }
      const resolved = resolvePeriods(parsed.data, deps.ctx.timeZone, nowMs) as Record<string, unknown>;
      // A report comparing a running range cuts the other range itself (at the same local time of day).
      if (options?.until !== undefined) resolved.until = isoUtc(options.until);
      const { data, rowCount } = await answer(entry, resolved, deps, signal, limits?.[template.name], scope);
      step(rowCount);
      return data as never;
    };

  const unknownTool = (name: string, deps: CallDeps, options: CallOptions): never => {
    deps.audit.write({
      request_id: randomUUID(),
      caller: options.caller.id,
      ...callerFields(options.caller),
      tool: String(name).slice(0, 100),
      arguments: null,
      outcome: 'unknown_tool',
      error_class: 'protocol',
      error_code: 'unknown_tool',
      duration_ms: 0,
      ...(options.traceparent === undefined ? {} : { traceparent: options.traceparent }),
    });
    // The same answer for a tool that does not exist and one outside the toolset: no probing.
    throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${JSON.stringify(String(name).slice(0, 100))}`);
  };

  return {
    tools,
    dataScopeDimensions: dimensions,
    toolsFor: (caller) => (caller.tools || scopeOf(caller) ? tools.filter((t) => allowed(caller, t.name)) : tools),
    runsAsJob: (name) => jobEntries.some((entry) => entry.report.name === name),
    mayRunAsJob,
    submit: async (name, args, deps, options) => {
      const report = reports.get(name);
      if (!report || !jobEntries.includes(report) || !allowed(options.caller, name)) {
        return unknownTool(name, deps, options);
      }
      return submitJob(report, name, args, deps, options, limits?.[report.report.name], runFor);
    },
    call: async (name, args, deps, options) => {
      if (isJobTool(name)) {
        if (!allowed(options.caller, name)) return unknownTool(name, deps, options);
        const submitted = submitTools.get(name);
        if (submitted) {
          const outcome = await submitJob(
            submitted,
            name,
            args,
            deps,
            options,
            limits?.[submitted.report.name],
            runFor,
          );
          if ('result' in outcome) return outcome.result;
          return successResult(jobView(outcome.job, deps.jobs!.pollIntervalMs));
        }
        const reader = { caller: options.caller, mayRun: (tool: string) => mayRunAsJob(options.caller, tool) };
        return lookUpJob(name === GET_JOB_TOOL ? 'get' : 'cancel', name, args, jobsOutput!, deps, options, reader);
      }
      const entry = byName.get(name);
      const report = reports.get(name);
      if ((!entry && !report) || !allowed(options.caller, name)) return unknownTool(name, deps, options);
      if (report) return runReport(report, args, deps, options, limits?.[name], runFor);
      return runTemplate(entry!, args, deps, options, limits?.[name]);
    },
  };
}

/** A registered report, with what the registry derives from it once. */
interface ReportEntry {
  readonly report: AnyReport;
  /** The report's output with data_as_of added. */
  readonly output: z.ZodType<Record<string, unknown>>;
  readonly knownArgs: readonly string[];
}

/**
 * Runs a report: its arguments validated like a template's, one admission for the whole call, each of
 * its template runs through answer() (the same statement, cap, masking and output check as a call of
 * the template), progress after each, and the report's own output checked against its schema.
 */
async function runReport(
  entry: ReportEntry,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  runFor: (
    report: AnyReport,
    deps: CallDeps,
    signal: AbortSignal,
    nowMs: number,
    scope: DataScope | undefined,
    step: (rows: number) => void,
  ) => RunTemplate,
): Promise<CallToolResult> {
  const { report } = entry;
  const record = callRecord(report.name, deps, options);
  const parsed = report.input.safeParse(rawArgs ?? {});
  if (!parsed.success) return record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, entry.knownArgs)));
  const scope = scopeOf(options.caller);
  const outside = outsideScope(parsed.data, scope);
  if (outside.length > 0) return record.reject(new ArgumentError(outside, OUTSIDE_DATA_SCOPE));
  const nowMs = (deps.now ?? Date.now)();
  const ctx: ReportContext = { ...deps.ctx, nowMs, today: localToday(deps.ctx.timeZone, nowMs) };
  let args: unknown;
  try {
    args = report.resolve ? report.resolve(parsed.data, ctx) : parsed.data;
  } catch (err) {
    if (err instanceof ArgumentError) return record.reject(err);
    throw err;
  }
  record.args = args as Record<string, unknown>;
  return admitted(record, deps, options, limit, async (signal) => {
    const total = report.steps(args, ctx);
    let done = 0;
    let rowCount = 0;
    const dataAsOf = new Date().toISOString();
    const run = runFor(report, deps, signal, nowMs, scope, (rows) => {
      rowCount += rows;
      done += 1;
      options.progress?.(done, Math.max(total, done), `${done} of ${Math.max(total, done)} queries done`);
    });
    const output = await report.build(run, args, ctx);
    // Every statement's snapshot is later than the instant taken before the first one.
    const checked = entry.output.safeParse({
      ...output,
      data_as_of: dataAsOf,
      ...(scope ? { data_scope: scope } : {}),
    });
    if (!checked.success) throw new ConfigError(`output does not match its schema: ${checked.error.message}`);
    return { data: checked.data, rowCount };
  });
}

/**
 * Submits a report as a job: its arguments checked and resolved as a call of the report would be
 * (so a mistake is told now, not when polling), then recorded in the job store, within the caller's
 * bound on jobs in flight. It takes no admission and no rate token (the job's run does, when it runs),
 * unless the report declares a check on the data: that runs first, as one admitted call of its
 * templates, so that what the run would refuse is refused now.
 */
async function submitJob(
  entry: ReportEntry,
  tool: string,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  runFor: (
    report: AnyReport,
    deps: CallDeps,
    signal: AbortSignal,
    nowMs: number,
    scope: DataScope | undefined,
    step: (rows: number) => void,
  ) => RunTemplate,
): Promise<{ readonly job: JobRow } | { readonly result: CallToolResult }> {
  const { report } = entry;
  const record = callRecord(tool, deps, options);
  const parsed = report.input.safeParse(rawArgs ?? {});
  if (!parsed.success) {
    return { result: record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, entry.knownArgs))) };
  }
  const outside = outsideScope(parsed.data, scopeOf(options.caller));
  if (outside.length > 0) return { result: record.reject(new ArgumentError(outside, OUTSIDE_DATA_SCOPE)) };
  const nowMs = (deps.now ?? Date.now)();
  const ctx: ReportContext = { ...deps.ctx, nowMs, today: localToday(deps.ctx.timeZone, nowMs) };
  let args: Record<string, unknown>;
  try {
    args = (report.resolve ? report.resolve(parsed.data, ctx) : parsed.data) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ArgumentError) return { result: record.reject(err) };
    throw err;
  }
  record.args = args;
  if (report.check) {
    // Only what the check refuses refuses the submit, as the submit's one audit line. A check that
    // cannot run (the reader down or busy, no admission) leaves the job to its run, which retries
    // transient failures and keeps the report's own check.
    let refusal: ArgumentError | undefined;
    const quiet: CallRecord = { ...record, audit: () => undefined };
    await admitted(quiet, deps, options, limit, async (signal) => {
      try {
        await report.check!(
          runFor(report, deps, signal, nowMs, scopeOf(options.caller), () => undefined),
          args,
          ctx,
        );
      } catch (err) {
        if (!(err instanceof ArgumentError)) throw err;
        refusal = err;
      }
      return { data: {}, rowCount: 0 };
    });
    if (refusal) return { result: record.reject(refusal) };
  }
  if (!deps.jobs) return { result: record.fail(new InfraError('database_unavailable'), new Error('no job store')) };
  let submitted: JobRow | { inFlight: number };
  try {
    // The job keeps its caller's data scope: every run of it, on any replica, answers within it.
    submitted = await deps.jobs.submit(options.caller, report.name, args);
  } catch (err) {
    return { result: record.fail(classifyDatabaseError(err), err) };
  }
  if ('inFlight' in submitted) {
    const { maxPerCaller } = deps.jobs.settings;
    return {
      result: record.reject(
        new ArgumentError(
          [
            {
              field: 'jobs',
              rule: `you have ${submitted.inFlight} jobs pending or running, the most one caller may have (QUERYGATE_MAX_JOBS_PER_CALLER = ${maxPerCaller}); wait for one to end (get_report_job) or cancel one (cancel_report_job), then submit again`,
            },
          ],
          'too_many_jobs',
        ),
      ),
    };
  }
  record.audit('ok');
  return { job: submitted };
}

/**
 * get_report_job and cancel_report_job: the caller's job as it stands (after asking for its cancel).
 * A job the reader may not read (another caller's, or one submitted under another data scope or
 * toolset) gets the same answer as one that never was, or expired.
 */
async function lookUpJob(
  kind: 'get' | 'cancel',
  tool: string,
  rawArgs: unknown,
  output: z.ZodType,
  deps: CallDeps,
  options: CallOptions,
  reader: JobReader,
): Promise<CallToolResult> {
  const record = callRecord(tool, deps, options);
  const parsed = jobIdInput.safeParse(rawArgs ?? {});
  if (!parsed.success) return record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, ['job_id'])));
  record.args = parsed.data;
  if (!deps.jobs) return record.fail(new InfraError('database_unavailable'), new Error('no job store'));
  let job: JobRow | undefined;
  try {
    const { job_id: id } = parsed.data;
    job = kind === 'get' ? await deps.jobs.get(reader, id) : await deps.jobs.cancel(reader, id);
  } catch (err) {
    return record.fail(classifyDatabaseError(err), err);
  }
  if (!job) {
    return record.reject(
      new ArgumentError(
        [
          {
            field: 'job_id',
            rule: `names no job of yours: it was never submitted, or it expired (a job is kept ${deps.jobs.settings.ttlSeconds} seconds after it is submitted); submit the report again`,
          },
        ],
        'unknown_job',
      ),
    );
  }
  const checked = output.safeParse(jobView(job, deps.jobs.pollIntervalMs));
  if (!checked.success) return record.fail(new InfraError('query_failed'), new Error(checked.error.message));
  record.audit('ok');
  return successResult(checked.data as Record<string, unknown>);
}

function assertTemplate(t: AnyTemplate): void {
  const where = `template ${t.name}`;
  if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
    throw new ConfigError(`${where}: name must be snake_case verb_noun`);
  }
  for (const field of ['title', 'description'] as const) {
    if (typeof t[field] !== 'string') {
      throw new ConfigError(`${where}: ${field} is missing; give it one: a text for a model choosing the tool`);
    }
  }
  if (t.title.trim() === '') throw new ConfigError(`${where}: title is empty`);
  if (t.description.trim().length < 40) throw new ConfigError(`${where}: description is too short to choose by`);
  if (typeof t.columns !== 'object' || t.columns === null || Object.keys(t.columns).length === 0) {
    throw new ConfigError(`${where}: declares no columns`);
  }
  for (const [alias, column] of Object.entries(t.columns) as [string, unknown][]) {
    if (typeof column !== 'object' || column === null) {
      throw new ConfigError(
        `${where}: column ${alias} is declared as ${quote(column)}; declare it as { type, source, treatment }, e.g. ${alias}: { type: 'text', source: 'computed', treatment: ${typeof column === 'string' ? quote(column).replaceAll('"', "'") : "'plain'"} }`,
      );
    }
  }
  if (typeof t.personal !== 'object' || t.personal === null) {
    throw new ConfigError(`${where}: has no personal-column declarations; write it with its pack's templateKit`);
  }
  const people = Object.entries(t.columns).filter(([, c]) => c.treatment === 'distinct_people');
  if (people.length > 1) {
    throw new ConfigError(
      `${where}: columns ${people.map(([a]) => a).join(', ')} are all distinct_people; declare one`,
    );
  }
  assertSmallGroups(t);
  for (const [alias, column] of Object.entries(t.columns)) {
    const { treatment } = column;
    const column_ = `${where}: column ${alias}`;
    if (treatment === undefined) {
      throw new ConfigError(
        `${column_} declares no treatment; give it one of plain, ${MASKS.join(', ')}, drop, distinct_people, hidden_groups or { bucket: [...] }`,
      );
    }
    const kinds = [...new Set(sourcesOf(column).flatMap((source) => personalAt(t.personal, source)?.kind ?? []))];
    const masks = [...new Set(kinds.map((kind) => MASK_FOR[kind]))];
    if (masks.length > 1 && treatment !== 'drop') {
      // No one treatment makes such a value safe: select each personal column on its own.
      throw new ConfigError(`${column_} combines personal columns that need different masks (${masks.join(', ')})`);
    }
    if (masks.length === 1 && treatment === 'distinct_people') {
      throw new ConfigError(
        `${column_} counts distinct people: declare its source 'computed' (a count(distinct …) returns how many, never an id)`,
      );
    }
    if (masks.length === 1) {
      if (treatment !== masks[0] && treatment !== 'drop') {
        throw new ConfigError(
          `${column_} returns personal data (${column.source}, ${kinds.join(', ')}) and must declare treatment "${masks[0]}" (or "drop" to keep it from leaving)`,
        );
      }
    } else if (typeof treatment === 'string' && (MASKS as readonly string[]).includes(treatment)) {
      throw new ConfigError(`${column_} declares treatment "${treatment}" but ${column.source} is not personal`);
    } else if (treatment === 'plain' && column.source === 'computed' && PERSONAL_LOOKING_NAME.test(alias)) {
      throw new ConfigError(`${column_} looks personal; declare its source column so it can be masked`);
    }
    if (treatment === 'token' && column.type !== 'text') {
      throw new ConfigError(`${column_} is tokenized and must be of type text`);
    }
    if (treatment === 'distinct_people' && (column.type !== 'integer' || column.source !== 'computed')) {
      throw new ConfigError(
        `${column_} counts distinct people: it must be a computed integer, such as count(distinct <a personal id>)`,
      );
    }
    if (typeof treatment === 'object') {
      const bounds = treatment.bucket;
      if (!['integer', 'number', 'money'].includes(column.type)) {
        throw new ConfigError(`${column_} is bucketed and must be of type integer, number or money`);
      }
      if (
        !Array.isArray(bounds) ||
        bounds.length === 0 ||
        bounds.some((b, k) => !Number.isFinite(b) || (k > 0 && b <= bounds[k - 1]!))
      ) {
        throw new ConfigError(`${column_}: bucket bounds must be finite numbers in ascending order`);
      }
    }
  }
}

/**
 * A template that declares `smallGroups` names a person and at least one attribute, and selects one
 * `hidden_groups` column, a computed integer; a template without the rule selects none.
 */
function assertSmallGroups(t: AnyTemplate): void {
  const where = `template ${t.name}`;
  const hidden = Object.entries(t.columns).filter(([, c]) => c.treatment === 'hidden_groups');
  const rule = t.smallGroups;
  if (!rule) {
    if (hidden.length > 0) {
      throw new ConfigError(
        `${where}: column ${hidden[0]![0]} is hidden_groups but the template declares no smallGroups; declare smallGroups: { people, by }`,
      );
    }
    return;
  }
  if (typeof rule.people !== 'string' || rule.people === '' || !Array.isArray(rule.by) || rule.by.length === 0) {
    throw new ConfigError(
      `${where}: smallGroups must name the column of a person and at least one attribute, e.g. { people: 't.requester_id', by: ['t.team_id'] }`,
    );
  }
  if (hidden.length !== 1) {
    throw new ConfigError(
      `${where}: declares smallGroups, so it must select exactly one column with treatment hidden_groups (hiddenGroupCount()); it has ${hidden.length}`,
    );
  }
  const [alias, column] = hidden[0]!;
  if (column.type !== 'integer' || column.source !== 'computed') {
    throw new ConfigError(
      `${where}: column ${alias} is hidden_groups: declare it { type: 'integer', source: 'computed' }`,
    );
  }
}

/**
 * Whether a selected expression is a scalar subquery of count(*) and nothing else: a `hidden_groups`
 * column may read personal columns (the cells it counts are of people), because it returns a count of
 * rows and never one of their values.
 */
function isRowCount(node: OperationNode): boolean {
  const subquery = AliasNode.is(node) ? node.node : node;
  if (!SelectQueryNode.is(subquery) || subquery.groupBy || subquery.setOperations) return false;
  const [only, ...more] = subquery.selections ?? [];
  if (!only || more.length > 0) return false;
  const counted = AliasNode.is(only.selection) ? only.selection.node : only.selection;
  return (
    AggregateFunctionNode.is(counted) &&
    counted.func === 'count' &&
    !counted.distinct &&
    !counted.over &&
    (counted.aggregated ?? []).every(
      (a) => SelectAllNode.is(a) || (SelectionNode.is(a) && SelectAllNode.is(a.selection)),
    )
  );
}

/** The name a selection gives its column, when it gives one. */
function selectedName(selection: SelectionNode): string | undefined {
  const node = selection.selection;
  if (AliasNode.is(node) && IdentifierNode.is(node.alias)) return node.alias.name;
  if (ReferenceNode.is(node) && ColumnNode.is(node.column)) return node.column.column.name;
  return undefined;
}

/** A pack's declaration of one "schema.table.column", if it is personal. */
function personalAt(personal: PersonalColumns, source: SourceColumn): PersonalColumn | undefined {
  return (personal as Readonly<Record<string, PersonalColumn>>)[source];
}

/** The table columns a declared column may come from; none for a computed one. */
function sourcesOf(column: ColumnSpec): readonly SourceColumn[] {
  if (column.source === 'computed') return [];
  return typeof column.source === 'string' ? [column.source] : column.source;
}

/** The description a model reads: the template's text, its first two examples, and when to give a period. */
function describe(template: AnyTemplate, inputSchema: Tool['inputSchema']): string {
  const shown = template.examples.slice(0, 2).map((e) => JSON.stringify(e));
  const relative =
    inputSchema.properties && 'period' in inputSchema.properties
      ? ' For a relative question ("last week", "this month so far") give period instead of the dates, e.g. {"period": "last_week"}: the server knows what day it is in the reporting time zone.'
      : '';
  return `${template.description} Example input: ${shown.join(' or ')}.${relative}`;
}

/**
 * A validated call's arguments with its `period`, if any, turned into the days it stands for on the
 * day `nowMs` falls on in the reporting time zone; the period stays, for the result to echo. A range
 * still running at `nowMs` gets `until`, the instant it is cut at.
 */
export function resolvePeriods(args: unknown, timeZone: string, nowMs: number): unknown {
  if (typeof args !== 'object' || args === null) return args;
  const { period } = args as { period?: Period };
  const days = period === undefined ? args : { ...args, ...resolvePeriod(period, localToday(timeZone, nowMs)) };
  // A range that has not ended is cut at the current minute (src/lib/running.ts).
  return cutRunning(days, timeZone, nowMs);
}

/** The instant start-up checks resolve periods at: any would do, a fixed one keeps the checks repeatable. */
const CHECK_NOW = Date.parse('2025-06-15T12:00:00Z');

/**
 * A whole-hour zone and a half-hour one: range templates that read hourly rollups in the first read
 * the rows themselves in the second, so both branches are checked.
 */
const CHECK_ZONES = ['UTC', 'Asia/Kolkata'];

/**
 * The threshold the start-up checks build a `smallGroups` template with: no argument is this number,
 * so seeing it bound twice (visibleGroupsOnly and hiddenGroupCount) shows the branch applies the rule.
 */
const CHECK_THRESHOLD = 987_654_321;

/** Two values of each dimension no real scope holds: the check sees every one of them bound. */
const CHECK_SCOPE_VALUES = ['\u0000scope-check-1', '\u0000scope-check-2'];

/** A call the start-up checks compile: validated arguments, and the context the builder gets. */
interface CheckedCall {
  readonly args: Record<string, unknown>;
  readonly ctx: QueryContext;
  /** Where the call is, for a refusal's message. */
  readonly branch: string;
}

/**
 * Every call the start-up checks compile: each combination of the template's enumerable and optional
 * arguments (argument-combinations.ts), in each kind of zone, for a caller who sees every row and,
 * when the template applies a data scope, for one scoped on each of its dimensions: a scoped caller's
 * statement is another statement, held to the same rules.
 */
function* checkedCalls(template: AnyTemplate): Generator<CheckedCall> {
  const where = `template ${template.name}`;
  const scopes: (DataScope | undefined)[] = [undefined];
  if ((template.dataScope ?? []).length > 0) {
    scopes.push(Object.fromEntries(template.dataScope!.map((dimension) => [dimension, CHECK_SCOPE_VALUES])));
  }
  for (const combination of argumentCombinations(where, template.input, template.examples)) {
    const parsed = template.input.safeParse(combination);
    if (!parsed.success) continue; // a combination the schema refuses is never compiled for a caller either
    for (const timeZone of CHECK_ZONES) {
      const args = resolvePeriods(parsed.data, timeZone, CHECK_NOW) as Record<string, unknown>;
      for (const dataScope of scopes) {
        yield {
          args,
          ctx: builderContext(template, { timeZone, ...(dataScope ? { dataScope } : {}) }, CHECK_THRESHOLD),
          branch: `(arguments ${JSON.stringify(parsed.data)}, time zone ${timeZone}${dataScope ? ', data scope of each dimension' : ''})`,
        };
      }
    }
  }
}

/**
 * A start-up check's call of a template's builder: what the builder throws (a TypeError of a helper
 * called with arguments its schema let through, say) becomes a one-line refusal naming the call.
 */
function startupQuery<T>(template: AnyTemplate, build: () => T, branch: string): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    throw new ConfigError(
      `template ${template.name}: query() throws ${JSON.stringify(reason.slice(0, 200))} ${branch}; ` +
        'every call its input schema accepts must build: refuse the others in the schema (dates through dateRangeFields with .superRefine(checkDateRange, DATE_RANGE_ALWAYS))',
    );
  }
}

/** The declared personal column a selected source is, if any ("table.column" matches it in any schema). */
function personalSource(
  personal: PersonalColumns,
  source: string,
): { key: SourceColumn; kind: PersonalKind } | undefined {
  for (const [key, column] of Object.entries(personal) as [SourceColumn, PersonalColumn][]) {
    if (key === source || (source.split('.').length === 2 && key.endsWith(`.${source}`))) {
      return { key, kind: column.kind };
    }
  }
  return undefined;
}

/**
 * Compiles the template for every combination of its enumerable and optional arguments, in both kinds
 * of zone, and holds the declared columns to what each really selects: every table column reached
 * anywhere in a selected expression is a source, and a personal one must be declared with its mask,
 * so a template cannot return a personal column wrapped in an expression, under another name, on a
 * branch no example reaches, or with a false `source`.
 */
function assertSelections(template: AnyTemplate): void {
  const where = `template ${template.name}`;
  for (const example of template.examples) {
    if (!template.input.safeParse(example).success) {
      throw new ConfigError(`${where}: example ${JSON.stringify(example)} does not validate`);
    }
  }
  const compiler = createCompiler();
  const declared = Object.keys(template.columns).sort();
  for (const { args, ctx, branch } of checkedCalls(template)) {
    const capped = startupQuery(template, () => template.query(compiler, args, ctx).limit(1), branch);
    // The operation tree is all the check reads: skip writing the SQL text when the builder can.
    const query =
      'toOperationNode' in capped ? (capped as OperationNodeSource).toOperationNode() : capped.compile().query;
    let selections: Selection[];
    try {
      selections = readSelections(query, Object.keys(template.personal));
    } catch (err) {
      if (!(err instanceof UnreadableSelection)) throw err;
      throw new ConfigError(`${where}: column ${err.alias} ${err.message} ${branch}`);
    }
    const aliases = selections.map((s) => s.alias).sort();
    if (JSON.stringify(aliases) !== JSON.stringify(declared)) {
      throw new ConfigError(`${where}: selects ${aliases.join(', ')} but declares ${declared.join(', ')} ${branch}`);
    }
    for (const { alias, direct, sources } of selections) {
      const column = template.columns[alias]!;
      if (column.treatment === 'hidden_groups') {
        const node = (query as SelectQueryNode).selections?.find((s) => selectedName(s) === alias)?.selection;
        if (!node || !isRowCount(node)) {
          throw new ConfigError(
            `${where}: column ${alias} is hidden_groups but is not a count(*) subquery; select hiddenGroupCount(eb, rows, ctx) under it ${branch}`,
          );
        }
        continue;
      }
      const declaredSources = sourcesOf(column);
      for (const source of sources) {
        const personal = personalSource(template.personal, source);
        if (personal && !declaredSources.includes(personal.key)) {
          throw new ConfigError(
            `${where}: column ${alias} selects ${personal.key}${direct ? '' : ' inside an expression'} but declares source ${String(column.source)}; ` +
              `a personal column (${personal.kind}) must be declared as a source with mask "${MASK_FOR[personal.kind]}" ${branch}`,
          );
        }
      }
      if (direct && declaredSources.length > 0 && sources.length > 0) {
        if (!sources.some((s) => declaredSources.includes(s as SourceColumn))) {
          throw new ConfigError(
            `${where}: column ${alias} selects ${sources.join(', ')} but declares source ${String(column.source)} ${branch}`,
          );
        }
      }
    }
  }
}

/**
 * Every value a caller chooses freely (a date, a number, free text) must reach the SQL as a bind
 * parameter: for every combination of the other arguments, in both kinds of zone, changing one such
 * value may change the statement's parameters but never its text. A value spliced in with sql.raw,
 * sql.lit, sql.id or string concatenation changes the text, and the template is refused. So is a
 * template that applies a data scope but, scoped on each of its dimensions to two values no data
 * holds, leaves one of them out of the parameters: a branch that forgot the scope, or kept one value.
 */
function assertBoundValues(template: AnyTemplate, inputSchema: Tool['inputSchema']): void {
  const where = `template ${template.name}`;
  const properties = (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const free = Object.keys(properties).filter((name) => {
    const property = properties[name]!;
    return !('enum' in property) && !('const' in property) && property.type !== 'boolean';
  });
  // The period reaches the builder as the days it stands for, which the free-value check varies.
  const enums = Object.keys(properties).flatMap((name) => {
    const values = properties[name]!.enum;
    return name !== 'period' && Array.isArray(values) ? [{ name, values: values.filter(isString) }] : [];
  });
  const compiler = createCompiler();
  for (const { args, ctx, branch } of checkedCalls(template)) {
    const compile = (values: unknown): CompiledQuery =>
      startupQuery(template, () => template.query(compiler, values, ctx).limit(1).compile(), branch);
    const statement = compile(args);
    const unbound = ctx.dataScope ? unboundScopeValues(statement.parameters, ctx.dataScope) : [];
    if (unbound.length > 0) {
      throw new ConfigError(
        `${where}: applies a data scope but binds no ${unbound.join(', ')} ${branch}; bind every value of ctx.dataScope in every branch, e.g. where(column, 'in', values)`,
      );
    }
    if (ctx.smallGroups && statement.parameters.filter((p) => p === CHECK_THRESHOLD).length < 2) {
      throw new ConfigError(
        `${where}: declares smallGroups but does not keep to it ${branch}; build every branch from visibleGroupsOnly(rows, ctx) and select hiddenGroupCount(eb, rows, ctx) (src/lib/small-groups.ts)`,
      );
    }
    for (const [field, changed] of changedValues(args, free)) {
      // The period has been resolved to days: the changed days are checked as days.
      const { period: _period, ...days } = changed;
      const other = template.input.safeParse(days);
      if (!other.success) continue;
      if (statement.sql !== compile(other.data).sql) {
        throw new ConfigError(
          `${where}: argument ${field} changes the SQL text, not only its parameters ${branch}; ` +
            'every value must reach SQL as a bind parameter: use Kysely builders or sql`${value}`, never sql.raw, sql.lit, sql.id or string concatenation',
        );
      }
    }
    const [field] = splicedEnums(enums, args, statement.sql, (values) => {
      const { period: _period, ...days } = values;
      const other = template.input.safeParse(days);
      return other.success ? compile(other.data).sql : undefined;
    });
    if (field !== undefined) {
      throw new ConfigError(
        `${where}: argument ${field} (${quote(args[field])}) is written into the SQL text ${branch}; ` +
          "compare with it as a bind parameter (where(column, '=', args." +
          field +
          '), sql`${value}`) or choose a branch of the builder by it, never sql.lit, sql.raw or string concatenation',
      );
    }
  }
}

const isString = (value: unknown): value is string => typeof value === 'string';

/**
 * The enum arguments whose value is written into a statement's text rather than bound: the value as
 * a quoted literal (what sql.lit writes), or a text that, with the value replaced by another of the
 * enum's, is exactly the other value's statement (what sql.raw or concatenation writes). A branch the
 * builder chooses by the value writes other SQL, never the value itself.
 */
function splicedEnums(
  enums: readonly { name: string; values: readonly string[] }[],
  args: Record<string, unknown>,
  sql: string,
  sqlOf: (args: Record<string, unknown>) => string | undefined,
): string[] {
  const spliced: string[] = [];
  for (const { name, values } of enums) {
    const value = args[name];
    if (!isString(value) || value === '') continue;
    if (sql.includes(`'${value.replaceAll("'", "''")}'`)) {
      spliced.push(name);
      continue;
    }
    const word = new RegExp(`(?<![\\w$"])${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w$"])`, 'g');
    if (sql.replace(word, '') === sql) continue;
    for (const other of values) {
      if (other === value) continue;
      const otherSql = sqlOf({ ...args, [name]: other });
      if (otherSql !== undefined && otherSql !== sql && sql.replace(word, () => other) === otherSql) {
        spliced.push(name);
        break;
      }
    }
  }
  return spliced;
}

/** The arguments with one freely chosen value changed at a time: dates a week later, numbers by one, text by a letter. */
function changedValues(args: Record<string, unknown>, free: readonly string[]): [string, Record<string, unknown>][] {
  const variants: [string, Record<string, unknown>][] = [];
  const shift = (day: unknown): unknown =>
    typeof day === 'string' && parseDay(day)
      ? new Date(parseDay(day)!.getTime() + 7 * 86_400_000).toISOString().slice(0, 10)
      : day;
  if (free.includes('start_date') && free.includes('end_date') && 'start_date' in args) {
    variants.push([
      'start_date/end_date',
      { ...args, start_date: shift(args.start_date), end_date: shift(args.end_date) },
    ]);
  }
  for (const name of free) {
    const value = args[name];
    if (name === 'start_date' || name === 'end_date' || value === undefined) continue;
    if (typeof value === 'number') {
      variants.push([name, { ...args, [name]: value + 1 }], [name, { ...args, [name]: value - 1 }]);
    } else if (typeof value === 'string') {
      variants.push([name, { ...args, [name]: parseDay(value) ? shift(value) : `${value}x` }]);
    }
  }
  return variants;
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  if (json.type !== 'object') throw new ConfigError(`${io} schema must be an object`);
  return json;
}

/**
 * Added to every result by the registry, so no template can leave it out. Taken before the statement
 * is sent: its snapshot is later, so it holds every commit made before this instant.
 */
const SUPPRESSED_GROUPS = z
  .number()
  .int()
  .nonnegative()
  .describe(
    'Groups left out because they stand for fewer people than the small-group threshold, so that no one can be singled out; for a tool that says figures_cover, the groups are the combinations of the attributes it groups and filters by, left out of every figure',
  );

const FIGURES_COVER = z
  .enum(['all', 'visible_groups_only'])
  .describe(
    "visible_groups_only when suppressed_groups > 0: then every figure of this answer (each group, each period and every total) leaves out what the groups that stand for too few people hold, as every grouping of the same range and filters does, so totals are those of the visible groups; 'all' when nothing was left out",
  );

const DATA_AS_OF = z
  .string()
  .describe(
    "How fresh the figures are: every row committed before this instant (ISO 8601, UTC) is in them; from a hot standby with WAL left to replay, a tool gives the time of its last replayed commit (a report: subtract the standby's lag).",
  );

/** Present on a template's answer read from a hot standby further behind its primary than the operator allows. */
const DATA_STALE = z
  .literal(true)
  .optional()
  .describe(
    'Present (true) when the figures come from a read replica further behind its primary than the server allows (QUERYGATE_MAX_REPLICA_LAG_SECONDS): recent commits are missing from them.',
  );

/** Added to every result of a scoped caller, so that a model knows its figures cover part of the data. */
const DATA_SCOPE = z
  .record(z.string(), z.array(z.string()))
  .optional()
  .describe(
    'Present when your access is limited to part of the data: for each dimension, the values whose rows the figures cover (e.g. {"region": ["Europe"]}). Every figure leaves out the rest, so totals are partial.',
  );

/** Whether a scoped caller can be served these templates at all: each applies some data scope. */
const scopable = (templates: readonly AnyTemplate[]): boolean => templates.every((t) => (t.dataScope ?? []).length > 0);

/** The code of a call refused for an argument that names data outside the caller's scope. */
const OUTSIDE_DATA_SCOPE = 'outside_data_scope';

/**
 * A template's pack's data-scope dimensions, each well formed, and the ones the template applies
 * among them: gives the names of the pack's dimensions.
 */
function assertDimensions(template: AnyTemplate): string[] {
  const declared = (template.dimensions ?? []).map((dimension) => {
    const where = `template ${template.name}: data-scope dimension ${JSON.stringify(dimension.name)}`;
    if (!/^[a-z][a-z0-9_]*$/.test(dimension.name)) throw new ConfigError(`${where}: name must be snake_case`);
    if (dimension.description.trim() === '') throw new ConfigError(`${where}: say what its values are`);
    return dimension.name;
  });
  for (const dimension of template.dataScope ?? []) {
    if (!declared.includes(dimension)) {
      throw new ConfigError(
        `template ${template.name}: applies the data-scope dimension "${dimension}", which its pack does not declare (its dimensions: ${declared.join(', ') || 'none'}); declare it in the pack's dataScope and give it to templateKit`,
      );
    }
  }
  return declared;
}

/** A registered template, with what the registry derives from it once. */
interface Entry {
  readonly template: AnyTemplate;
  /** The template's output with data_as_of (and suppressed_groups) added. */
  readonly output: z.ZodType<Record<string, unknown>>;
  /** The fewest distinct people a grouped row may stand for. */
  readonly threshold: number;
  /** True when a column counts distinct people: the result then says how many groups were left out. */
  readonly suppresses: boolean;
  readonly knownArgs: readonly string[];
  readonly columns: readonly ShapedColumn[];
  /**
   * Compiled statements by their validated arguments: the same question compiles to the same SQL
   * and parameters, so it is built once. Bounded; cleared when full.
   */
  readonly statements: Map<string, Statement>;
  /** Where the declared columns sit in the results, by the results' column names (see placeColumns). */
  readonly placements: Map<string, Placement>;
}

const MAX_CACHED_STATEMENTS = 1000;

function statementFor(entry: Entry, args: unknown, cap: number, db: ReaderDatabase, ctx: QueryContext): Statement {
  const key = `${ctx.timeZone}|${cap}|${JSON.stringify(ctx.dataScope ?? null)}|${JSON.stringify(args)}`;
  let statement = entry.statements.get(key);
  if (!statement) {
    const { sql, parameters } = entry.template
      .query(db.compiler, args, ctx)
      .limit(cap + 1)
      .compile();
    // Belt and braces: the start-up check saw every branch bind the scope; this sees this statement do it.
    const unbound = ctx.dataScope ? unboundScopeValues(parameters, ctx.dataScope) : [];
    if (unbound.length > 0) {
      throw new ConfigError(
        `template ${entry.template.name}: its statement binds no ${unbound.join(', ')} of the caller's data scope`,
      );
    }
    statement = { sql, parameters };
    if (entry.statements.size >= MAX_CACHED_STATEMENTS) entry.statements.clear();
    entry.statements.set(key, statement);
  }
  return statement;
}

const REPORT_LEVEL: Record<AuditOutcome, ClientLogLevel> = {
  ok: 'info',
  cancelled: 'info',
  rejected: 'warning',
  refused: 'warning',
  unknown_tool: 'warning',
  failed: 'error',
};

/** A template's statement failed to run: the database's error, or the call's cancellation. */
class StatementFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('statement failed');
  }
}

/**
 * Answers a validated call of a template: its statement for the range asked for (and, with
 * `compare_to`, for the comparison range), the rows shaped and presented, and the output checked
 * against its schema. A statement that fails throws StatementFailed; a template that breaks its own
 * contract throws anything else (a programmer error).
 */
async function answer(
  entry: Entry,
  args: Record<string, unknown>,
  deps: CallDeps,
  signal: AbortSignal,
  limit: TemplateLimits | undefined,
  scope: DataScope | undefined,
): Promise<{ data: Record<string, unknown>; rowCount: number }> {
  const { template } = entry;
  // The builder's context: the reporting zone, and the caller's scope for a scoped caller.
  const rule = template.smallGroups;
  const ctx = builderContext(
    template,
    { timeZone: deps.ctx.timeZone, ...(scope ? { dataScope: scope } : {}) },
    entry.threshold,
  );
  const cap = Math.min(template.rowLimit?.(args) ?? MAX_ROWS, MAX_ROWS, limit?.maxRows ?? MAX_ROWS);
  // Taken before the statement is sent: its snapshot is later, so it holds every commit made before this instant.
  // On a hot standby, the reader says how fresh its data is (an earlier instant when replay is behind).
  let dataAsOf = new Date().toISOString();
  let stale = false;
  const run = async (
    values: Record<string, unknown>,
  ): Promise<{ output: Record<string, unknown>; suppressed: number; rows: number }> => {
    // Built outside the try: a template that breaks its contract is a programmer error, not the database's.
    const statement = statementFor(entry, values, cap, deps.db, ctx);
    let result: RawResult;
    try {
      result = await deps.db.execute(statement, signal);
    } catch (err) {
      throw new StatementFailed(err);
    }
    if (result.freshness) {
      if (result.freshness.asOf !== undefined && result.freshness.asOf < dataAsOf) dataAsOf = result.freshness.asOf;
      stale ||= result.freshness.stale;
    }
    const { rows, suppressed } = shapeRows(entry, result, Math.min(result.rows.length, cap), deps.tokenize);
    const output = template.present(rows, { truncated: result.rows.length > cap }, values, ctx);
    return { output, suppressed, rows: rows.length };
  };
  const current = await run(args);
  let { output, suppressed } = current;
  const compareTo = args.compare_to as Comparison | undefined;
  if (compareTo !== undefined && template.compare) {
    const [start, end] = [args.start_date as string, args.end_date as string];
    const range = comparisonRange(start, end, compareTo);
    // A range still running is compared with the same part of the other: cut at the same local time of day.
    const until =
      typeof args.until === 'string'
        ? isoUtc(comparisonCut(start, end, compareTo, Date.parse(args.until), deps.ctx.timeZone))
        : undefined;
    const { compare_to: _compare, period: _period, until: _until, ...rest } = args;
    const prior = await run({ ...rest, ...range, ...(until ? { until } : {}) });
    output = template.compare(output, prior.output, {
      compare_to: compareTo,
      ...range,
      ...cutEcho({ until }, deps.ctx.timeZone),
    });
    suppressed += prior.suppressed;
  }
  const checked = entry.output.safeParse({
    ...output,
    data_as_of: dataAsOf,
    ...(stale ? { data_stale: true } : {}),
    ...(scope ? { data_scope: scope } : {}),
    ...(entry.suppresses ? { suppressed_groups: suppressed } : {}),
    ...(rule ? { figures_cover: suppressed > 0 ? 'visible_groups_only' : 'all' } : {}),
  });
  if (!checked.success) throw new ConfigError(`output does not match its schema: ${checked.error.message}`);
  return { data: checked.data, rowCount: current.rows };
}

/** What one call of a tool (a template or a report) reports along the way and at its end. */
interface CallRecord {
  readonly requestId: string;
  args: Record<string, unknown> | null;
  /** For a refusal: when a retry can succeed. */
  retryAfterSeconds?: number;
  audit(outcome: AuditOutcome, fields?: Partial<AuditEntry>): void;
  fail(error: InfraError, cause?: unknown): CallToolResult;
  reject(error: ArgumentError): CallToolResult;
  cancelled(): CallToolResult;
}

function callRecord(name: string, deps: CallDeps, options: CallOptions): CallRecord {
  const requestId = randomUUID();
  const started = performance.now();
  const trace = options.traceparent === undefined ? {} : { traceparent: options.traceparent };
  const record: CallRecord = {
    requestId,
    args: null,
    audit: (outcome, fields = {}) => {
      const duration = Math.round((performance.now() - started) * 100) / 100;
      deps.audit.write({
        request_id: requestId,
        caller: options.caller.id,
        ...callerFields(options.caller),
        tool: name,
        arguments: record.args,
        outcome,
        duration_ms: duration,
        ...trace,
        ...fields,
      });
      const { error_code, invalid_fields, row_count } = fields;
      options.ended?.({
        outcome,
        ...(error_code === undefined ? {} : { code: error_code }),
        ...(record.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: record.retryAfterSeconds }),
      });
      options.report?.(REPORT_LEVEL[outcome], {
        tool: name,
        outcome,
        ...(error_code === undefined ? {} : { error_code }),
        ...(invalid_fields === undefined ? {} : { invalid_fields }),
        ...(row_count === undefined ? {} : { row_count }),
        duration_ms: duration,
        request_id: requestId,
      });
    },
    fail: (error, cause) => {
      record.retryAfterSeconds = error.retryAfterSeconds;
      if (cause !== undefined) {
        deps.logger.error('tool call failed', { request_id: requestId, ...trace, ...describeCause(cause) });
      }
      record.audit(error.code === 'rate_limited' || error.code === 'busy' ? 'refused' : 'failed', {
        error_class: 'infrastructure',
        error_code: error.code,
      });
      return errorResult(error, requestId);
    },
    reject: (error) => {
      record.audit('rejected', {
        error_class: 'argument',
        error_code: error.code,
        invalid_fields: error.issues.map((i) => i.field),
      });
      return errorResult(error, requestId);
    },
    // Nobody waits for the answer to a call the client gave up on, whether it was waiting for a
    // connection or running: that is neither a refusal, a timeout nor a failure.
    cancelled: () => {
      record.audit('cancelled');
      return { isError: true, content: [{ type: 'text', text: `The call was cancelled. (request_id: ${requestId})` }] };
    },
  };
  return record;
}

/**
 * Admits a validated call, runs `work` with a signal that the client cancelling, the server stopping
 * and the configured timeout all abort (cancelling the running statement), and turns what went wrong
 * into the call's error result.
 */
async function admitted(
  record: CallRecord,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  work: (signal: AbortSignal) => Promise<{ data: Record<string, unknown>; rowCount: number }>,
): Promise<CallToolResult> {
  const admission = await deps.limits.admit(options.caller.id, options.signal);
  if (!admission.ok) {
    if (options.signal?.aborted) return record.cancelled();
    return record.fail(new InfraError(admission.code, undefined, admission.retryAfterSeconds));
  }
  const abort = new AbortController();
  const cancel = (): void => abort.abort();
  options.signal?.addEventListener('abort', cancel, { once: true });
  deps.shutdown?.addEventListener('abort', cancel, { once: true });
  if (options.signal?.aborted || deps.shutdown?.aborted) cancel();
  // A configured timeout cancels the query on the server, as the client going away does.
  let timedOut = false;
  const timer =
    limit?.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), cancel()), limit.timeoutMs);
  try {
    if (!deps.isReady()) return record.fail(new InfraError('database_unavailable'));
    const { data, rowCount } = await work(abort.signal);
    record.audit('ok', { row_count: rowCount });
    return successResult(data);
  } catch (err) {
    if (err instanceof ArgumentError) return record.reject(err);
    if (err instanceof StatementFailed) {
      if (options.signal?.aborted) return record.cancelled();
      if (deps.shutdown?.aborted) return record.fail(new InfraError('shutting_down'));
      return record.fail(timedOut ? new InfraError('timeout', err.cause) : classifyDatabaseError(err.cause), err.cause);
    }
    // A template broke its own contract: a programmer error, reported to the client as a safe failure.
    return record.fail(new InfraError('query_failed'), err);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', cancel);
    deps.shutdown?.removeEventListener('abort', cancel);
    admission.release();
  }
}

async function runTemplate(
  entry: Entry,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
): Promise<CallToolResult> {
  const record = callRecord(entry.template.name, deps, options);
  const parsed = entry.template.input.safeParse(rawArgs ?? {});
  if (!parsed.success) return record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, entry.knownArgs)));
  // A period becomes its days now, in the reporting time zone: the statement, its cache key and the
  // audit line all see the days the call covered.
  const args = resolvePeriods(parsed.data, deps.ctx.timeZone, (deps.now ?? Date.now)()) as Record<string, unknown>;
  record.args = args;
  const scope = scopeOf(options.caller);
  const outside = outsideScope(args, scope);
  if (outside.length > 0) return record.reject(new ArgumentError(outside, OUTSIDE_DATA_SCOPE));
  const unequal = unequalComparison(args, deps.ctx.timeZone);
  if (unequal) return record.reject(new ArgumentError([{ field: 'compare_to', rule: unequal }]));
  return admitted(record, deps, options, limit, (signal) => answer(entry, args, deps, signal, limit, scope));
}

/** Why a call's running range cannot be compared on equal elapsed time (src/lib/comparison.ts), if it cannot. */
function unequalComparison(args: Record<string, unknown>, timeZone: string): string | undefined {
  const compareTo = args.compare_to as Comparison | undefined;
  if (compareTo === undefined || typeof args.until !== 'string') return undefined;
  return unequalElapsed(
    args.start_date as string,
    args.end_date as string,
    compareTo,
    Date.parse(args.until),
    timeZone,
  );
}

/**
 * The result for structured output: the structure, and its JSON text in a text block for clients that
 * read text. The JSON is written once and kept on the result, so a transport can put the whole result
 * on the wire without serializing the rows a second time (see preSerialized).
 */
function successResult(data: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(data);
  return preSerialized<CallToolResult>(
    { content: [{ type: 'text', text }], structuredContent: data },
    `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`,
  );
}

/** A declared column with what shaping needs resolved once: its JSON type, treatment and token entity. */
interface ShapedColumn {
  readonly alias: string;
  readonly type: ColumnKind;
  readonly treatment: Treatment;
  /** For a tokenized column: the entity its source identifies, which prefixes the token. */
  readonly entity: string;
}

function shapedColumns(template: AnyTemplate): ShapedColumn[] {
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
interface PlacedColumn extends ShapedColumn {
  readonly index: number;
}

/** Where the declared columns sit: those that are returned, the distinct-people count and the hidden cells, if any. */
interface Placement {
  readonly returned: readonly PlacedColumn[];
  readonly people: PlacedColumn | undefined;
  readonly hidden: PlacedColumn | undefined;
}

/**
 * Where each declared column sits in a result with these column names. The result's columns must be
 * exactly the declared ones: an undeclared column is refused, whatever its position. A template's
 * statement gives the same names in the same order every time, so the answer is kept for the next call.
 */
function placeColumns(entry: Entry, names: readonly string[]): Placement {
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
function shapeRows(entry: Entry, result: RawResult, count: number, tokenize: Tokenizer): ShapedRows {
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

/** The range an amount falls in, for a model to read: "under 0", "100 to under 500", "500 or more". */
export function bucketOf(value: number, bounds: readonly [number, ...number[]]): string {
  if (value < bounds[0]) return `under ${bounds[0]}`;
  for (let k = 1; k < bounds.length; k++) {
    if (value < bounds[k]!) return `${bounds[k - 1]} to under ${bounds[k]}`;
  }
  return `${bounds.at(-1)} or more`;
}

/** PostgreSQL's text for a column, as the JSON value of its declared type. */
function convert(type: ColumnKind, text: string): CellValue {
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

/** Turns zod's issues into "field: rule" pairs a model can act on. */
function describeIssues(error: z.ZodError, rawArgs: unknown, knownArgs: readonly string[]): ArgumentIssue[] {
  return error.issues.map((issue): ArgumentIssue => {
    const field = issue.path.length > 0 ? issue.path.join('.') : 'arguments';
    if (issue.code === 'unrecognized_keys') {
      // At most five names: a call with thousands of unknown keys must not get them all echoed back.
      const shown = issue.keys.slice(0, 5).map((k) => quote(k));
      if (issue.keys.length > 5) shown.push(`and ${issue.keys.length - 5} more`);
      return {
        field: shown.join(', '),
        rule: `${issue.keys.length > 1 ? 'are not known arguments' : 'is not a known argument'}; the arguments are ${knownArgs.join(', ')}`,
      };
    }
    const value = valueAt(rawArgs, issue.path);
    if (issue.path.length === 0 && issue.code === 'invalid_type')
      return { field, rule: 'arguments must be a JSON object' };
    if (value === undefined && issue.code !== 'custom') return { field, rule: 'is required' };
    if (issue.code === 'invalid_type') {
      if (issue.expected === 'int') return { field, rule: `must be a whole number, got ${quote(value)}` };
      return { field, rule: `must be a ${issue.expected}, got ${typeName(value)}` };
    }
    return { field, rule: issue.message };
  });
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** What the log may say about a failure: the message and pg error code, never the SQL or parameters. */
function describeCause(err: unknown): Record<string, unknown> {
  if (err instanceof InfraError || err instanceof ConfigError) {
    return { class: err.name, message: err.message, ...(err.cause ? { cause: describeCause(err.cause) } : {}) };
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { class: err.name, message: err.message, ...(code ? { code } : {}) };
  }
  return { class: typeof err };
}
