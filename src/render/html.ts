/**
 * HTML for reports: one page that holds everything it shows. Every value written into it is escaped
 * unless it is markup the `markup` template made; the page's Content-Security-Policy lets it load
 * nothing (no script, font, image or connection) but its own stylesheet, allowed by its hash; and it
 * prints, with its tables beside its charts.
 */
import { createHash } from 'node:crypto';
import { reportNotes, type NotedAnswer } from './notes.js';

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text as HTML that shows it as it is, in an element or in a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** Markup made by `markup`: the one kind of value written into a page as it is. */
export class Markup {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlValue = Markup | string | number | null | undefined | false | readonly HtmlValue[];

function written(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Markup) return value.text;
  if (Array.isArray(value)) return value.map(written).join('');
  return escapeHtml(String(value));
}

/**
 * A template of HTML or SVG: each value put into it is escaped, unless `markup` made it. (Not named
 * `html`, which Prettier would reformat as HTML, changing the text of elements.)
 */
export function markup(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Markup {
  let text = strings[0]!;
  values.forEach((value, k) => (text += written(value) + strings[k + 1]!));
  return new Markup(text);
}

/** An element id from its parts ("daily", "USD" give "daily-usd"): lower-case letters, digits and dashes. */
export function htmlId(...parts: readonly string[]): string {
  return parts.map((part) => part.toLowerCase().replace(/[^a-z0-9]+/g, '-')).join('-');
}

export interface TableColumn {
  readonly title: string;
  /** Right-aligned, for figures. */
  readonly numeric?: boolean;
}

/** Tables with more columns than this are laid out as a card per row on a phone (the stylesheet's `wide`). */
const PHONE_COLUMNS = 4;

/**
 * A table of figures with its caption; a paragraph saying there is none when it has no rows. Each cell
 * carries its column's title (`data-label`), which a phone shows beside it when the row becomes a card.
 */
export function htmlTable(table: {
  readonly id: string;
  readonly caption: string;
  readonly columns: readonly TableColumn[];
  readonly rows: readonly (readonly HtmlValue[])[];
}): Markup {
  if (table.rows.length === 0) return markup`<p class="empty" id="${table.id}">${table.caption}: none.</p>`;
  const numeric = (k: number): Markup | undefined => (table.columns[k]?.numeric ? markup` class="num"` : undefined);
  const head = table.columns.map((c, k) => markup`<th scope="col"${numeric(k)}>${c.title}</th>`);
  const label = (k: number): string => table.columns[k]?.title ?? '';
  const rows = table.rows.map(
    (row) =>
      markup`<tr>${row.map((cell, k) => markup`<td${numeric(k)} data-label="${label(k)}">${cell ?? '–'}</td>`)}</tr>\n`,
  );
  const wide = table.columns.length > PHONE_COLUMNS ? markup` class="wide"` : undefined;
  return markup`<table id="${table.id}"${wide}>
<caption>${table.caption}</caption>
<thead><tr>${head}</tr></thead>
<tbody>
${rows}</tbody>
</table>`;
}

/**
 * The notes to put in a page's header (src/render/notes.ts): a stale feed as a warning, a caller's data
 * scope, so that no reader takes the figures for fresh or for the whole. Nothing otherwise.
 */
export function htmlNotes(answer: NotedAnswer): Markup {
  return markup`${reportNotes(answer).map((note) => markup`<p class="notice ${note.kind}">${note.text}</p>\n`)}`;
}

/** The stylesheet of every report page; series colours stay apart in grey too, for printers. */
const STYLE = `
:root { --ink: #1b1f24; --muted: #57606a; --rule: #d0d7de; --head: #f3f5f7; --s0: #1f5fa8; --s1: #a7c1e0; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: var(--ink); background: #fff; max-width: 76rem; margin: 0 auto; padding: 2rem 1.5rem 3rem; }
h1 { font-size: 1.65rem; margin: 0 0 .3rem; }
h2 { font-size: 1.2rem; margin: 2.2rem 0 .7rem; padding-bottom: .3rem; border-bottom: 1px solid var(--rule); }
p { margin: .4rem 0; }
.meta, .note, .empty { color: var(--muted); }
.headlines { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: .6rem; margin: 1rem 0; }
.headline { border: 1px solid var(--rule); border-left-width: 4px; border-radius: 4px; padding: .4rem .6rem; }
.headline p { margin: 0; }
.headline .label { color: var(--muted); font-size: .9em; }
.headline .value { font-size: 1.35rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.headline .change { font-size: .9em; }
.headline.better { border-left-color: #1a7f37; } .headline.better .change { color: #1a7f37; }
.headline.worse { border-left-color: #b3261e; } .headline.worse .change { color: #b3261e; }
.notice { margin: .8rem 0; padding: .5rem .8rem; border-left: 4px solid var(--muted); background: var(--head); }
.notice.stale { border-left-color: #b3261e; background: #fdecea; font-weight: 600; }
.notice.restated { border-left-color: #b26a00; background: #fff4e5; }
.notice.alert { border-left-color: #b3261e; background: #fdecea; font-weight: 600; }
.lead { font-size: 1.05rem; font-weight: 600; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: 1.5rem; align-items: start;
  margin-bottom: 1.2rem; }
.pair th, .pair td { white-space: nowrap; }
@media (max-width: 60rem) { .pair { grid-template-columns: minmax(0, 1fr); } }
@media (max-width: 30rem) {
  body { font-size: 14px; padding: 1rem .6rem 2rem; }
  h1 { font-size: 1.35rem; }
  th, .pair th { white-space: normal; }
  td:not(.num), .pair td:not(.num) { white-space: normal; overflow-wrap: anywhere; }
  table.wide thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.wide tr { display: block; padding: .3rem 0; border-bottom: 1px solid var(--rule); }
  table.wide td { display: flex; justify-content: space-between; gap: 1rem; border: 0; padding: .1rem .2rem;
    text-align: right; }
  table.wide td::before { content: attr(data-label); color: var(--muted); text-align: left; }
}
figure { margin: 0; }
svg.chart { display: block; width: 100%; height: auto; font-family: inherit; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin-bottom: 1rem; }
caption { text-align: left; font-weight: 600; padding: 0 0 .4rem; }
th, td { padding: .3rem .55rem; border-bottom: 1px solid var(--rule); text-align: left; vertical-align: top; }
thead th { background: var(--head); font-weight: 600; }
.num { text-align: right; white-space: nowrap; }
.series-0 { --c: var(--s0); }
.series-1 { --c: var(--s1); }
.chart rect.bar, .chart circle.point, .chart rect.swatch { fill: var(--c); }
.chart path.line { fill: none; stroke: var(--c); stroke-width: 2.5; }
.chart .grid line { stroke: var(--rule); }
.chart .zero { stroke: var(--muted); }
.chart text { font-size: 12px; fill: var(--muted); }
.chart text.legend, .chart text.unit { fill: var(--ink); }
.chart text.on-end { font-size: 9px; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; }
  .pair, table, figure { break-inside: avoid; }
  .pair { grid-template-columns: minmax(0, 1fr); gap: .6rem; }
  th, .pair th { white-space: normal; }
  td:not(.num), .pair td:not(.num) { white-space: normal; overflow-wrap: anywhere; }
  svg.chart { max-height: 9cm; }
  @page { size: A4; margin: 1.5cm; }
}
`.trim();

/** The policy of every report page: nothing may load, but the stylesheet above, by its hash. */
export const REPORT_PAGE_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** A whole page around a report's body: one file to mail, keep or print, that fetches nothing. */
export function htmlPage(page: { readonly title: string; readonly body: Markup; readonly lang?: string }): string {
  return markup`<!doctype html>
<html lang="${page.lang ?? 'en'}">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_PAGE_POLICY}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${page.title}</title>
<style>${new Markup(STYLE)}</style>
</head>
<body>
${page.body}
</body>
</html>
`.text;
}
