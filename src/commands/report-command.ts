/**
 * `querygate report <command>`: one report of the served packs, run once (from cron, say) and written
 * as JSON, Markdown or HTML. It runs in the app `serve` builds (the database, the reader role and its
 * safety check, the configuration file, the limits) and calls the report through the registry's one
 * door, as an MCP client's tools/call does. A report names its command and its renderers itself
 * (src/reports.ts): nothing here knows a pack.
 *
 * Made for cron: the output alone on stdout (or in --out), nothing on stderr when all went well, a
 * progress bar only on a terminal, and a failure told in one line with its exit code: 2 for what the
 * caller can fix (the command line, an argument the report refuses, the configuration), 1 for the
 * rest (the database, a failed query, writing the output).
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { startApp } from '../app/index.js';
import type { AuditLog } from '../observability/audit.js';
import { CLI_CALLER_ID } from '../lib/caller-ids.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../lib/errors.js';
import { quote } from '../lib/date-range.js';
import { weekArgument } from '../lib/weeks.js';
import { createLogger, silentLogger } from '../lib/logger.js';
import { packsToServe } from '../packs.js';
import type { AnyReport } from '../reports.js';

export const REPORT_FORMATS = ['md', 'json', 'html'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** Who the audit log says called: the operator at this machine's shell or crontab. */
const CALLER = { id: CLI_CALLER_ID } as const;

/** A command line's request: which report, its arguments as a tool call gives them, and where to. */
export interface ReportRequest {
  readonly report: AnyReport;
  readonly args: Record<string, unknown>;
  readonly format: ReportFormat;
  readonly out: string | undefined;
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
    readonly exitCode: 1 | 2,
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
    if (argument === 'format' || argument === 'out') {
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

function formatsOf(report: AnyReport): ReportFormat[] {
  return REPORT_FORMATS.filter((f) => f === 'json' || (f === 'md' ? report.render?.markdown : report.render?.html));
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
    'Usage: querygate report <name> [--<argument> VALUE ...] [--format md|json|html] [--out FILE]',
    '',
    'Runs one report once, as a tool call of the reader role, and writes it to stdout or FILE (md by default).',
    'A week is an ISO week (2026-W48), a day inside it (YYYY-MM-DD), last or this.',
    'Exit status: 0 done; 2 a bad command line, an argument the report refuses or a configuration error;',
    '1 the database or the report failed, or the output could not be written.',
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
  const known = [...options.map((o) => o.flag), '--format', '--out'].join(', ');
  const args: Record<string, unknown> = {};
  let format: ReportFormat = 'md';
  let out: string | undefined;
  const seen = new Set<string>();
  for (let k = 0; k < rest.length; k++) {
    const token = rest[k]!;
    const match = /^(--[a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(token);
    if (!match) throw new ConfigError(`unexpected argument ${quote(token)}; report ${command} takes ${known}`);
    const flag = match[1]!;
    let value = match[2];
    if (value === undefined && rest[k + 1] !== undefined && !rest[k + 1]!.startsWith('--')) value = rest[++k];
    if (value === undefined) throw new ConfigError(`${flag} takes a value`);
    if (seen.has(flag)) throw new ConfigError(`${flag} is given twice`);
    seen.add(flag);
    if (flag === '--format') {
      if (!(REPORT_FORMATS as readonly string[]).includes(value)) {
        throw new ConfigError(`--format: ${quote(value)} is not one of ${REPORT_FORMATS.join(', ')}`);
      }
      format = value as ReportFormat;
    } else if (flag === '--out') {
      out = value;
    } else {
      const option = options.find((o) => o.flag === flag);
      if (!option) throw new ConfigError(`report ${command} takes no ${flag}; it takes ${known}`);
      args[option.argument] = argumentValue(option, value);
    }
  }
  if (!formatsOf(report).includes(format)) {
    throw new ConfigError(`report ${command} has no ${format} form; it has ${formatsOf(report).join(', ')}`);
  }
  return { report, args, format, out };
}

/** The answer laid out in the asked format, by the report's own renderers. */
export function renderReport(request: ReportRequest, answer: Record<string, unknown>): string {
  const { render } = request.report;
  if (request.format === 'md' && render?.markdown) return ensureNewline(render.markdown(answer as never));
  if (request.format === 'html' && render?.html) return ensureNewline(render.html(answer as never));
  return `${JSON.stringify(answer, null, 2)}\n`;
}

const ensureNewline = (text: string): string => (text.endsWith('\n') ? text : `${text}\n`);

export interface ProgressBar {
  update(done: number, total: number, message: string): void;
  clear(): void;
}

/** A progress bar on a terminal; none where the stream is not one (under cron, in a pipe, in a file). */
export function progressBar(
  stream: Pick<NodeJS.WriteStream, 'isTTY' | 'columns' | 'write'>,
  label: string,
): ProgressBar | undefined {
  if (!stream.isTTY) return undefined;
  let shown = false;
  return {
    update: (done, total, message) => {
      const room = (stream.columns || 80) - label.length - message.length - 5;
      const width = Math.max(10, Math.min(40, room));
      const filled = Math.round((Math.min(done, total) / Math.max(total, 1)) * width);
      stream.write(`\r\x1b[2K${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${message}`);
      shown = true;
    },
    clear: () => {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
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

/** Writes beside the file and renames over it, so that a reader never sees half a report. */
function writeFileWhole(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new ReportFailure(1, `cannot write ${path}: ${(err as Error).message}`);
  }
}

const writeStdout = (text: string): Promise<void> =>
  new Promise((resolve, reject) => process.stdout.write(text, (err) => (err ? reject(err) : resolve())));

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
      await writeStdout(`${reportUsage(reports)}\n`);
      return 0;
    }
    const request = parseReportCommand(argv, reports);
    const app = await startApp(config, logger, {
      packs,
      packPaths: paths,
      ...(file ? { configFile: file } : {}),
      allowUnsafeRole: false,
      onFatal: stop,
      signal: stopping.signal,
    });
    let answer: Record<string, unknown>;
    try {
      if (!app.deps.registry.tools.some((t) => t.name === request.report.name)) {
        throw new ConfigError(`${request.report.name} is not served: the configuration file leaves it out`);
      }
      bar = progressBar(process.stderr, request.report.name);
      let outcome: unknown;
      const result = await app.deps.registry.call(
        request.report.name,
        request.args,
        config.auditLog === undefined ? { ...app.deps, audit: NO_AUDIT } : app.deps,
        {
          caller: CALLER,
          signal: stopping.signal,
          report: (_level, data) => (outcome = data.outcome),
          ...(bar ? { progress: bar.update } : {}),
        },
      );
      bar?.clear();
      if (result.isError) throw new ReportFailure(outcome === 'rejected' ? 2 : 1, reasonOf(result));
      answer = result.structuredContent!;
    } finally {
      await app.stop();
    }
    const text = renderReport(request, answer);
    if (request.out === undefined) await writeStdout(text);
    else writeFileWhole(request.out, text);
    return 0;
  } catch (err) {
    bar?.clear();
    const failure =
      err instanceof ReportFailure
        ? err
        : err instanceof ConfigError
          ? new ReportFailure(2, oneLine(err.message))
          : new ReportFailure(
              1,
              stopping.signal.aborted ? 'stopped by a signal' : oneLine(String((err as Error).message ?? err)),
            );
    process.stderr.write(`querygate report: ${failure.message}\n`);
    return failure.exitCode;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
