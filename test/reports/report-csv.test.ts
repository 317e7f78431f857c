/**
 * The CSV of a report (src/render/csv.ts), cell by cell: what a spreadsheet would run as a formula is
 * defused, what would end a cell is quoted, numbers stay numbers, and an empty table keeps its header.
 * The files of real reports are held to their JSON in report-cli.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { csvCell, csvFiles } from '../../src/render/csv.js';

describe('a CSV cell', () => {
  it('defuses text a spreadsheet would run as a formula, and leaves negative numbers numbers', () => {
    expect(
      ['=HYPERLINK("http://x","y")', '+1+1', '-2+3', '@SUM(A1)', '\t=1', 'a=b', 'Total'].map((text) => csvCell(text)),
    ).toEqual([`"'=HYPERLINK(""http://x"",""y"")"`, "'+1+1", "'-2+3", "'@SUM(A1)", "'\t=1", 'a=b', 'Total']);
    expect([-12.5, 0, 1204.3, null, undefined, true].map((value) => csvCell(value))).toEqual([
      '-12.5',
      '0',
      '1204.3',
      '',
      '',
      'true',
    ]);
  });

  it('quotes a cell holding a comma, a quote, a line break or edge spaces, doubling its quotes', () => {
    expect(['a,b', 'say "hi"', 'two\nlines', ' padded', 'plain'].map((text) => csvCell(text))).toEqual([
      '"a,b"',
      '"say ""hi"""',
      '"two\nlines"',
      '" padded"',
      'plain',
    ]);
  });
});

describe('the CSV files of an answer', () => {
  it('puts every field that is not a table in about, flattened, and each table in a file of its own', () => {
    const files = csvFiles(
      {
        week: '2026-W10',
        last_week: { start_date: '2026-02-23', end_date: '2026-03-01' },
        data_scope: { region: ['Europe', 'Asia Pacific'] },
        daily: [
          { date: '2026-03-02', revenue: 10.5 },
          { date: '2026-03-03', revenue: null, note: 'x' },
        ],
        notable_days: [],
      },
      { notable_days: ['date', 'direction'] },
    );
    expect(files).toEqual([
      {
        name: 'about',
        text: 'field,value\r\nweek,2026-W10\r\nlast_week.start_date,2026-02-23\r\nlast_week.end_date,2026-03-01\r\ndata_scope.region,Europe; Asia Pacific\r\n',
      },
      { name: 'daily', text: 'date,revenue,note\r\n2026-03-02,10.5,\r\n2026-03-03,,x\r\n' },
      { name: 'notable_days', text: 'date,direction\r\n' },
    ]);
  });
});
