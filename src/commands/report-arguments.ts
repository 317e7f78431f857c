/**
 * The command line of `querygate report <name>`: the served reports by their command, each report's
 * arguments as options (`through_week` is `--through-week`), the usage `--help` prints, and the
 * request a command line makes, checked before anything runs (report-command.ts runs it).
 */
import { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { quote } from '../lib/date-range.js';
import { DURATION_RULE, durationMs } from '../lib/durations.js';
import type { DataScope } from '../lib/data-scope.js';
import { weekArgument } from '../lib/weeks.js';
import { checkOutput, formatsOf, REPORT_FORMATS, type ReportFormat } from '../output/files.js';
import type { AnyReport } from '../reports.js';
import { HISTORY_COMMANDS, HISTORY_USAGE } from './report-history.js';

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
