/**
 * The registry is the only door to the database. Templates declare; the registry enforces, in one
 * place and for every tool: argument validation, the read-only transaction, the row cap, type
 * conversion, masking, output validation and error shaping. Its rooms: the template's types
 * (types.ts), the start-up checks (checks/), the call path (call/), result shaping (shaping/), and
 * the report and job adapters (reports.ts, jobs.ts).
 */
import { GET_JOB_TOOL, submittedView } from '../jobs/tools.js';
import { scopeOf } from '../lib/data-scope.js';
import type { AnyReport } from '../reports.js';
import { accessTo } from './access.js';
import { refuseUnknownTool, successResult } from './call/record.js';
import { runTemplate } from './call/template.js';
import type { Registry } from './interface.js';
import { lookUpJob, serveJobs, submitJob } from './jobs.js';
import { reportRunner, runReport, serveReports } from './reports.js';
import { serveTemplates } from './templates.js';
import { listedInput } from './tools.js';
import type { AnyTemplate, TemplateLimits } from './types.js';

export interface RegistryOptions {
  /** Per tool: the fewest people a released protected count other than 0 stands for (DEFAULT_SMALL_GROUP_THRESHOLD). */
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

/**
 * A registry is its templates, its reports and its jobs, each checked and listed as tools, the rule
 * of who may see which, and the one call that runs any of them. Refuses to build on the first
 * violation of the contract.
 */
export function createRegistry(templates: readonly AnyTemplate[], options: RegistryOptions = {}): Registry {
  const served = serveTemplates(templates, options.smallGroupThresholds);
  const reports = serveReports(options.reports ?? [], served.byName);
  const jobs = serveJobs(
    options.jobs ? reports.byName.values() : [],
    (name) => served.byName.has(name) || reports.byName.has(name),
  );
  const whole = [...served.tools, ...reports.tools, ...jobs.tools];
  const tools = whole.map((tool) => ({ ...tool, inputSchema: listedInput(tool.inputSchema) }));
  const { allowed, mayRunAsJob } = accessTo(served, reports, jobs);
  const { limits } = options;
  const runFor = reportRunner(served.byName, limits);

  const answerSchemas = new Map([...served.answers, ...reports.answers, ...jobs.answers]);
  const argumentSchemas = new Map(whole.map((tool) => [tool.name, tool.inputSchema as Record<string, unknown>]));

  return {
    tools,
    argumentSchemas,
    answerSchemas,
    dataScopeDimensions: served.dimensions,
    toolsFor: (caller, listing) => {
      const visible = caller.tools || scopeOf(caller) ? tools.filter((t) => allowed(caller, t.name)) : tools;
      return listing?.tasks ? visible.filter((t) => !jobs.isJobTool(t.name)) : visible;
    },
    runsAsJob: (name) => jobs.entries.some((entry) => entry.report.name === name),
    mayRunAsJob,
    submit: async (name, args, deps, options) => {
      const report = reports.byName.get(name);
      if (!report || !jobs.entries.includes(report) || !allowed(options.caller, name)) {
        return refuseUnknownTool(name, deps, options);
      }
      return submitJob(report, name, args, deps, options, limits?.[report.report.name], runFor);
    },
    call: async (name, args, deps, options) => {
      if (jobs.isJobTool(name)) {
        if (!allowed(options.caller, name)) return refuseUnknownTool(name, deps, options);
        const submitted = jobs.submitTools.get(name);
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
          return successResult(submittedView(outcome.job, deps.jobs!.pollIntervalMs));
        }
        const reader = { caller: options.caller, mayRun: (tool: string) => mayRunAsJob(options.caller, tool) };
        return lookUpJob(name === GET_JOB_TOOL ? 'get' : 'cancel', name, args, jobs.output!, deps, options, reader);
      }
      const entry = served.byName.get(name);
      const report = reports.byName.get(name);
      if ((!entry && !report) || !allowed(options.caller, name)) return refuseUnknownTool(name, deps, options);
      if (report) return runReport(report, args, deps, options, limits?.[name], runFor);
      return runTemplate(entry!, args, deps, options, limits?.[name]);
    },
  };
}

export { hiddenByDataScope } from './access.js';
export { runThrough } from './jobs.js';
export { resolvePeriods } from './periods.js';
export { bucketOf, isoTimestamp, roundMoney } from './shaping/values.js';
export type { CallDeps, CallOptions, ClientLogLevel, Registry } from './interface.js';
export * from './types.js';
export type { Caller } from '../lib/caller.js';
