/**
 * Markdown for reports: tables whose cells hold what they are given and nothing more. A value read
 * from the database (a name, a category) may hold any character; escaped, it can neither end its cell
 * nor become markup, a link or HTML in whatever renders the text.
 */
import { describeScope, type DataScope } from '../lib/data-scope.js';

/** Text as Markdown that shows it as it is: its punctuation backslash-escaped, its lines joined. */
export function markdownText(text: string): string {
  return text.replace(/[\\`*_[\]<>|&~]/g, '\\$&').replace(/\s*[\r\n]+\s*/g, ' ');
}

/** A table cell: a number as JSON writes it, text escaped, and a dash for no value. */
export function markdownCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return typeof value === 'number' ? String(value) : markdownText(value);
}

/**
 * For the answer of a caller who sees part of the data: the paragraph that says which part, to put
 * under the title, so that no reader takes the figures for the whole. Nothing for anyone else.
 */
export function markdownScopeNote(answer: { readonly data_scope?: DataScope }): string[] {
  if (answer.data_scope === undefined) return [];
  return [`_Data scope: ${markdownText(describeScope(answer.data_scope))}. The figures cover those rows only._`, ''];
}

/** A table, or a line saying there is nothing to show. */
export function markdownTable(
  head: readonly string[],
  rows: readonly (readonly (string | number | null | undefined)[])[],
): string {
  if (rows.length === 0) return '_None._\n';
  const line = (cells: readonly (string | number | null | undefined)[]): string =>
    `| ${cells.map(markdownCell).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n') + '\n';
}
