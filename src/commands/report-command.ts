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
import { startApp, type AppOptions } from '../app/index.js';
import type { AuditLog } from '../observability/audit.js';
import { CLI_CALLER_ID } from '../lib/caller-ids.js';
import { loadConfig } from '../config.js';
import { ConfigError, PermissionError } from '../lib/errors.js';
import { quote } from '../lib/date-range.js';
import { staleness } from '../output/staleness.js';
import { alertRuleProblems, firedAlerts, type FiredAlert } from '../output/alerts.js';
import { historyOf, keepEdition, type EditionTables } from '../history/editions.js';
import type { JobStore } from '../jobs/store.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { packsToServe } from '../packs.js';
import { DeliveryFailure, reportFiles, writeReportFiles } from '../output/files.js';
import { progressBar, type ProgressBar } from './progress-bar.js';
import { parseReportCommand, reportUsage, type ReportRequest } from './report-arguments.js';
import { HISTORY_COMMANDS, historyCommand } from './report-history.js';
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

/** A failure with its exit code; its message is the one line said on stderr. */
class ReportFailure extends Error {
  constructor(
    readonly exitCode: ReportExit,
    message: string,
  ) {
    super(message);
  }
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
