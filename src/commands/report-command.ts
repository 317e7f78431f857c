/**
 * `querygate report <command>`: one report of the served packs, run once (from cron, say) and written
 * in as many formats as asked (src/output/files.ts). It runs in the app `serve` builds (the database, the
 * reader role and its safety check, the configuration file, the limits) and calls the report through
 * the registry's one door, as an MCP client's tools/call does. A report names its command and its renderers itself
 * (src/reports.ts): nothing here knows a pack.
 *
 * Made for cron: the output alone on stdout (or in --out), nothing on stderr when all went well, a
 * progress bar only on a terminal, and a failure told in one line with an exit code of its own
 * (REPORT_EXIT), so that a crontab or a CI step can tell a refused password from an outage, and a feed
 * that stopped from a report that ran.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { startApp, type AppOptions } from '../app/index.js';
import type { AuditLog } from '../observability/audit.js';
import { CLI_CALLER_ID } from '../lib/caller-ids.js';
import { loadConfig } from '../config.js';
import { ConfigError, PermissionError } from '../lib/errors.js';
import { quote } from '../lib/date-range.js';
import { DURATION_RULE, durationMs } from '../lib/durations.js';
import { staleness } from '../output/staleness.js';
import { alertRuleProblems, firedAlerts, type FiredAlert } from '../output/alerts.js';
import { historyOf, keepEdition, type EditionTables } from '../history/editions.js';
import type { JobStore } from '../jobs/store.js';
import { weekArgument } from '../lib/weeks.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { packsToServe } from '../packs.js';
import type { AnyReport } from '../reports.js';
import type { DataScope } from '../lib/data-scope.js';
import {
  checkOutput,
  DeliveryFailure,
  formatsOf,
  REPORT_FORMATS,
  reportFiles,
  writeReportFiles,
  type ReportFormat,
} from '../output/files.js';
import { progressBar, type ProgressBar } from './progress-bar.js';
import { HISTORY_COMMANDS, HISTORY_USAGE, historyCommand } from './report-history.js';
import { findChromium, printPdf } from '../output/pdf.js';

/** The exit status of each outcome: docs/reports.md lists them, and `report --help` says them. */
export const REPORT_EXIT = {
  /** The report was written. */
  done: 0,
  /** Anything else went wrong: a query failed or timed out, the server was busy. */
  failed: 1,
  /** The caller can fix it: the command line, an argument the report refuses, the configuration. */
  invalid: 2,
  /** The database refused the login (a wrong or rotated password) or a permission the report needs. */
  refused: 3,
  /** The database could not be reached. */
  unreachable: 4,
  /** The newest data are older than the report's stale_after bound: written, with a warning in every format. */
  stale: 5,
  /** The report was made but could not be written where it was asked to go. */
  undelivered: 6,
  /** An alert rule of the report (`reports.<name>.alerts` in the configuration file) fired: written, with the alert in every format. */
  alert: 7,
} as const;
type ReportExit = (typeof REPORT_EXIT)[keyof typeof REPORT_EXIT];

/** The exit status of a call's failure, by its error code (src/lib/errors.ts). */
const EXIT_OF_CODE: Readonly<Record<string, ReportExit>> = {
  database_refused: REPORT_EXIT.refused,
  database_unavailable: REPORT_EXIT.unreachable,
};

/** Who the audit log says called: the operator at this machine's shell or crontab. */
const CALLER = { id: CLI_CALLER_ID } as const;

/** A command line's request: which report, its arguments as a tool call gives them, and where to. */
export interface ReportRequest {
  readonly report: AnyReport;
  readonly args: Record<string, unknown>;
  /** Each format asked for, once, in the order asked. */
  readonly formats: readonly ReportFormat[];
  readonly out: string | undefined;
  /** --stale-after, in milliseconds: overrides the configuration file's `reports.<name>.stale_after`. */
  readonly staleAfterMs: number | undefined;
  /** --data-scope: run as a caller who sees these values of each dimension only. */
  readonly dataScope: DataScope | undefined;
}

