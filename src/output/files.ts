/**
 * Where `querygate report` writes what it made: each format asked for, from one answer, to stdout or to
 * files. One format goes to stdout or to `--out FILE`; several (or CSV, a file per table) go beside one
 * another under the stem `--out` names (`week` gives week.md, week.html, week.daily.csv). Every file is
 * written beside itself and renamed into place, so that no reader sees half of one.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { csvFiles } from '../render/csv.js';
import type { AnyReport } from '../reports.js';

export const REPORT_FORMATS = ['md', 'json', 'html', 'csv', 'pdf'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** One piece of output: the file it goes to, or stdout when `path` is undefined. */
export interface ReportFile {
  readonly path: string | undefined;
  readonly text: string | Uint8Array;
}

/** The report was made, but a file of it (or stdout) could not be written. */
export class DeliveryFailure extends Error {}

/** The formats a report has: JSON and CSV from any answer, Markdown and HTML (and PDF) from its own renderers. */
export function formatsOf(report: AnyReport): ReportFormat[] {
  return REPORT_FORMATS.filter((f) =>
    f === 'md' ? report.render?.markdown : f === 'html' || f === 'pdf' ? report.render?.html : true,
  );
}

/**
 * Checks the formats and `--out` together before anything runs: one text format that is not CSV may
 * go to stdout or to a file, a PDF to a file; several, or CSV, need a stem to name their files by.
 */
export function checkOutput(report: AnyReport, formats: readonly ReportFormat[], out: string | undefined): void {
  const command = report.command ?? report.name;
  const missing = formats.filter((f) => !formatsOf(report).includes(f));
  if (missing.length > 0) {
    throw new ConfigError(
      `report ${command} has no ${missing.join(', ')} form; it has ${formatsOf(report).join(', ')}`,
    );
  }
  const severalFiles = formats.length > 1 || formats[0] === 'csv';
  if (!severalFiles) {
    if (formats[0] === 'pdf' && out === undefined) throw new ConfigError('--format pdf writes a file; give --out FILE');
    return;
  }
  if (out === undefined) {
    throw new ConfigError(
      `--format ${formats.join(',')} writes several files; give --out STEM (--out reports/week writes reports/week.${formats[0] === 'csv' ? 'about.csv' : formats[0]} and the others beside it)`,
    );
  }
  const extension = /\.(md|json|html|csv|pdf)$/i.exec(out);
  if (extension) {
    throw new ConfigError(
      `--out: with --format ${formats.join(',')} it names the files' stem, without an extension (${out.slice(0, -extension[0].length)}, not ${out})`,
    );
  }
}

/** A table's columns by its key, from the report's answer schema: an empty table keeps its header. */
function tableColumns(report: AnyReport): Record<string, string[]> {
  const schema = z.toJSONSchema(report.output, { io: 'output', unrepresentable: 'any' }) as {
    properties?: Record<string, { type?: string; items?: { properties?: Record<string, unknown> } }>;
  };
  return Object.fromEntries(
    Object.entries(schema.properties ?? {}).flatMap(([key, property]) =>
      property.type === 'array' && property.items?.properties ? [[key, Object.keys(property.items.properties)]] : [],
    ),
  );
}

const ensureNewline = (text: string): string => (text.endsWith('\n') ? text : `${text}\n`);

/** The answer laid out in one text format, by the report's own renderers or the engine's (JSON). */
export function rendered(report: AnyReport, format: 'md' | 'html' | 'json', answer: Record<string, unknown>): string {
  if (format === 'md' && report.render?.markdown) return ensureNewline(report.render.markdown(answer as never));
  if (format === 'html' && report.render?.html) return ensureNewline(report.render.html(answer as never));
  return `${JSON.stringify(answer, null, 2)}\n`;
}

/**
 * Every file of the answer in the formats asked for, checked by checkOutput. A PDF is the HTML page
 * printed by `print` (pdf.ts), given only when PDF is asked for.
 */
export async function reportFiles(
  report: AnyReport,
  formats: readonly ReportFormat[],
  out: string | undefined,
  answer: Record<string, unknown>,
  print?: (html: string) => Promise<Uint8Array>,
): Promise<ReportFile[]> {
  const single = formats.length === 1 && formats[0] !== 'csv';
  const files: ReportFile[] = [];
  // Laid out once when both the page and its PDF are asked for.
  let html: string | undefined;
  const page = (): string => (html ??= rendered(report, 'html', answer));
  for (const format of formats) {
    if (format === 'csv') {
      const tables = csvFiles(answer, tableColumns(report));
      files.push(...tables.map((file) => ({ path: `${out}.${file.name}.csv`, text: file.text })));
    } else if (format === 'pdf') {
      if (!print) throw new ConfigError('--format pdf: nothing to print it with');
      files.push({ path: single ? out : `${out}.pdf`, text: await print(page()) });
    } else if (format === 'html') {
      files.push({ path: single ? out : `${out}.html`, text: page() });
    } else {
      files.push({ path: single ? out : `${out}.${format}`, text: rendered(report, format, answer) });
    }
  }
  return files;
}

/** Writes beside the file and renames over it, so that a reader never sees half a report. */
function writeFileWhole(path: string, text: string | Uint8Array): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text);
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new DeliveryFailure(`cannot write ${path}: ${(err as Error).message}`);
  }
}

const writeStdout = (text: string | Uint8Array): Promise<void> =>
  new Promise((resolve, reject) =>
    process.stdout.write(text, (err) =>
      err ? reject(new DeliveryFailure(`cannot write stdout: ${err.message}`)) : resolve(),
    ),
  );

/** Writes every file, in order; the first that cannot be written stops the rest. */
export async function writeReportFiles(files: readonly ReportFile[]): Promise<void> {
  for (const file of files) {
    if (file.path === undefined) await writeStdout(file.text);
    else writeFileWhole(file.path, file.text);
  }
}
