/**
 * The commands that read what reports left behind, in the job store: `report history` (the editions
 * kept, newest first), `report show ID` (one edition, written again exactly as it was sent, in any of
 * its report's formats) and `report schedule list` (each declared schedule, its next run and its last).
 */
import type { Config } from '../config.js';
import type { ConfigFile } from '../config-file/index.js';
import { findEdition, historyOf, listEditions, type EditionRow, type EditionTables } from '../history/editions.js';
import type { JobStore } from '../jobs/store.js';
import { quote } from '../lib/date-range.js';
import { describeScope } from '../lib/data-scope.js';
import { ConfigError } from '../lib/errors.js';
import { utcMinute } from '../lib/local-day.js';
import { checkOutput, REPORT_FORMATS, reportFiles, writeReportFiles, type ReportFormat } from '../output/files.js';
import { findChromium, printPdf } from '../output/pdf.js';
import type { AnyReport } from '../reports.js';
import { nextDue } from '../schedules/scheduler.js';
import { deliveriesOf, latestRuns, scheduleStoreOf } from '../schedules/store.js';

/** The words after `report` that are these commands, not reports. */
export const HISTORY_COMMANDS = ['history', 'show', 'schedule'] as const;

export const HISTORY_USAGE = [
  'querygate report history [--report NAME] [--limit N]   the editions kept, newest first',
  'querygate report show ID [--format md|json|html|csv|pdf] [--out FILE]   one edition, as it was sent',
  'querygate report schedule list   each schedule of the configuration file: its next run and its last',
];

/** Options of the form --name VALUE, each at most once, from the names allowed. */
function flags(argv: readonly string[], allowed: readonly string[], command: string): Map<string, string> {
  const out = new Map<string, string>();
  for (let k = 0; k < argv.length; k++) {
    const flag = argv[k]!;
    if (!allowed.includes(flag)) {
      throw new ConfigError(
        `report ${command} takes ${allowed.length === 0 ? 'no option' : allowed.join(', ')}, not ${quote(flag)}`,
      );
    }
    const value = argv[++k];
    if (value === undefined) throw new ConfigError(`${flag} takes a value`);
    if (out.has(flag)) throw new ConfigError(`${flag} is given twice`);
    out.set(flag, value);
  }
  return out;
}

const minute = (date: Date | null): string => (date === null ? '–' : utcMinute(date.getTime()));

/** Rows as columns padded to their widest cell. */
function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return (
    rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') +
    '\n'
  );
}

function historyTable(rows: readonly EditionRow[]): string {
  if (rows.length === 0)
    return 'No edition is kept yet: each run of querygate report, and each scheduled run, keeps one.\n';
  return table([
    ['ID', 'RAN', 'REPORT', 'PERIOD', 'SCOPE', 'SOURCE', 'DATA THROUGH', 'RESTATES'],
    ...rows.map((r) => [
      r.id,
      minute(r.ran_at),
      r.report,
      r.start_date === null ? '–' : `${r.start_date}..${r.end_date}`,
      r.data_scope === null ? 'all' : describeScope(r.data_scope),
      r.source,
      minute(r.data_through),
      r.restates ?? '–',
    ]),
  ]);
}

export interface HistoryContext {
  readonly config: Config;
  readonly file: ConfigFile | undefined;
  readonly reports: readonly AnyReport[];
  readonly jobStore: JobStore | undefined;
  readonly timeZone: string;
}

/** Runs `report history|show|schedule …`; gives what to write to stdout, or writes the files asked for. */
export async function historyCommand(argv: readonly string[], ctx: HistoryContext): Promise<void> {
  const [command, ...rest] = argv;
  if (ctx.jobStore === undefined) {
    throw new ConfigError(
      `report ${command}: the history is kept in the job store; set QUERYGATE_JOBS_URL, or QUERYGATE_JOBS_PASSWORD beside DATABASE_URL`,
    );
  }
  const history = historyOf(ctx.jobStore.withTables<EditionTables>());
  if (command === 'history') {
    const options = flags(rest, ['--report', '--limit'], 'history');
    const limitText = options.get('--limit') ?? '20';
    if (!/^[1-9][0-9]{0,2}$/.test(limitText))
      throw new ConfigError(`--limit: ${quote(limitText)} must be a whole number from 1 to 999`);
    const report = options.get('--report');
    const named =
      report === undefined
        ? undefined
        : (ctx.reports.find((r) => r.name === report || r.command === report)?.name ?? report);
    const rows = await listEditions(history, {
      limit: Number(limitText),
      ...(named === undefined ? {} : { report: named }),
    });
    await writeReportFiles([{ path: undefined, text: historyTable(rows) }]);
    return;
  }
  if (command === 'show') {
    const [id, ...more] = rest;
    if (id === undefined || id.startsWith('-'))
      throw new ConfigError('report show: give the id of an edition (report history lists them)');
    const options = flags(more, ['--format', '--out'], 'show');
    const format = (options.get('--format') ?? 'md') as ReportFormat;
    if (!(REPORT_FORMATS as readonly string[]).includes(format)) {
      throw new ConfigError(`--format: ${quote(format)} is not one of ${REPORT_FORMATS.join(', ')}`);
    }
    const edition = await findEdition(history, id);
    if (!edition) throw new ConfigError(`report show: no edition is called ${quote(id)}; report history lists them`);
    const report = ctx.reports.find((r) => r.name === edition.report);
    if (!report)
      throw new ConfigError(`report show: ${edition.report} is not served here, so its edition cannot be laid out`);
    const out = options.get('--out');
    checkOutput(report, [format], out);
    const chromium = format === 'pdf' ? findChromium(ctx.config.chromium) : undefined;
    const files = await reportFiles(
      report,
      [format],
      out,
      edition.answer,
      chromium === undefined ? undefined : (html) => printPdf(chromium, html),
    );
    await writeReportFiles(files);
    return;
  }
  if (command === 'schedule' && rest[0] === 'list' && rest.length === 1) {
    const schedules = ctx.file?.schedules ?? [];
    if (schedules.length === 0) {
      await writeReportFiles([
        { path: undefined, text: 'No schedule is declared: see "schedules" in docs/reports.md.\n' },
      ]);
      return;
    }
    const store = scheduleStoreOf(ctx.jobStore);
    const runs = await latestRuns(store);
    const rows: string[][] = [['SCHEDULE', 'REPORT', 'CRON', 'NEXT RUN', 'LAST RUN', 'STATE', 'DELIVERIES']];
    for (const s of schedules) {
      const last = runs.filter((r) => r.schedule === s.name);
      const deliveries = (await Promise.all(last.map((r) => deliveriesOf(store, r)))).flat();
      const counted = ['delivered', 'pending', 'failed']
        .map((state) => [state, deliveries.filter((d) => d.state === state).length] as const)
        .filter(([, n]) => n > 0)
        .map(([state, n]) => `${n} ${state}`)
        .join(', ');
      rows.push([
        s.name,
        s.report,
        `${s.cron} (${ctx.timeZone})`,
        minute(nextDue(s.cron, ctx.timeZone, Date.now())),
        last.length === 0 ? 'never' : minute(last[0]!.due_at),
        last.length === 0 ? '–' : [...new Set(last.map((r) => r.state))].join(', '),
        counted || '–',
      ]);
    }
    await writeReportFiles([{ path: undefined, text: table(rows) }]);
    return;
  }
  throw new ConfigError(
    `report ${[command, ...rest].join(' ')}: the commands are ${HISTORY_USAGE.map((u) => u.split('  ')[0]).join('; ')}`,
  );
}