/** One argument of a report as an option: `through_week` is `--through-week`. */
interface ReportOption {
  readonly argument: string;
  readonly flag: string;
  readonly type: string | undefined;
  readonly required: boolean;
  /** A week argument (src/lib/weeks.ts), which also takes `last` and `this`. */
  readonly week: boolean;
}

const WEEK_WORDS: Readonly<Record<string, string>> = { last: 'last_week', this: 'this_week' };

/** A failure with its exit code; its message is the one line said on stderr. */
class ReportFailure extends Error {
  constructor(
    readonly exitCode: ReportExit,
    message: string,
  ) {
    super(message);
  }
}

/** The served reports that have a command, by command; two reports of one command are refused. */
export function reportCommands(reports: readonly AnyReport[]): Map<string, AnyReport> {
  const byCommand = new Map<string, AnyReport>();
  for (const report of reports) {
    if (report.command === undefined) continue;
    if (!/^[a-z][a-z0-9-]*$/.test(report.command)) {
      throw new ConfigError(`report ${report.name}: command ${quote(report.command)} must be a lower-case word`);
    }
    if ((HISTORY_COMMANDS as readonly string[]).includes(report.command)) {
      throw new ConfigError(
        `report ${report.name}: command ${report.command} is taken by querygate report ${report.command}`,
      );
    }
    const other = byCommand.get(report.command);
    if (other)
      throw new ConfigError(`reports ${other.name} and ${report.name} both take the command ${report.command}`);
    byCommand.set(report.command, report);
  }
  return byCommand;
}

function unwrapped(schema: z.ZodType): z.ZodType {
  let inner = schema;
  // .optional(), .default() and the like wrap the schema they were called on.
  while ('innerType' in inner.def) inner = inner.def.innerType as z.ZodType;
  return inner;
}

function optionsOf(report: AnyReport): ReportOption[] {
  const schema = z.toJSONSchema(report.input, { io: 'input', unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: string }>;
    required?: string[];
  };
  const shape: Record<string, z.ZodType> = report.input instanceof z.ZodObject ? report.input.shape : {};
  return Object.entries(schema.properties ?? {}).map(([argument, property]) => {
    if (['format', 'out', 'stale_after', 'data_scope'].includes(argument)) {
      throw new ConfigError(
        `report ${report.name}: an argument may not be called ${argument}, an option of the command`,
      );
    }
    return {
      argument,
      flag: `--${argument.replaceAll('_', '-')}`,
      type: property.type,
      required: schema.required?.includes(argument) ?? false,
      week: shape[argument] !== undefined && unwrapped(shape[argument]) === weekArgument,
    };
  });
}

/** The text of one argument as the report takes it; what it refuses, the registry says why. */
function argumentValue(option: ReportOption, text: string): unknown {
  if (option.week) return WEEK_WORDS[text] ?? text;
  if ((option.type === 'integer' || option.type === 'number') && /^[+-]?\d+(\.\d+)?$/.test(text)) return Number(text);
  return text;
}

const usageLine = (report: AnyReport): string =>
  optionsOf(report)
    .map((o) => (o.required ? `${o.flag} VALUE` : `[${o.flag} VALUE]`))
    .join(' ');

