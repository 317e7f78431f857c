/**
 * `querygate report`, run as cron runs it: the built CLI, spawned with no terminal, against a scratch
 * database holding the test data set, euro orders and names that would break a table. The JSON is
 * held to figures worked out from the raw orders and to the tool's own answer over MCP, the Markdown to
 * the JSON; a refused week, a week not begun, a bad command line and an unreachable database end with
 * their exit codes and one line on stderr, and a run leaves nothing on stderr or beside its output.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoWeekOf } from '../../src/lib/weeks.js';
import { CLI, runCli } from '../support/cli.js';
import { startHarness, structured, type Harness } from '../support/harness.js';
import { loadSalesData, type SalesData } from '../support/sales-data.js';
import {
  addEuroOrders,
  addHostileSales,
  checkWeeklyReport,
  expectedTrendRows,
  HOSTILE,
  type TrendReport,
  type WeeklyReport,
} from '../support/sales-reports.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let data: SalesData;
let harness: Harness;
let dir: string;
const env = (extra: Record<string, string> = {}): Record<string, string> => ({
  DATABASE_URL: scratch.readerUrl,
  QUERYGATE_TIME_ZONE: 'UTC',
  ...extra,
});
const report = (args: string[], extra?: Record<string, string>) => runCli(['report', ...args], env(extra));

beforeAll(async () => {
  scratch = await createScratchDatabase('report_cli', { orders: 4000, until: '2025-06-30' });
  await addEuroOrders(scratch.admin);
  await addHostileSales(scratch.admin);
  data = await loadSalesData(scratch.admin);
  harness = await startHarness({ readerUrl: scratch.readerUrl, timeZone: 'UTC' });
  dir = mkdtempSync(join(tmpdir(), 'querygate-report-'));
});
afterAll(async () => {
  await harness?.close();
  await scratch?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The tables of a Markdown text by the heading above them: each row's cells, unescaped. */
function markdownTables(text: string): Map<string, string[][]> {
  const tables = new Map<string, string[][]>();
  let heading = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) heading = line.replace(/^#+ /, '');
    if (!line.startsWith('| ') || /^\| ---/.test(line)) continue;
    const cells = line
      .slice(2, -2)
      .split(/(?<!\\) \| /)
      .map((cell) => cell.replace(/\\(.)/g, '$1'));
    if (!tables.has(heading))
      tables.set(heading, []); // the first row is the head
    else tables.get(heading)!.push(cells);
  }
  return tables;
}

const withoutFreshness = ({ data_as_of: _, ...rest }: Record<string, unknown>) => rest;

/** The one rule every format a person reads follows: money 12,345.60, counts 1,204, rates and changes one decimal. */
const shown = (digits: number) => (value: number | null | undefined) =>
  value === null || value === undefined
    ? '–'
    : value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const money = shown(2);
const count = shown(0);
const rate = shown(1);
/** A metric's value as the Figures table shows it: money, a rate in % (its change in pp), or a count. */
const metricValue = (m: WeeklyReport['metrics'][number], value: number | null): string =>
  (m.currency !== null ? money : m.change_unit === 'percentage_points' ? rate : count)(value);

