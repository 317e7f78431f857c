/**
 * Markdown for reports: tables whose cells hold what they are given and nothing more. A value read
 * from the database (a name, a category) may hold any character; escaped, it can neither end its cell
 * nor become markup, a link or HTML in whatever renders the text.
 */
import { reportNotes, type NotedAnswer } from './notes.js';

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
 * The paragraphs to put under the title (src/render/notes.ts): a stale feed in bold, a caller's data
 * scope in italics, so that no reader takes the figures for fresh or for the whole. Nothing otherwise.
 */
export function markdownNotes(answer: NotedAnswer): string[] {
  return reportNotes(answer).flatMap((note) => [
    note.kind === 'stale'
      ? `**Warning: ${markdownText(note.text)}**`
      : note.kind === 'alert'
        ? `**${markdownText(note.text)}**`
        : `_${markdownText(note.text)}_`,
    '',
  ]);
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