/** `querygate report --help`: the command, and each served report with its options. */
export function reportUsage(reports: readonly AnyReport[]): string {
  const byCommand = reportCommands(reports);
  const width = Math.max(0, ...[...byCommand.keys()].map((c) => c.length));
  return [
    'Usage: querygate report <name> [--<argument> VALUE ...] [--format md|json|html|csv|pdf[,...]] [--out FILE]',
    '                        [--stale-after 36h] [--data-scope DIMENSION=VALUE[,VALUE...]]',
    '',
    'Runs one report once, as a tool call of the reader role, and writes it to stdout or FILE (md by default).',
    'Several formats (md,html,csv,pdf) come from the one run, written beside the stem --out names: --out week',
    'writes week.md, week.html, week.pdf and a CSV file per table (week.about.csv, week.daily.csv, ...).',
    'A week is an ISO week (2026-W48), a day inside it (YYYY-MM-DD), last or this.',
    '--stale-after (90m, 36h, 2d) fails a report whose newest data are older than that.',
    '--data-scope runs it as a caller who sees those values only (region=Europe): every format says so.',
    'Exit status: 0 done; 1 a query failed or timed out; 2 a bad command line, an argument the report refuses or a',
    'configuration error; 3 the database refused the login or a permission; 4 the database is unreachable;',
    '5 the data are stale (the report is written, with a warning); 6 the output could not be written;',
    '7 an alert rule of the report fired (the report is written, with the alert).',
    '',
    'What the reports left behind (kept in the job store):',
    ...HISTORY_USAGE.map((line) => `  ${line}`),
    '',
    'Reports served here:',
    ...[...byCommand].map(
      ([command, report]) =>
        `  ${command.padEnd(width)}  ${report.name} ${usageLine(report)} (formats: ${formatsOf(report).join(', ')})`,
    ),
  ].join('\n');
}

