/**
 * The job adapter: the reports that declare `job`, served with a submit tool each and the two tools
 * every job shares (get_report_job, cancel_report_job), and a job's run, which is a call of its report
 * through the registry by the job's caller.
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ArgumentError, ConfigError, InfraError, classifyDatabaseError } from '../lib/errors.js';
import type { RunEnding, RunReport } from '../jobs/service.js';
import type { JobReader, JobRow } from '../jobs/store.js';
import {
  CANCEL_ANNOTATIONS,
  CANCEL_JOB_TOOL,
  GET_ANNOTATIONS,
  GET_JOB_TOOL,
  jobIdInput,
  jobOutput,
  jobView,
  LISTED_JOB_RESULT,
  submittedOutput,
  SUBMIT_ANNOTATIONS,
} from '../jobs/tools.js';
import { admitted } from './call/admission.js';
import { describeIssues } from './call/issues.js';
import { callRecord, successResult, type CallRecord } from './call/record.js';
import type { ReportEntry } from './entries.js';
import type { CallDeps, CallOptions, Registry } from './interface.js';
import { reportCall, type RunFor } from './reports.js';
import { jsonSchema, outline } from './tools.js';
import { TOOL_NAME, type TemplateLimits } from './types.js';

export interface ServedJobs {
  /** The reports that run as jobs, by their submit tools. */
  readonly submitTools: ReadonlyMap<string, ReportEntry>;
  readonly entries: readonly ReportEntry[];
  /** The output of get_report_job and cancel_report_job, when any report runs as a job. */
  readonly output: z.ZodObject | undefined;
  readonly tools: readonly Tool[];
  /** Each job tool's whole answer schema (a job), which its listing outlines. */
  readonly answers: ReadonlyMap<string, Record<string, unknown>>;
  /** True for a submit tool, get_report_job and cancel_report_job, when they are served. */
  isJobTool(name: string): boolean;
}

/** The reports that run as jobs, each with its submit tool, then the two tools every job shares. */
export function serveJobs(reports: Iterable<ReportEntry>, taken: (name: string) => boolean): ServedJobs {
  const submitTools = new Map<string, ReportEntry>();
  const tools: Tool[] = [];
  const jobAnswer = jsonSchema(jobOutput(LISTED_JOB_RESULT), 'output');
  const jobSchema = outline(jobAnswer) as Tool['outputSchema'];
  const submitAnswer = jsonSchema(submittedOutput, 'output');
  const submitSchema = outline(submitAnswer) as Tool['outputSchema'];
  for (const entry of reports) {
    const { report } = entry;
    if (!report.job) continue;
    const name = report.job.submitTool;
    if (!TOOL_NAME.test(name))
      throw new ConfigError(`report ${report.name}: job.submitTool must be snake_case verb_noun`);
    if (taken(name) || submitTools.has(name) || name === GET_JOB_TOOL || name === CANCEL_JOB_TOOL)
      throw new ConfigError(`duplicate tool name: ${name}`);
    submitTools.set(name, entry);
    tools.push({
      name,
      title: `${report.title} (as a job)`,
      description: `${report.name} as a job: answers a job_id at once, and get_report_job its result. Example input: ${JSON.stringify(report.examples[0])}.`,
      inputSchema: jsonSchema(report.input, 'input') as Tool['inputSchema'],
      outputSchema: submitSchema,
      annotations: SUBMIT_ANNOTATIONS,
    });
  }
  const entries = [...submitTools.values()];
  let output: z.ZodObject | undefined;
  if (entries.length > 0) {
    const results = entries.map((e) => e.output);
    const anyResult = results.length === 1 ? results[0]! : z.union(results as [z.ZodType, z.ZodType, ...z.ZodType[]]);
    output = jobOutput(anyResult);
    const polled = entries.map((e) => e.report.job!.submitTool).join(', ');
    tools.push(
      {
        name: GET_JOB_TOOL,
        title: 'Report job',
        description: `A report job (${polled}), with its result once completed; poll until it ends.`,
        inputSchema: jsonSchema(jobIdInput, 'input') as Tool['inputSchema'],
        outputSchema: jobSchema,
        annotations: GET_ANNOTATIONS,
      },
      {
        name: CANCEL_JOB_TOOL,
        title: 'Cancel a report job',
        description: `Stops a report job (${polled}).`,
        inputSchema: jsonSchema(jobIdInput, 'input') as Tool['inputSchema'],
        outputSchema: jobSchema,
        annotations: CANCEL_ANNOTATIONS,
      },
    );
  }
  const isJobTool = (name: string): boolean =>
    submitTools.has(name) || (entries.length > 0 && (name === GET_JOB_TOOL || name === CANCEL_JOB_TOOL));
  const answers = new Map(tools.map((tool) => [tool.name, submitTools.has(tool.name) ? submitAnswer : jobAnswer]));
  return { submitTools, entries, output, tools, answers, isJobTool };
}

/**
 * Submits a report as a job: its arguments checked and resolved as a call of the report would be
 * (so a mistake is told now, not when polling), then recorded in the job store, within the caller's
 * bound on jobs in flight. It takes no admission and no rate token (the job's run does, when it runs),
 * unless the report declares a check on the data: that runs first, as one admitted call of its
 * templates, so that what the run would refuse is refused now.
 */
export async function submitJob(
  entry: ReportEntry,
  tool: string,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  runFor: RunFor,
): Promise<{ readonly job: JobRow } | { readonly result: CallToolResult }> {
  const { report } = entry;
  const record = callRecord(tool, deps, options);
  const call = reportCall(entry, rawArgs, deps, options, record);
  if ('refused' in call) return { result: call.refused };
  const { args, ctx, nowMs, scope } = call;
  if (report.check) {
    // Only what the check refuses refuses the submit, as the submit's one audit line. A check that
    // cannot run (the reader down or busy, no admission) leaves the job to its run, which retries
    // transient failures and keeps the report's own check.
    let refusal: ArgumentError | undefined;
    const quiet: CallRecord = { ...record, audit: () => undefined };
    await admitted(quiet, deps, options, limit, async (signal) => {
      try {
        await report.check!(
          runFor(report, deps, signal, nowMs, scope, () => undefined),
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
export async function lookUpJob(
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

/** Runs a job's report through the registry, as a call of the report by the job's caller: the same door, limits and audit. */
export function runThrough(registry: Registry, deps: CallDeps): RunReport {
  return async (job, signal, progress) => {
    let ending: RunEnding = { outcome: 'failed' };
    const result = await registry.call(job.tool, job.args, deps, {
      caller: job.caller,
      signal,
      progress,
      ended: (e) => (ending = e),
    });
    return { result, ending };
  };
}
