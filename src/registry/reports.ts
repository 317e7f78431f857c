/**
 * The report adapter: a report served as a tool beside its templates, each of its template runs
 * through answer(), the same door as a call of the template itself.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ArgumentError, ConfigError } from '../lib/errors.js';
import { outsideScope, scopeOf, type DataScope } from '../lib/data-scope.js';
import { isoUtc } from '../lib/local-day.js';
import { localToday } from '../lib/periods.js';
import type { AnyReport, ReportContext, RunTemplate } from '../reports.js';
import { admitted } from './call/admission.js';
import { answer } from './call/answer.js';
import { readDataThrough } from './call/data-through.js';
import { describeIssues, OUTSIDE_DATA_SCOPE } from './call/issues.js';
import { callRecord, type CallRecord } from './call/record.js';
import type { Entry, ReportEntry } from './entries.js';
import type { CallDeps, CallOptions } from './interface.js';
import { DATA_AS_OF, DATA_SCOPE, DATA_THROUGH, scopable } from './outputs.js';
import { resolvePeriods } from './periods.js';
import { jsonSchema, outline } from './tools.js';
import { TOOL_ANNOTATIONS, TOOL_NAME, type HighWaterMark, type TemplateLimits } from './types.js';

export interface ServedReports {
  readonly byName: ReadonlyMap<string, ReportEntry>;
  readonly tools: readonly Tool[];
  /** Each report's whole answer schema, which its listing outlines. */
  readonly answers: ReadonlyMap<string, Record<string, unknown>>;
}

/** Checks each report (its name, words, examples, output, and that its templates are served) and lists it. */
export function serveReports(reports: readonly AnyReport[], templates: ReadonlyMap<string, Entry>): ServedReports {
  const byName = new Map<string, ReportEntry>();
  const tools: Tool[] = [];
  const answers = new Map<string, Record<string, unknown>>();
  for (const report of reports) {
    const where = `report ${report.name}`;
    if (!TOOL_NAME.test(report.name)) throw new ConfigError(`${where}: name must be snake_case verb_noun`);
    if (templates.has(report.name) || byName.has(report.name))
      throw new ConfigError(`duplicate tool name: ${report.name}`);
    if (typeof report.description !== 'string') throw new ConfigError(`${where}: description is missing; give it one`);
    if (report.description.trim().length < 40) throw new ConfigError(`${where}: description is too short to choose by`);
    for (const used of report.uses) {
      if (templates.get(used.name)?.template !== used) {
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
      ...(highWaterMark(report) ? { data_through: DATA_THROUGH } : {}),
      ...(scopable(report.uses) ? { data_scope: DATA_SCOPE } : {}),
    });
    byName.set(report.name, { report, output, knownArgs: Object.keys(inputSchema.properties ?? {}) });
    const answer = jsonSchema(output, 'output', inputSchema);
    answers.set(report.name, answer);
    tools.push({
      name: report.name,
      title: report.title,
      description: `${report.description} Example input: ${JSON.stringify(report.examples[0])}.`,
      inputSchema,
      outputSchema: outline(answer) as Tool['outputSchema'],
      annotations: TOOL_ANNOTATIONS,
    });
  }
  return { byName, tools, answers };
}

/** The high-water mark of the pack a report reads, when its templates declare one. */
const highWaterMark = (report: AnyReport): HighWaterMark | undefined =>
  report.uses.find((t) => t.dataThrough)?.dataThrough;

/** Gives a report's run (or its check) the way to run one of its templates for one call. */
export type RunFor = (
  report: AnyReport,
  deps: CallDeps,
  signal: AbortSignal,
  nowMs: number,
  scope: DataScope | undefined,
  step: (rows: number) => void,
) => RunTemplate;

/** Runs one of a report's templates, through the same steps as a call of the template itself. */
export function reportRunner(
  templates: ReadonlyMap<string, Entry>,
  limits: Readonly<Record<string, TemplateLimits>> | undefined,
): RunFor {
  return (report, deps, signal, nowMs, scope, step) => async (template, args, options) => {
    const entry = templates.get(template.name);
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
    const { data, rowCount } = await answer(entry, resolved, deps, signal, limits?.[template.name], scope, true);
    step(rowCount);
    return data as never;
  };
}

/** A report call's arguments, checked and resolved, with the instant and context it runs at. */
export interface ReportCall {
  readonly args: Record<string, unknown>;
  readonly ctx: ReportContext;
  readonly nowMs: number;
  readonly scope: DataScope | undefined;
}

/**
 * A call of a report (or its submit) checked as a template's call is: its arguments validated, none
 * naming data outside the caller's scope, then resolved by the report; gives the call's refusal when not.
 */
export function reportCall(
  entry: ReportEntry,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  record: CallRecord,
): ReportCall | { readonly refused: CallToolResult } {
  const { report } = entry;
  const parsed = report.input.safeParse(rawArgs ?? {});
  if (!parsed.success) {
    return { refused: record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, entry.knownArgs))) };
  }
  const scope = scopeOf(options.caller);
  const outside = outsideScope(parsed.data, scope);
  if (outside.length > 0) return { refused: record.reject(new ArgumentError(outside, OUTSIDE_DATA_SCOPE)) };
  const nowMs = (deps.now ?? Date.now)();
  const ctx: ReportContext = { ...deps.ctx, nowMs, today: localToday(deps.ctx.timeZone, nowMs) };
  let args: Record<string, unknown>;
  try {
    args = (report.resolve ? report.resolve(parsed.data, ctx) : parsed.data) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof ArgumentError) return { refused: record.reject(err) };
    throw err;
  }
  record.args = args;
  return { args, ctx, nowMs, scope };
}

/**
 * Runs a report: its arguments validated like a template's, one admission for the whole call, each of
 * its template runs through answer() (the same statement, cap, masking and output check as a call of
 * the template), progress after each, and the report's own output checked against its schema.
 */
export async function runReport(
  entry: ReportEntry,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  runFor: RunFor,
): Promise<CallToolResult> {
  const { report } = entry;
  const record = callRecord(report.name, deps, options);
  const call = reportCall(entry, rawArgs, deps, options, record);
  if ('refused' in call) return call.refused;
  const { args, ctx, nowMs, scope } = call;
  return admitted(record, deps, options, limit, async (signal) => {
    const total = report.steps(args, ctx);
    let done = 0;
    let rowCount = 0;
    const dataAsOf = new Date().toISOString();
    // Read before the figures, as a template's call reads it: they hold every row up to it.
    const mark = highWaterMark(report);
    const dataThrough = mark
      ? await readDataThrough(mark, deps.db, signal, {
          timeZone: deps.ctx.timeZone,
          ...(scope ? { dataScope: scope } : {}),
        })
      : undefined;
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
      ...(dataThrough === undefined ? {} : { data_through: dataThrough }),
      ...(scope ? { data_scope: scope } : {}),
    });
    if (!checked.success) throw new ConfigError(`output does not match its schema: ${checked.error.message}`);
    return { data: checked.data, rowCount };
  });
}