/** Reads `<name> [--<argument> VALUE]... [--format F] [--out FILE]` against the reports served. */
export function parseReportCommand(argv: readonly string[], reports: readonly AnyReport[]): ReportRequest {
  const byCommand = reportCommands(reports);
  const names = [...byCommand.keys()].join(', ') || 'none';
  const [command, ...rest] = argv;
  if (command === undefined || command.startsWith('-')) throw new ConfigError(`name a report: ${names}`);
  const report = byCommand.get(command);
  if (!report) throw new ConfigError(`no report is called ${quote(command)}; the reports are ${names}`);
  const options = optionsOf(report);
  const known = [...options.map((o) => o.flag), '--format', '--out', '--stale-after', '--data-scope'].join(', ');
  const args: Record<string, unknown> = {};
  let formats: ReportFormat[] = ['md'];
  let out: string | undefined;
  let staleAfterMs: number | undefined;
  const dataScope: Record<string, string[]> = {};
  const seen = new Set<string>();
  for (let k = 0; k < rest.length; k++) {
    const token = rest[k]!;
    const match = /^(--[a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(token);
    if (!match) throw new ConfigError(`unexpected argument ${quote(token)}; report ${command} takes ${known}`);
    const flag = match[1]!;
    let value = match[2];
    if (value === undefined && rest[k + 1] !== undefined && !rest[k + 1]!.startsWith('--')) value = rest[++k];
    if (value === undefined) throw new ConfigError(`${flag} takes a value`);
    if (seen.has(flag) && flag !== '--data-scope') throw new ConfigError(`${flag} is given twice`);
    seen.add(flag);
    if (flag === '--format') {
      const asked = value.split(',');
      const unknown = asked.find((f) => !(REPORT_FORMATS as readonly string[]).includes(f));
      if (unknown !== undefined) {
        throw new ConfigError(`--format: ${quote(unknown)} is not one of ${REPORT_FORMATS.join(', ')}`);
      }
      formats = [...new Set(asked as ReportFormat[])];
    } else if (flag === '--out') {
      out = value;
    } else if (flag === '--data-scope') {
      const scope = /^([a-z][a-z0-9_]*)=([^,]+(?:,[^,]+)*)$/.exec(value);
      if (!scope) {
        throw new ConfigError(`--data-scope: ${quote(value)} is not DIMENSION=VALUE[,VALUE...], such as region=Europe`);
      }
      if (dataScope[scope[1]!]) throw new ConfigError(`--data-scope: ${scope[1]} is given twice`);
      dataScope[scope[1]!] = scope[2]!.split(',').map((v) => v.trim());
    } else if (flag === '--stale-after') {
      staleAfterMs = durationMs(value);
      if (staleAfterMs === undefined) throw new ConfigError(`--stale-after: ${quote(value)} ${DURATION_RULE}`);
    } else {
      const option = options.find((o) => o.flag === flag);
      if (!option) throw new ConfigError(`report ${command} takes no ${flag}; it takes ${known}`);
      args[option.argument] = argumentValue(option, value);
    }
  }
  checkOutput(report, formats, out);
  return {
    report,
    args,
    formats,
    out,
    staleAfterMs,
    dataScope: Object.keys(dataScope).length === 0 ? undefined : dataScope,
  };
}

/** Why a tool call failed, in one line: an argument's field and rule as they are, anything else whole. */
function reasonOf(result: CallToolResult): string {
  const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join(' ');
  const refused =
    /^Invalid arguments: (.*)\. Fix the arguments and call again\. \(code: [a-z_]+, request_id: [^)]*\)$/s.exec(text);
  return oneLine(refused ? refused[1]! : text);
}

const oneLine = (text: string): string => text.split('\n')[0]!.trim();

/**
 * Keeps the edition in the history and gives the answer to write, with what it restates. A history
 * that cannot be written does not stop the report: the line on stderr says the edition was not kept.
 */
async function kept(
  jobs: JobStore,
  request: ReportRequest,
  answer: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  try {
    const edition = await keepEdition(historyOf(jobs.withTables<EditionTables>()), {
      report: request.report.name,
      args: request.args,
      dataScope: request.dataScope,
      answer,
      source: 'cli',
    });
    return edition.answer;
  } catch (err) {
    process.stderr.write(
      `querygate report: the edition was not kept in the history: ${oneLine(String((err as Error).message ?? err))}\n`,
    );
    return answer;
  }
}

/** A report call leaves no line on stderr unless QUERYGATE_AUDIT_LOG names a file to keep it in. */
const NO_AUDIT: AuditLog = { write: () => undefined, close: () => undefined };

/**
 * Runs `querygate report …` to its end and gives the exit code: the output on stdout or in --out, and
 * on failure one line on stderr. Logs are written only when QUERYGATE_LOG_LEVEL asks for them.
 */
export async function reportCommand(argv: readonly string[]): Promise<number> {
  const stopping = new AbortController();
  const stop = (): void => stopping.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let bar: ProgressBar | undefined;
  try {
    const config = loadConfig();
    const logger = process.env.QUERYGATE_LOG_LEVEL === undefined ? silentLogger : createLogger(config.logLevel);
    const { packs, paths, file } = await packsToServe(config);
    const reports = packs.flatMap((p) => p.reports ?? []);
    if (argv[0] === '--help' || argv[0] === '-h') {
      await writeReportFiles([{ path: undefined, text: `${reportUsage(reports)}\n` }]);
      return 0;
    }
    // The server `serve` builds, for one command: the reader role checked, the configuration file read.
    const appOptions: AppOptions = {
      packs,
      packPaths: paths,
      ...(file ? { configFile: file } : {}),
      allowUnsafeRole: false,
      onFatal: stop,
      signal: stopping.signal,
    };
    if ((HISTORY_COMMANDS as readonly string[]).includes(argv[0] ?? '')) {
      const app = await startApp(config, logger, appOptions);
      try {
        await historyCommand(argv, { config, file, reports, jobStore: app.jobStore, timeZone: app.deps.ctx.timeZone });
      } finally {
        await app.stop();
      }
      return REPORT_EXIT.done;
    }
    const request = parseReportCommand(argv, reports);
    const rules = file?.reports[request.report.name]?.alerts ?? [];
    const wrongRules = alertRuleProblems(request.report.output, rules, `reports.${request.report.name}.alerts`);
    if (wrongRules.length > 0) throw new ConfigError(`QUERYGATE_CONFIG ${wrongRules[0]}`);
    // Before anything runs: a PDF asked for on a machine that cannot print one is refused at once.
    const chromium = request.formats.includes('pdf') ? findChromium(config.chromium) : undefined;
    const app = await startApp(config, logger, appOptions);
    let answer: Record<string, unknown>;
    let stale: string | undefined;
    let fired: FiredAlert[] = [];
    try {
      if (!app.deps.registry.tools.some((t) => t.name === request.report.name)) {
        throw new ConfigError(`${request.report.name} is not served: the configuration file leaves it out`);
      }
      const dimensions = app.deps.registry.dataScopeDimensions;
      for (const dimension of Object.keys(request.dataScope ?? {})) {
        if (!dimensions.has(dimension)) {
          throw new ConfigError(
            `--data-scope: ${quote(dimension)} is not a data-scope dimension of the served packs (${dimensions.size === 0 ? 'they declare none' : [...dimensions].join(', ')})`,
          );
        }
      }
      bar = progressBar(process.stderr, request.report.name);
      let outcome: unknown;
      let errorCode: string | undefined;
      const result = await app.deps.registry.call(
        request.report.name,
        request.args,
        config.auditLog === undefined ? { ...app.deps, audit: NO_AUDIT } : app.deps,
        {
          caller: request.dataScope ? { ...CALLER, dataScope: request.dataScope } : CALLER,
          signal: stopping.signal,
          report: (_level, data) => {
            outcome = data.outcome;
            if (typeof data.error_code === 'string') errorCode = data.error_code;
          },
          ...(bar ? { progress: bar.update } : {}),
        },
      );
      bar?.clear();
      if (result.isError) {
        const code = errorCode === undefined ? undefined : EXIT_OF_CODE[errorCode];
        throw new ReportFailure(
          outcome === 'rejected' ? REPORT_EXIT.invalid : (code ?? REPORT_EXIT.failed),
          reasonOf(result),
        );
      }
      answer = result.structuredContent!;
      const boundMs = request.staleAfterMs ?? file?.reports[request.report.name]?.staleAfterMs;
      stale = boundMs === undefined ? undefined : staleness(answer, boundMs, Date.now());
      if (stale !== undefined) answer = { ...answer, stale_feed: stale };
      fired = firedAlerts(answer, rules);
      if (fired.length > 0) answer = { ...answer, alerts: fired };
      if (app.jobStore) answer = await kept(app.jobStore, request, answer);
    } finally {
      await app.stop();
    }
    const files = await reportFiles(
      request.report,
      request.formats,
      request.out,
      answer,
      chromium === undefined ? undefined : (html) => printPdf(chromium, html),
    );
    await writeReportFiles(files);
    if (stale !== undefined) throw new ReportFailure(REPORT_EXIT.stale, stale);
    if (fired.length > 0) {
      const more = fired.length > 1 ? ` (and ${fired.length - 1} more: see the report)` : '';
      throw new ReportFailure(REPORT_EXIT.alert, `${fired[0]!.text}${more}`);
    }
    return REPORT_EXIT.done;
  } catch (err) {
    bar?.clear();
    const failure =
      err instanceof ReportFailure
        ? err
        : err instanceof DeliveryFailure
          ? new ReportFailure(REPORT_EXIT.undelivered, oneLine(err.message))
          : err instanceof PermissionError
            ? new ReportFailure(REPORT_EXIT.refused, oneLine(err.message))
            : err instanceof ConfigError
              ? new ReportFailure(REPORT_EXIT.invalid, oneLine(err.message))
              : new ReportFailure(
                  REPORT_EXIT.failed,
                  stopping.signal.aborted ? 'stopped by a signal' : oneLine(String((err as Error).message ?? err)),
                );
    process.stderr.write(`querygate report: ${failure.message}\n`);
    return failure.exitCode;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
