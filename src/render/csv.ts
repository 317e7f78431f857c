/**
 * A report as CSV (RFC 4180): a file per table of its answer (each array of rows), and one `about` file
 * of everything else (its range, time zone, freshness, scope and any warning), so that every file a
 * spreadsheet opens is one plain table and nothing the other formats say is lost. Numbers stay numbers,
 * without separators, for the spreadsheet to format; text that a spreadsheet would run as a formula is
 * written with a leading apostrophe.
 */

export interface CsvFile {
  /** `about`, or the answer's key of the table (`daily`, `top_products`). */
  readonly name: string;
  readonly text: string;
}

type Value = unknown;

/** A cell: quoted when it holds a separator, a quote, a line break or edge spaces; a formula defused. */
export function csvCell(value: Value): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  let text = typeof value === 'string' ? value : JSON.stringify(value);
  // =SUM(..), +cmd, -cmd, @cmd, and a tab or return before one: a spreadsheet would evaluate them (OWASP, CSV injection).
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const line = (cells: readonly Value[]): string => `${cells.map(csvCell).join(',')}\r\n`;

const isRow = (value: Value): value is Record<string, Value> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fields that are not tables, flattened with dotted names (`last_week.start_date`); lists of values joined. */
function aboutRows(value: Record<string, Value>, prefix = ''): [string, Value][] {
  return Object.entries(value).flatMap(([key, field]): [string, Value][] => {
    const name = `${prefix}${key}`;
    if (Array.isArray(field)) return field.every((v) => !isRow(v)) ? [[name, field.join('; ')]] : [];
    return isRow(field) ? aboutRows(field, `${name}.`) : [[name, field]];
  });
}

/**
 * The answer's files: `about` first, then each table in the answer's order. `columns` gives a table's
 * columns by its key (from the answer's schema), so that a table with no rows still has its header;
 * otherwise they are the keys of its rows, in the order they first appear.
 */
export function csvFiles(
  answer: Record<string, Value>,
  columns: Readonly<Record<string, readonly string[]>> = {},
): CsvFile[] {
  const tables = Object.entries(answer).filter((entry): entry is [string, Record<string, Value>[]] =>
    Array.isArray(entry[1]) && entry[1].length > 0
      ? entry[1].every(isRow)
      : Array.isArray(entry[1]) && columns[entry[0]] !== undefined,
  );
  const tableNames = new Set(tables.map(([name]) => name));
  const about = aboutRows(Object.fromEntries(Object.entries(answer).filter(([key]) => !tableNames.has(key))));
  return [
    { name: 'about', text: line(['field', 'value']) + about.map((row) => line(row)).join('') },
    ...tables.map(([name, rows]) => {
      const head = columns[name] ?? [...new Set(rows.flatMap((row) => Object.keys(row)))];
      return { name, text: line(head) + rows.map((row) => line(head.map((c) => row[c]))).join('') };
    }),
  ];
}
