/**
 * Reports: a tool whose answer is built from several of its pack's templates, each run through the
 * registry's one door (validation, the read-only reader, the row cap, masking, output checks), never
 * from a statement of its own. A pack declares its reports beside its templates; the registry lists
 * them as tools and runs them.
 */
import type { z } from 'zod';
import type { DataScope } from './lib/data-scope.js';
import type { AnyTemplate, QueryContext, QueryTemplate, ToolContract } from './registry/types.js';

/** A template's result as a report gets it: its output, with the registry's freshness. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type TemplateAnswer<T> = (T extends QueryTemplate<any, infer Output> ? Output : never) & {
  readonly data_as_of: string;
};

/**
 * Runs one of the report's templates for the report's caller, with the arguments a model would give
 * it. Arguments the template refuses are the report's own mistake (a programmer error). A range that
 * has not ended is cut at the current minute, as for a model's call.
 */
export type RunTemplate = <T extends AnyTemplate>(
  template: T,
  args: z.input<T['input']>,
  options?: RunOptions,
) => Promise<TemplateAnswer<T>>;

export interface RunOptions {
  /**
   * Cut the range at this instant (milliseconds since the epoch), as a range still running is cut at
   * the current minute: for the range a running one is compared with (src/lib/running.ts, sameTimeOfDay).
   */
  readonly until?: number;
}

export interface ReportContext extends QueryContext {
  /** Today in the reporting time zone (YYYY-MM-DD), as the call sees it. */
  readonly today: string;
  /** The instant the call was made (milliseconds since the epoch). */
  readonly nowMs: number;
}

/**
 * A report's answer as a call returns it: its output, with the registry's data_as_of, and the
 * caller's data scope when it sees part of the data.
 */
export type ReportAnswer<Output> = Output & {
  readonly data_as_of: string;
  /** The newest data (ISO 8601), when the report's pack declares its high-water mark; null when it holds none. */
  readonly data_through?: string | null;
  readonly data_scope?: DataScope;
  /**
   * Set by the report command, never by a tool call, when the newest data are older than the report's
   * bound (`stale_after`): the sentence that says so, which every format shows (src/render/notes.ts).
   */
  readonly stale_feed?: string;
  /**
   * Set by the report command and the scheduler, never by a tool call, when an edition of the same period
   * was kept before with other figures: what changed (src/history/), which every format shows.
   */
  readonly restated?: { readonly edition: string; readonly text: string };
  /** Set by the report command and the scheduler where alert rules are declared: those that fired. */
  readonly alerts?: readonly { readonly rule: string; readonly text: string }[];
};

/**
 * A report laid out for a person, from its answer alone: every figure is the answer's own. The
 * report command (src/commands/report-command.ts) finds them here, so the engine needs no pack's renderers; the
 * helpers they are written with are in src/render/.
 */
export interface ReportRenderers<Output> {
  /** Markdown: for a terminal, a mail or a resource. */
  markdown?(answer: ReportAnswer<Output>): string;
  /** One HTML page that fetches nothing and prints (src/render/html.ts). */
  html?(answer: ReportAnswer<Output>): string;
}

/** A tool built from templates: its contract, the templates it runs, and how it builds its answer. */
export interface ReportTemplate<Args, Output extends Record<string, unknown>> extends ToolContract<Args, Output> {
  /** Every template the report runs: it is served only beside them. */
  readonly uses: readonly AnyTemplate[];
  /** How many template runs a call makes, for progress notifications. */
  readonly steps: (args: Args, ctx: ReportContext) => number;
  /**
   * Resolves what depends on the day the call is made (a relative week) and checks what the input
   * schema cannot (a week that has not begun), throwing an ArgumentError, before anything runs: a
   * job's caller hears of a mistake when submitting, not when polling, and a job run again later by
   * another replica covers the same weeks.
   */
  readonly resolve?: (args: Args, ctx: ReportContext) => Args;
  /**
   * Declares that the report also runs as a job, for a caller who cannot wait: the engine serves
   * `submitTool` (the report's input, answered at once with a job id) beside get_report_job and
   * cancel_report_job, and creates a task for a client of the tasks extension that calls the report.
   */
  readonly job?: { readonly submitTool: string };
  /**
   * A rule on the answer that only the data can tell (more rows than fit, say), throwing an
   * ArgumentError: run when a job is submitted, through the report's own templates and one admission,
   * so that submit refuses at once what the job's run would refuse. build keeps its own check (the
   * data may change before the job runs).
   */
  readonly check?: (run: RunTemplate, args: Args, ctx: ReportContext) => Promise<void>;
  /**
   * Builds the answer. An ArgumentError thrown here (a week in the future, say) is the caller's to
   * fix and comes back naming the field.
   */
  readonly build: (run: RunTemplate, args: Args, ctx: ReportContext) => Promise<Output>;
  /**
   * The word `querygate report <command>` runs it by ("weekly"): lower case, unique among the served
   * reports. A report without one is a tool only.
   */
  readonly command?: string;
  readonly render?: ReportRenderers<Output>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyReport = ReportTemplate<any, Record<string, unknown>>;

/** Declares a report; the registry checks it when it is served. */
export function defineReport<Args, Output extends Record<string, unknown>>(
  report: ReportTemplate<Args, Output>,
): ReportTemplate<Args, Output> {
  return report;
}