describe('querygate report weekly', () => {
  it('--format json is the tool answer, every figure equal to the raw orders, and nothing else is written', async () => {
    const run = await report(['weekly', '--week', '2025-W24', '--format', 'json']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(run.stdout) as WeeklyReport;
    expect(run.stdout).toBe(`${JSON.stringify(answer, null, 2)}\n`);
    expect(answer).toMatchObject({ week: '2025-W24', start_date: '2025-06-09', end_date: '2025-06-15' });
    checkWeeklyReport(data, answer, 'UTC', '2025-06-09', '2025-06-15');
    expect(answer.regions.map((r) => r.region)).toContain(HOSTILE.region);
    const viaMcp = structured<WeeklyReport>(await harness.call('weekly_sales_report', { week: '2025-W24' }));
    expect(withoutFreshness(answer as never)).toEqual(withoutFreshness(viaMcp as never));
  });

  it('--format md lays out the same figures, names escaped so that no table breaks', async () => {
    const [md, json] = [
      await report(['weekly', '--week', '2025-06-11', '--format', 'md']),
      await report(['weekly', '--week', '2025-W24', '--format', 'json']),
    ];
    expect(md).toMatchObject({ code: 0, stderr: '' });
    const r = JSON.parse(json.stdout) as WeeklyReport;
    const tables = markdownTables(md.stdout);
    expect(md.stdout).toMatch(/^# Weekly sales report 2025-W24\n/);
    expect(tables.get('Figures')!.map((row) => [row[1], row[2], row[3], row[4], row[5]])).toEqual(
      r.metrics.map((m) => [
        m.currency ?? '–',
        metricValue(m, m.value),
        metricValue(m, m.last_week),
        m.change_vs_last_week === null
          ? '–'
          : `${m.change_vs_last_week > 0 ? '+' : ''}${rate(m.change_vs_last_week)} ${m.change_unit === 'percentage_points' ? 'pp' : '%'}`,
        metricValue(m, m.year_ago),
      ]),
    );
    // The summary line writes money as the tables do.
    expect(md.stdout).toContain(
      `**${r.week} (${r.start_date} to ${r.end_date}): ${r.metrics.find((m) => m.metric === 'order_count')!.value} orders; net revenue ${r.metrics
        .filter((m) => m.metric === 'revenue' && m.value !== null)
        .map((m) => `${money(m.value)} ${m.currency}`)
        .join(', ')}.**`,
    );
    expect(tables.get('Revenue by day')!.map((row) => row.slice(1, 4))).toEqual(
      r.daily.map((d) => [d.currency, money(d.revenue), money(d.last_week_revenue)]),
    );
    expect(tables.get('Top products')!.map((row) => [row[1], row[2], row[4], row[5]])).toEqual(
      r.top_products.map((p) => [`${p.name} (${p.sku})`, p.category, money(p.revenue), count(p.units)]),
    );
    expect(tables.get('By region')!.map((row) => row.slice(0, 4))).toEqual(
      r.regions.map((s) => [s.region, s.currency, money(s.revenue), money(s.last_week_revenue)]),
    );
    expect(tables.get('By category')!.map((row) => row.slice(0, 4))).toEqual(
      r.categories.map((s) => [s.category, s.currency, money(s.revenue), money(s.last_week_revenue)]),
    );
    // The names came back whole from between the escapes, and none of them is left as markup.
    expect(tables.get('Top products')!.map((row) => row[1])).toContain(`${HOSTILE.product} (SKU-H0001)`);
    expect(md.stdout).toContain('\\<img src=x onerror=alert(1)\\>');
    const tableLines = md.stdout.split('\n').filter((line) => line.startsWith('| '));
    expect(tableLines.join('\n')).not.toMatch(/(?<!\\)[<>]/);
  });

  it('leads with headline figures, each change called better or worse by which way that figure is good', async () => {
    const stem = join(mkdtempSync(join(dir, 'headlines-')), 'week');
    expect(await report(['weekly', '--week', '2025-W24', '--format', 'json,md,html', '--out', stem])).toMatchObject({
      code: 0,
    });
    const r = JSON.parse(readFileSync(`${stem}.json`, 'utf8')) as WeeklyReport;
    const md = readFileSync(`${stem}.md`, 'utf8');
    const page = readFileSync(`${stem}.html`, 'utf8');
    // Good for a shop: more revenue and orders and a higher basket; fewer cancellations and refunds.
    const good: Record<string, 1 | -1> = {
      revenue: 1,
      order_count: 1,
      avg_order_value: 1,
      cancellation_rate: -1,
      refund_rate: -1,
    };
    const verdicts = r.metrics.map((m) =>
      m.change_vs_last_week === null || m.change_vs_last_week === 0
        ? undefined
        : Math.sign(m.change_vs_last_week) === good[m.metric]
          ? 'better'
          : 'worse',
    );
    // The test week has both: revenue up (better), the refund rate up (worse).
    expect(verdicts).toContain('better');
    expect(verdicts).toContain('worse');
    const headlines = md.split('\n').filter((line) => line.startsWith('- '));
    expect(headlines).toHaveLength(r.metrics.length);
    r.metrics.forEach((m, k) => {
      const verdict = verdicts[k];
      expect(headlines[k]).toMatch(
        verdict === undefined
          ? / against the week before$/
          : new RegExp(
              `^- .*: \\*\\*.+\\*\\*, ${verdict === 'better' ? '▲' : '▼'} .* against the week before \\(${verdict}\\)$`,
            ),
      );
    });
    const cards = [...page.matchAll(/<div class="headline( better| worse| unchanged)?">/g)].map((m) => m[1]?.trim());
    expect(cards).toEqual(
      r.metrics.map((m, k) => verdicts[k] ?? (m.change_vs_last_week === 0 ? 'unchanged' : undefined)),
    );
  });

  it('--format html --out FILE writes one page that names nothing to load, every name escaped', async () => {
    const out = join(dir, 'week.html');
    const run = await report(['weekly', '--week', '2025-W24', '--format', 'html', '--out', out]);
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    const page = readFileSync(out, 'utf8');
    expect(page).toMatch(
      /^<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;sha256-[A-Za-z0-9+/]{43}=&#39;; base-uri &#39;none&#39;; form-action &#39;none&#39;">\n/,
    );
    // Only these elements: no script, image, link, frame or second stylesheet, whatever the names held.
    const elements = new Set([...page.matchAll(/<\/?([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => m[1]!.toLowerCase()));
    expect([...elements].sort()).toEqual([
      'body',
      'caption',
      'desc',
      'div',
      'figure',
      'footer',
      'g',
      'h1',
      'h2',
      'head',
      'header',
      'html',
      'line',
      'meta',
      'p',
      'rect',
      'section',
      'style',
      'svg',
      'table',
      'tbody',
      'td',
      'text',
      'th',
      'thead',
      'title',
      'tr',
    ]);
    expect(page.match(/<style>/g)).toHaveLength(1);
    expect(page).toContain('Mug | &lt;img src=x onerror=alert(1)&gt; *bold* _em_ &amp; &quot;quoted&quot;');
    expect(page).toContain('&lt;script&gt;alert(&quot;category&quot;)&lt;/script&gt;');
    expect(page).not.toMatch(/<[^>]*\s(href|src|srcset|action|style|on[a-z]+)=/i);
  });

  it('takes --week last and this, resolved on the day it is in the reporting time zone', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const lastWeek = isoWeekOf(new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10));
    const last = JSON.parse((await report(['weekly', '--week', 'last', '--format', 'json'])).stdout) as WeeklyReport;
    // The test data ends in 2025: a week of this year has no orders, and says so.
    expect(last).toMatchObject({ week: lastWeek.week, partial: false, has_orders: false });
    const now = JSON.parse((await report(['weekly', '--week=this', '--format=json'])).stdout) as WeeklyReport;
    expect(now).toMatchObject({ week: isoWeekOf(today).week, through_date: today });
  });

  it('refuses a week that is no week, and one that has not begun, with exit code 2 and one line naming week', async () => {
    const bad = await report(['weekly', '--week', '2025-W60', '--format', 'json']);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toBe(
      'querygate report: week: "2025-W60" is not a week; give an ISO week such as 2026-W48, a day inside the week (YYYY-MM-DD), last_week or this_week\n',
    );
    const next = isoWeekOf(new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10));
    const future = await report(['weekly', '--week', next.week, '--format', 'html']);
    expect(future).toMatchObject({ code: 2, stdout: '' });
    expect(future.stderr).toMatch(
      new RegExp(
        `^querygate report: week: ${next.week} starts on ${next.start_date}, after today \\(\\d{4}-\\d{2}-\\d{2}\\); give this week \\(\\d{4}-W\\d{2}\\) or an earlier one\\n$`,
      ),
    );
  });

  it('--help lists the reports with their formats, and every exit status', async () => {
    const help = await report(['--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toMatch(/^ {2}weekly {2}weekly_sales_report .*\(formats: md, json, html, csv, pdf\)$/m);
    for (const status of [0, 1, 2, 3, 4, 5, 6, 7])
      expect(help.stdout).toMatch(new RegExp(`(?:[:;] |\\n)${status} [a-z]`));
  });

  it('refuses a bad command line with exit code 2 before it reads the database', async () => {
    const closed = { DATABASE_URL: `postgres://querygate_reader:x@127.0.0.1:${await closedPort()}/nowhere` };
    for (const [args, message] of [
      [['weekly', '--week', 'last', '--format', 'docx'], '--format: "docx" is not one of md, json, html, csv, pdf'],
      [['weekly', '--week', 'last', '--format', 'md,xlsx'], '--format: "xlsx" is not one of md, json, html, csv, pdf'],
      [['weekly', '--week', 'last', '--format', 'pdf'], '--format pdf writes a file; give --out FILE'],
      [
        ['weekly', '--week', 'last', '--format', 'pdf', '--out', 'week.pdf'],
        '--format pdf: QUERYGATE_CHROMIUM names /nowhere/chromium, which is not an executable; install Chromium there (apt-get install chromium) or name the one you have',
      ],
      [
        ['weekly', '--week', 'last', '--format', 'csv'],
        '--format csv writes several files; give --out STEM (--out reports/week writes reports/week.about.csv and the others beside it)',
      ],
      [
        ['weekly', '--week', 'last', '--format', 'md,html', '--out', 'week.html'],
        "--out: with --format md,html it names the files' stem, without an extension (week, not week.html)",
      ],
      [
        ['weekly', '--week', 'last', '--colour', 'red'],
        'report weekly takes no --colour; it takes --week, --format, --out, --stale-after, --data-scope',
      ],
      [['monthly'], 'no report is called "monthly"; the reports are weekly, trend'],
      [[], 'name a report: weekly, trend'],
      [
        ['weekly', '--week', 'last', '--stale-after', '0h'],
        '--stale-after: "0h" is not a duration; give minutes, hours or days, such as 90m, 36h or 2d',
      ],
      [['weekly', '--week'], '--week takes a value'],
      [
        ['weekly', 'last'],
        'unexpected argument "last"; report weekly takes --week, --format, --out, --stale-after, --data-scope',
      ],
    ] as const) {
      const run = await report([...args], { ...closed, QUERYGATE_CHROMIUM: '/nowhere/chromium' });
      expect({ args, ...run }).toEqual({ args, code: 2, stdout: '', stderr: `querygate report: ${message}\n` });
    }
  });

  it('fails with exit code 4 and one line when the database is unreachable, and writes no --out file', async () => {
    const out = join(dir, 'unreachable.html');
    const run = await report(['weekly', '--week', '2025-W24', '--format', 'html', '--out', out], {
      DATABASE_URL: `postgres://querygate_reader:x@127.0.0.1:${await closedPort()}/sales`,
    });
    expect(run).toMatchObject({ code: 4, stdout: '' });
    expect(run.stderr).toMatch(
      /^querygate report: The database is unavailable right now\. Retry in a few seconds\. \(code: database_unavailable, request_id: [0-9a-f-]{36}\)\n$/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('fails with exit code 3 when the database refuses the password, not as an outage', async () => {
    const url = new URL(scratch.readerUrl);
    url.password = 'rotated-yesterday';
    const out = join(dir, 'refused.html');
    const run = await report(['weekly', '--week', '2025-W24', '--format', 'html', '--out', out], {
      DATABASE_URL: url.toString(),
    });
    expect(run).toMatchObject({ code: 3, stdout: '' });
    expect(run.stderr).toMatch(
      /^querygate report: The database refused the server's login or a permission the query needs\. Retrying will not help until an operator fixes the credentials or the grants; report the request id\. \(code: database_refused, request_id: [0-9a-f-]{36}\)\n$/,
    );
    expect(run.stderr).not.toContain('rotated-yesterday');
    expect(existsSync(out)).toBe(false);
  });

  it('fails with exit code 3 when the reader lacks a grant the report needs', async () => {
    await scratch.admin.query('revoke select on reporting.orders from querygate_reader');
    try {
      const run = await report(['weekly', '--week', '2025-W24', '--format', 'json']);
      expect(run).toMatchObject({ code: 3, stdout: '' });
      // Found by the start-up check, before any figure is read: the source named, and the fix.
      expect(run.stderr).toBe(
        'querygate report: metrics of query_metrics: source orders: the reader cannot read its rows (permission denied for view orders); grant the reader SELECT on what the source reads, in a migration of the pack, or read it through a view the reader may read\n',
      );
    } finally {
      await scratch.admin.query('grant select on reporting.orders to querygate_reader');
    }
  });

  it('fails with exit code 1 when a query times out', async () => {
    // An admin holds every order: the start-up checks pass over what they cannot lock (200 ms a probe,
    // some 20 s in all), and the report's first query waits on the lock until the statement timeout
    // cancels it.
    await scratch.admin.query('begin');
    try {
      await scratch.admin.query('lock table sales.orders in access exclusive mode');
      const run = await report(['weekly', '--week', '2025-W24'], { QUERYGATE_STATEMENT_TIMEOUT_MS: '300' });
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toMatch(/^querygate report: The query timed out and was cancelled\. .*\(code: timeout, /);
    } finally {
      await scratch.admin.query('rollback');
    }
  });

  it('fails with exit code 6 when the output cannot be written, having run the report', async () => {
    const out = join(dir, 'no-such-folder', 'week.md');
    const run = await report(['weekly', '--week', '2025-W24', '--out', out]);
    expect(run).toMatchObject({ code: 6, stdout: '' });
    expect(run.stderr).toMatch(/^querygate report: cannot write .*no-such-folder\/week\.md: ENOENT: .*\n$/);
  });

  it('writes the audit line where QUERYGATE_AUDIT_LOG says, as the cli caller', async () => {
    const audit = join(dir, 'audit.log');
    expect(
      await report(['weekly', '--week', '2025-W24', '--format', 'json'], { QUERYGATE_AUDIT_LOG: audit }),
    ).toMatchObject({ code: 0, stderr: '' });
    expect(await report(['weekly', '--week', '2025-W60'], { QUERYGATE_AUDIT_LOG: audit })).toMatchObject({ code: 2 });
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toMatchObject([
      { type: 'audit', caller: 'cli', tool: 'weekly_sales_report', arguments: { week: '2025-W24' }, outcome: 'ok' },
      { type: 'audit', caller: 'cli', tool: 'weekly_sales_report', outcome: 'rejected', invalid_fields: ['week'] },
    ]);
  });
});

/** The rows of a CSV text (RFC 4180: quoted cells, doubled quotes, CRLF), read back as text. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let k = 0; k < text.length; k++) {
    const c = text[k]!;
    if (quoted && c === '"' && text[k + 1] === '"') {
      cell += '"';
      k++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (quoted) {
      cell += c;
    } else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[k + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      k++;
    } else {
      cell += c;
    }
  }
  expect(cell + row.join('')).toBe(''); // every line ended with CRLF
  return rows;
}

/** A JSON figure as the CSV should hold it: a number as JSON writes it, nothing for null. */
const csvOf = (value: unknown): string => (value === null || value === undefined ? '' : String(value));

describe('querygate report --format with several formats', () => {
  it('writes Markdown, HTML, JSON and a CSV file per table from one run, each with the same figures', async () => {
    const folder = mkdtempSync(join(dir, 'several-'));
    const stem = join(folder, 'week');
    const run = await report(['weekly', '--week', '2025-W24', '--format', 'md,html,json,csv', '--out', stem]);
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    const tables = ['metrics', 'daily', 'top_products', 'regions', 'categories', 'notable_days'];
    expect(readdirSync(folder).sort()).toEqual(
      ['week.md', 'week.html', 'week.json', 'week.about.csv', ...tables.map((t) => `week.${t}.csv`)].sort(),
    );
    const answer = JSON.parse(readFileSync(`${stem}.json`, 'utf8')) as WeeklyReport & Record<string, unknown>;
    checkWeeklyReport(data, answer, 'UTC', '2025-06-09', '2025-06-15');
    // One run: the Markdown and the page carry the JSON's own instant, not another run's.
    expect(readFileSync(`${stem}.md`, 'utf8')).toContain(`Data as of ${answer.data_as_of}.`);
    expect(readFileSync(`${stem}.html`, 'utf8')).toContain(`Data as of ${answer.data_as_of}.`);
    for (const table of tables) {
      const rows = answer[table] as Record<string, unknown>[];
      const [head, ...body] = csvRows(readFileSync(`${stem}.${table}.csv`, 'utf8'));
      expect(head!.length).toBeGreaterThan(0);
      expect({ table, body }).toEqual({ table, body: rows.map((row) => head!.map((column) => csvOf(row[column]))) });
    }
    // The hostile name comes back whole from between its quotes.
    expect(csvRows(readFileSync(`${stem}.top_products.csv`, 'utf8')).some((row) => row.includes(HOSTILE.product))).toBe(
      true,
    );
    const about = new Map(csvRows(readFileSync(`${stem}.about.csv`, 'utf8')).map(([field, value]) => [field, value]));
    expect(about.get('field')).toBe('value');
    expect(
      Object.fromEntries(
        ['week', 'start_date', 'end_date', 'time_zone', 'data_as_of', 'last_week.start_date'].map((f) => [
          f,
          about.get(f),
        ]),
      ),
    ).toEqual({
      week: '2025-W24',
      start_date: '2025-06-09',
      end_date: '2025-06-15',
      time_zone: 'UTC',
      data_as_of: answer.data_as_of,
      'last_week.start_date': '2025-06-02',
    });
  });

  it('writes the trend as CSV, one row per week and currency, equal to the raw orders', async () => {
    const stem = join(mkdtempSync(join(dir, 'csv-')), 'weeks');
    const run = await report([
      'trend',
      '--weeks',
      '12',
      '--through-week',
      '2025-W24',
      '--format',
      'csv',
      '--out',
      stem,
    ]);
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    const [head, ...body] = csvRows(readFileSync(`${stem}.rows.csv`, 'utf8'));
    const expected = expectedTrendRows(data, 'UTC', '2025-03-24', 12, ['EUR', 'USD']);
    expect(body).toHaveLength(expected.length);
    const columns = Object.keys(expected[0]!);
    expect(body.map((row) => columns.map((c) => row[head!.indexOf(c)]))).toEqual(
      expected.map((row) => columns.map((c) => csvOf((row as Record<string, unknown>)[c]))),
    );
  });
});

describe('querygate report --data-scope', () => {
  /** The raw orders of one region's customers, and their items: what a caller scoped to it may see. */
  const only = (region: string): SalesData => {
    const orders = data.orders.filter((o) => data.customers.get(o.customerId)?.region === region);
    const ids = new Set(orders.map((o) => o.id));
    return { ...data, orders, items: data.items.filter((i) => ids.has(i.orderId)) };
  };

  it('runs as a caller scoped to a region: its figures are the raw orders of its region, and every format says so', async () => {
    const audit = join(dir, 'scoped-audit.log');
    const json = await report(['weekly', '--week', '2025-W24', '--format', 'json', '--data-scope', 'region=Europe'], {
      QUERYGATE_AUDIT_LOG: audit,
    });
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(json.stdout) as WeeklyReport & { data_scope: unknown };
    expect(answer.data_scope).toEqual({ region: ['Europe'] });
    expect(answer.regions.map((r) => r.region)).toEqual(answer.regions.map(() => 'Europe'));
    checkWeeklyReport(only('Europe'), answer, 'UTC', '2025-06-09', '2025-06-15');
    const md = await report(['weekly', '--week', '2025-W24', '--data-scope', 'region=Europe']);
    expect(md.stdout).toContain('\n_Data scope: region: Europe. The figures cover those rows only._\n');
    const html = await report(['weekly', '--week', '2025-W24', '--format', 'html', '--data-scope', 'region=Europe']);
    expect(html.stdout).toContain(
      '<p class="notice scope">Data scope: region: Europe. The figures cover those rows only.</p>',
    );
    // The operator's choice is on the audit line, as a token's scope is.
    expect(JSON.parse(readFileSync(audit, 'utf8').trim())).toMatchObject({
      caller: 'cli',
      tool: 'weekly_sales_report',
      data_scope: { region: ['Europe'] },
      outcome: 'ok',
    });
  });

  it('refuses a dimension the packs do not declare, and a scope that is no DIMENSION=VALUE, with exit code 2', async () => {
    expect(await report(['weekly', '--week', '2025-W24', '--data-scope', 'country=DE'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'querygate report: --data-scope: "country" is not a data-scope dimension of the served packs (region)\n',
    });
    expect(await report(['weekly', '--week', '2025-W24', '--data-scope', 'region'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'querygate report: --data-scope: "region" is not DIMENSION=VALUE[,VALUE...], such as region=Europe\n',
    });
  });
});

describe('querygate report --stale-after', () => {
  /** How old the newest order is now, in whole days, read by the admin, not by querygate. */
  const ageInDays = async (): Promise<number> => {
    const { rows } = await scratch.admin.query<{ newest: Date }>('select max(ordered_at) as newest from sales.orders');
    return (Date.now() - rows[0]!.newest.getTime()) / 86_400_000;
  };

  it('writes a report whose data are older than the bound, says so in every format, and exits 5', async () => {
    const bound = Math.floor(await ageInDays()) - 1;
    const { rows } = await scratch.admin.query<{ newest: Date }>('select max(ordered_at) as newest from sales.orders');
    const newest = `${rows[0]!.newest.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
    for (const format of ['json', 'md', 'html'] as const) {
      const out = join(dir, `stale.${format}`);
      const run = await report([
        'weekly',
        '--week',
        '2025-W24',
        '--format',
        format,
        '--out',
        out,
        '--stale-after',
        `${bound}d`,
      ]);
      expect(run).toMatchObject({ code: 5, stdout: '' });
      const sentence = new RegExp(
        `^Stale data: the newest data are from ${newest}, \\d+ days before this report ran \\(\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC\\), older than its bound of ${bound} days\\. The figures stop there\\.$`,
      );
      expect(run.stderr).toMatch(/^querygate report: Stale data: /);
      expect(run.stderr.slice('querygate report: '.length).trim()).toMatch(sentence);
      const text = readFileSync(out, 'utf8');
      if (format === 'json') {
        const answer = JSON.parse(text) as WeeklyReport & { stale_feed: string; data_through: string };
        expect(answer.stale_feed).toMatch(sentence);
        expect(answer.data_through).toBe(rows[0]!.newest.toISOString());
        checkWeeklyReport(data, answer, 'UTC', '2025-06-09', '2025-06-15');
      } else if (format === 'md') {
        expect(text).toMatch(
          /^# Weekly sales report 2025-W24\n\n.*\n\n\*\*Warning: Stale data: the newest data are from /,
        );
      } else {
        expect(text).toMatch(
          /<p class="notice stale">Stale data: the newest data are from [^<]+<\/p>\n<p class="lead">/,
        );
      }
    }
  });

  it('passes a report within the bound, from the command line or the configuration file', async () => {
    const bound = Math.ceil(await ageInDays()) + 1;
    const fresh = await report(['weekly', '--week', '2025-W24', '--format', 'json', '--stale-after', `${bound}d`]);
    expect(fresh).toMatchObject({ code: 0, stderr: '' });
    expect(fresh.stdout).not.toContain('stale_feed');
    const config = join(dir, 'fresh.yaml');
    writeFileSync(config, `reports:\n  sales_trend_report:\n    stale_after: ${bound * 24}h\n`);
    expect(
      await report(['trend', '--weeks', '4', '--through-week', '2025-W24'], { QUERYGATE_CONFIG: config }),
    ).toMatchObject({
      code: 0,
      stderr: '',
    });
    writeFileSync(config, `reports:\n  sales_trend_report:\n    stale_after: ${bound - 3}d\n`);
    const stale = await report(['trend', '--weeks', '4', '--through-week', '2025-W24'], { QUERYGATE_CONFIG: config });
    expect(stale).toMatchObject({ code: 5 });
    expect(stale.stdout).toMatch(/^# .*\n\n.*\n\n\*\*Warning: Stale data: /);
  });

  it('refuses a bound that is no duration, and one for a report not served, with exit code 2', async () => {
    expect(await report(['weekly', '--week', 'last', '--stale-after', '36 hours'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'querygate report: --stale-after: "36 hours" is not a duration; give minutes, hours or days, such as 90m, 36h or 2d\n',
    });
    const config = join(dir, 'bad-reports.json');
    writeFileSync(config, JSON.stringify({ reports: { weekly_report: { stale_after: '2w' } } }));
    const bad = await report(['weekly', '--week', 'last'], { QUERYGATE_CONFIG: config });
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toBe(
      'querygate report: QUERYGATE_CONFIG reports.weekly_report.stale_after: is not a duration; give minutes, hours or days, such as 90m, 36h or 2d\n',
    );
    writeFileSync(config, JSON.stringify({ reports: { weekly_report: { stale_after: '2d' } } }));
    expect(await report(['weekly', '--week', 'last'], { QUERYGATE_CONFIG: config })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'querygate report: QUERYGATE_CONFIG reports.weekly_report: "weekly_report" is not a served report (the reports: weekly_sales_report, sales_trend_report)\n',
    });
  });
});

describe('querygate report trend', () => {
  const first = '2025-03-24'; // the Monday of 2025-W13, twelve weeks before 2025-W24 ends
  it('--format json equals the raw orders, week by week and currency by currency', async () => {
    const run = await report(['trend', '--weeks', '12', '--through-week', '2025-W24', '--format', 'json']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const trend = JSON.parse(run.stdout) as TrendReport;
    expect(trend).toMatchObject({ weeks: 12, first_week: '2025-W13', last_week: '2025-W24', start_date: first });
    expect(trend.rows.map(({ week: _week, change_note: _note, ...row }) => row)).toEqual(
      expectedTrendRows(data, 'UTC', first, 12, ['EUR', 'USD']),
    );
    const viaMcp = structured<TrendReport>(
      await harness.call('sales_trend_report', { weeks: 12, through_week: '2025-W24' }),
    );
    expect(withoutFreshness(trend as never)).toEqual(withoutFreshness(viaMcp as never));
  });

  it('--format md --out FILE writes a table per currency with the JSON figures, and nothing on stdout', async () => {
    const out = join(dir, 'trend.md');
    const run = await report(['trend', '--weeks', '12', '--through-week', '2025-W24', '--format', 'md', '--out', out]);
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    // Written whole under another name, then renamed: nothing is left beside it.
    expect(readdirSync(dir).filter((name) => name.includes('trend'))).toEqual(['trend.md']);
    const json = await report(['trend', '--weeks', '12', '--through-week', '2025-W24', '--format', 'json']);
    const trend = JSON.parse(json.stdout) as TrendReport;
    const tables = markdownTables(readFileSync(out, 'utf8'));
    expect([...tables.keys()]).toEqual(['EUR', 'USD']);
    for (const currency of ['EUR', 'USD']) {
      expect(tables.get(currency)!.map((row) => row.slice(0, 5))).toEqual(
        trend.rows
          .filter((row) => row.currency === currency)
          .map((row) => [
            row.week,
            row.start_date,
            money(row.revenue),
            count(row.order_count),
            money(row.avg_order_value),
          ]),
      );
    }
  });

  it('refuses weeks out of range, naming the field, with exit code 2', async () => {
    for (const [weeks, rule] of [
      ['60', 'weeks: must be at most 52'],
      ['many', 'weeks: must be a number, got a string'],
    ]) {
      expect(await report(['trend', '--weeks', weeks!])).toEqual({
        code: 2,
        stdout: '',
        stderr: `querygate report: ${rule}\n`,
      });
    }
  });

  it('shows a progress bar on stderr when it is a terminal', async () => {
    const out = join(dir, 'trend-tty.json');
    // script(1) runs the command on a pseudo-terminal and copies what it shows.
    const shown = await new Promise<{ code: number | null; text: string }>((done) => {
      const child = spawn(
        'script',
        [
          '-qec',
          `'${process.execPath}' '${CLI}' report trend --weeks 40 --through-week 2025-W24 --format json --out '${out}'`,
          '/dev/null',
        ],
        { env: { PATH: process.env.PATH ?? '', ...env() }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      child.once('exit', (code) => done({ code, text }));
    });
    expect(shown.code).toBe(0);
    // 41 weeks (one before the first) read 12 at a time: four queries, the bar redrawn after each, then cleared.
    const frames = shown.text.split('\r\u001b[2K');
    expect(frames).toEqual([
      '',
      ...[1, 2, 3, 4].map((step) =>
        expect.stringMatching(new RegExp(`^sales_trend_report \\[[#.]{10,40}\\] ${step} of 4 queries done$`)),
      ),
      '',
    ]);
    expect((JSON.parse(readFileSync(out, 'utf8')) as TrendReport).rows).toHaveLength(80);
  });
});

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
