/**
 * The report pages as a reader's browser shows them: Debian's Chromium, headless, driven by
 * playwright-core, opens the files `querygate report … --format html` wrote from a scratch database
 * (euro orders beside the seeded dollars, and names that would be markup if written as they are).
 * A page loads nothing but itself, breaks no rule of its Content-Security-Policy (which is in force:
 * a fetch or an image the test adds is refused), draws its charts with a bar or point per figure, and
 * its tables hold the figures of the JSON form. It prints, too.
 *
 * Chromium must be at /usr/bin/chromium (QUERYGATE_CHROMIUM to name another): without it these tests
 * fail, saying so. QUERYGATE_BROWSER_TESTS=0 skips them on a machine without a browser; CI never sets
 * it (.ci/run installs Chromium). QUERYGATE_SCREENSHOTS=docs writes the screenshots of docs/reports.md.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_TESTS, CHROMIUM, launchChromium } from '../support/browser.js';
import { runCli } from '../support/cli.js';
import {
  addEuroOrders,
  addHostileSales,
  HOSTILE,
  type TrendReport,
  type WeeklyReport,
} from '../support/sales-reports.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const SCREENSHOTS = process.env.QUERYGATE_SCREENSHOTS;

let scratch: ScratchDatabase;
let browser: Browser;
let dir: string;

/** Writes a report with the CLI, as cron would, in both forms; gives the page's file and the JSON. */
async function write<T>(name: string, args: string[]): Promise<{ file: string; json: T }> {
  const env = { DATABASE_URL: scratch.readerUrl, QUERYGATE_TIME_ZONE: 'UTC' };
  const file = join(dir, `${name}.html`);
  const html = await runCli(['report', ...args, '--format', 'html', '--out', file], env);
  expect(html).toEqual({ code: 0, stdout: '', stderr: '' });
  const json = await runCli(['report', ...args, '--format', 'json'], env);
  expect(json).toMatchObject({ code: 0, stderr: '' });
  return { file, json: JSON.parse(json.stdout) as T };
}

interface Opened {
  readonly page: Page;
  readonly url: string;
  /** Every request the page made, from its first. */
  readonly requests: string[];
  /** Console errors and uncaught errors. */
  readonly errors: string[];
}

/** Opens a page file, recording its requests, errors and policy violations from the first moment. */
async function open(file: string): Promise<Opened> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests: string[] = [];
  const errors: string[] = [];
  page.on('request', (request) => void requests.push(request.url()));
  page.on('console', (message) => void (message.type() === 'error' && errors.push(message.text())));
  page.on('pageerror', (error) => void errors.push(error.message));
  await page.addInitScript({
    content:
      "window.__violations = []; document.addEventListener('securitypolicyviolation', (e) => window.__violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI }));",
  });
  const url = `file://${file}`;
  await page.goto(url, { waitUntil: 'load' });
  return { page, url, requests, errors };
}

const violations = (page: Page): Promise<{ directive: string; blocked: string }[]> =>
  page.evaluate('window.__violations') as Promise<{ directive: string; blocked: string }[]>;

/** The cells of a table's body, row by row, as the page shows them. */
const cells = (page: Page, id: string): Promise<string[][]> =>
  page.evaluate(
    `Array.from(document.querySelectorAll('#${id} tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent))`,
  ) as Promise<string[][]>;

/** A figure as the page writes it ("12,345.60", "+8.7 %", "-0.4 pp", "–"), as the JSON holds it. */
function figure(text: string): number | null {
  if (text === '–') return null;
  return Number(text.replace(/,/g, '').replace(/ (%|pp)$/, ''));
}

/** Passes when the page loaded nothing but itself, logged no error and broke no rule of its policy. */
async function expectSelfContained(opened: Opened): Promise<void> {
  expect(opened.requests).toEqual([opened.url]);
  expect(opened.errors).toEqual([]);
  expect(await violations(opened.page)).toEqual([]);
  // The stylesheet the policy allows by its hash was applied.
  const head = await opened.page.evaluate("getComputedStyle(document.querySelector('thead th')).backgroundColor");
  expect(head).toBe('rgb(243, 245, 247)');
}

async function screenshot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  if (SCREENSHOTS) await page.screenshot({ fullPage: true, path: resolve(SCREENSHOTS, `${name}.png`) });
}

describe.skipIf(!BROWSER_TESTS)('report pages in headless Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    scratch = await createScratchDatabase('report_html', { orders: 4000, until: '2025-06-30' });
    await addEuroOrders(scratch.admin);
    await addHostileSales(scratch.admin);
    dir = mkdtempSync(join(tmpdir(), 'querygate-pages-'));
  });
  afterAll(async () => {
    await browser?.close();
    await scratch?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the weekly page loads nothing, draws a bar per figure and tables the JSON figures beside them', async () => {
    const { file, json: r } = await write<WeeklyReport>('weekly', ['weekly', '--week', '2025-W24']);
    const opened = await open(file);
    const { page } = opened;
    await expectSelfContained(opened);
    expect(await page.title()).toBe('Weekly sales report 2025-W24');

    const figures = await cells(page, 'figures');
    expect(figures.map((row) => [row[1], figure(row[2]!), figure(row[3]!), figure(row[4]!), figure(row[5]!)])).toEqual(
      r.metrics.map((m) => [m.currency ?? '–', m.value, m.last_week, m.change_vs_last_week, m.year_ago]),
    );
    const currencies = [...new Set(r.daily.map((d) => d.currency))];
    expect(currencies).toEqual(['EUR', 'USD']);
    for (const currency of currencies) {
      const id = currency.toLowerCase();
      const days = r.daily.filter((d) => d.currency === currency);
      expect(days).toHaveLength(7);
      // Money of one currency to a chart: this week's and the week before's bar for each day.
      const chart = page.locator(`svg#daily-${id}-chart[role="img"]`);
      expect(await chart.locator('rect.bar').count()).toBe(2 * days.length);
      expect(await chart.locator('rect.bar.series-0').count()).toBe(days.length);
      expect(await chart.locator(':scope > title').textContent()).toBe(`Net revenue by day, ${currency}`);
      expect(await chart.getAttribute('aria-labelledby')).toBe(`daily-${id}-chart-title daily-${id}-chart-desc`);
      expect(await chart.locator(':scope > desc').textContent()).toContain(currency);
      expect((await cells(page, `daily-${id}`)).map((row) => row.slice(1).map(figure))).toEqual(
        days.map((d) => [d.revenue, d.last_week_revenue, d.change_pct]),
      );
      // Each bar's title says its figure.
      expect(await chart.locator('rect.bar.series-0 > title').first().textContent()).toBe(
        `Mon 06-09, 2025-W24: ${days[0]!.revenue.toLocaleString('en-US', { minimumFractionDigits: 2 })} ${currency}`,
      );

      const regions = r.regions.filter((s) => s.currency === currency);
      const regionChart = page.locator(`svg#regions-${id}-chart`);
      expect(await regionChart.locator('rect.bar').count()).toBe(2 * regions.length);
      expect(await cells(page, `regions-${id}`)).toEqual(
        regions.map((s) => [
          s.region,
          ...[s.revenue, s.last_week_revenue].map((v) => v.toLocaleString('en-US', { minimumFractionDigits: 2 })),
          s.change_pct === null
            ? '–'
            : `${s.change_pct > 0 ? '+' : ''}${s.change_pct.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} %`,
        ]),
      );
    }
    expect(
      (await cells(page, 'top-products')).map((row) => [row[1], row[2], row[4], figure(row[5]!), figure(row[6]!)]),
    ).toEqual(r.top_products.map((p) => [p.name, p.sku, p.currency, p.revenue, p.units]));
    expect((await cells(page, 'categories')).map((row) => [row[0], row[1], figure(row[2]!), figure(row[3]!)])).toEqual(
      r.categories.map((s) => [s.category, s.currency, s.revenue, s.last_week_revenue]),
    );

    // What the database named is text on the page: no element came of it, and its style did not apply.
    expect(await page.locator('#top-products td', { hasText: 'SKU-H0001' }).count()).toBe(1);
    expect((await cells(page, 'top-products')).map((row) => row[1])).toContain(HOSTILE.product);
    expect((await cells(page, 'regions-eur')).map((row) => row[0])).toContain(HOSTILE.region);
    expect((await cells(page, 'categories')).map((row) => row[0])).toContain(HOSTILE.category);
    expect(await page.locator('script, img, iframe, object, embed, link, base, form').count()).toBe(0);
    expect(await page.locator('style').count()).toBe(1);
    expect(await page.locator('body').isVisible()).toBe(true);
    expect(await page.locator('[onerror], [onload], [style]').count()).toBe(0);
    expect(opened.errors).toEqual([]);
  });

  it('the trend page draws a point per week for each currency, beside the JSON figures', async () => {
    const { file, json: trend } = await write<TrendReport>('trend', [
      'trend',
      '--weeks',
      '12',
      '--through-week',
      '2025-W25',
    ]);
    const opened = await open(file);
    const { page } = opened;
    await expectSelfContained(opened);
    for (const currency of ['EUR', 'USD']) {
      const id = `trend-${currency.toLowerCase()}`;
      const rows = trend.rows.filter((row) => row.currency === currency);
      expect(rows).toHaveLength(12);
      const chart = page.locator(`svg#${id}-chart[role="img"]`);
      expect(await chart.locator('circle.point').count()).toBe(12);
      expect(await chart.locator('path.line').getAttribute('d')).toMatch(/^M[\d.]+ [\d.]+( L[\d.]+ [\d.]+){11}$/);
      expect(await chart.locator(':scope > title').textContent()).toBe(`Net revenue per week, ${currency}`);
      // Every week is labelled under its point, and the value axis says what it counts.
      expect(await chart.locator(':scope > text:not(.unit)').allTextContents()).toEqual(
        rows.map((row) => row.week.slice(5)),
      );
      expect(await chart.locator('text.unit').textContent()).toBe(`in ${currency}`);
      expect((await cells(page, id)).map((row) => [row[0], row[1], ...row.slice(2).map(figure)])).toEqual(
        rows.map((row) => [
          row.week,
          row.start_date,
          row.revenue,
          row.order_count,
          row.avg_order_value,
          row.change_pct,
        ]),
      );
    }
    await screenshot(page, 'trend-report');
  });

  it('labels every week of a long trend, standing on end, none cut off by the chart', async () => {
    const { file, json: trend } = await write<TrendReport>('trend-long', [
      'trend',
      '--weeks',
      '40',
      '--through-week',
      '2025-W25',
    ]);
    const { page } = await open(file);
    const weeks = trend.rows.filter((row) => row.currency === 'USD').map((row) => row.week.slice(5));
    expect(weeks).toHaveLength(40);
    const labels = page.locator('svg#trend-usd-chart > text.on-end');
    expect(await labels.allTextContents()).toEqual(weeks);
    // Each label lies inside the drawing, and no two overlap.
    const boxes = (await page.evaluate(
      "(() => { const svg = document.querySelector('svg#trend-usd-chart').getBoundingClientRect(); return Array.from(document.querySelectorAll('svg#trend-usd-chart > text.on-end'), (t) => { const b = t.getBoundingClientRect(); return [b.left - svg.left, b.right - svg.left, b.bottom - svg.top, svg.height]; }); })()",
    )) as [number, number, number, number][];
    for (const [left, , bottom, height] of boxes) {
      expect(left).toBeGreaterThanOrEqual(0);
      expect(bottom).toBeLessThanOrEqual(height);
    }
    for (let k = 1; k < boxes.length; k++) expect(boxes[k]![0]).toBeGreaterThanOrEqual(boxes[k - 1]![1] - 0.5);
  });

  it('holds its Content-Security-Policy: what the page is made to fetch is refused, and the refusal seen', async () => {
    const { file } = await write<WeeklyReport>('policy', ['weekly', '--week', '2025-W25']);
    const opened = await open(file);
    const { page } = opened;
    await expectSelfContained(opened);
    await screenshot(page, 'weekly-report');
    const fetched = await page.evaluate(
      "fetch('http://127.0.0.1:9/beacon').then(() => 'fetched', (e) => 'refused: ' + e.message)",
    );
    expect(fetched).toBe('refused: Failed to fetch');
    const failed = new Promise<string | undefined>((resolved) =>
      page.once('requestfailed', (request) => resolved(request.failure()?.errorText)),
    );
    await page.evaluate(
      "(() => { const image = document.createElement('img'); image.src = 'http://127.0.0.1:9/pixel.png'; document.body.append(image); })()",
    );
    expect(await failed).toBe('csp');
    await expect
      .poll(() => violations(page))
      .toEqual([
        { directive: 'connect-src', blocked: 'http://127.0.0.1:9/beacon' },
        { directive: 'img-src', blocked: 'http://127.0.0.1:9/pixel.png' },
      ]);
  });

  it('prints on A4 with each chart across the page above its table, legible, not a thumbnail beside it', async () => {
    const { file } = await write<WeeklyReport>('print', ['weekly', '--week', '2025-W24']);
    const { page } = await open(file);
    await page.emulateMedia({ media: 'print' });
    // A4's width less its margins (210 mm - 2 x 15 mm) at 96 px an inch.
    await page.setViewportSize({ width: 680, height: 1000 });
    const columns = await page.evaluate("getComputedStyle(document.querySelector('.pair')).gridTemplateColumns");
    expect(String(columns).split(' ')).toHaveLength(1);
    const widths = (await page.evaluate(
      "Array.from(document.querySelectorAll('svg.chart'), (svg) => svg.getBoundingClientRect().width)",
    )) as number[];
    expect(widths.length).toBeGreaterThan(0);
    for (const width of widths) expect(width).toBeGreaterThan(600);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(680);
    // The first sheet: A4's proportions (297 / 210) at this width.
    const sheet = { x: 0, y: 0, width: 680, height: Math.round((680 * 297) / 210) };
    if (SCREENSHOTS) await page.screenshot({ path: resolve(SCREENSHOTS, 'weekly-report-a4.png'), clip: sheet });
    const pdf = await page.pdf({ preferCSSPageSize: true });
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(readFileSync(file, 'utf8')).toContain('@media print');
  });

  it('querygate report --format html,pdf prints the page with Chromium, on A4 pages, from the same run', async () => {
    const stem = join(dir, 'printed');
    const env = { DATABASE_URL: scratch.readerUrl, QUERYGATE_TIME_ZONE: 'UTC', QUERYGATE_CHROMIUM: CHROMIUM };
    const run = await runCli(['report', 'weekly', '--week', '2025-W24', '--format', 'html,pdf', '--out', stem], env);
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    const pdf = readFileSync(`${stem}.pdf`);
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    const text = pdf.toString('latin1');
    // Every page A4 (595 x 842 points), and the report takes more than one.
    const boxes = [...text.matchAll(/\/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)\s*\]/g)].map((m) => [
      Math.round(Number(m[1])),
      Math.round(Number(m[2])),
    ]);
    expect(boxes.length).toBeGreaterThan(1);
    expect(new Set(boxes.map((box) => box.join('x')))).toEqual(new Set(['595x842']));
    // Printed from the page written beside it, whose instant it shows.
    const page = readFileSync(`${stem}.html`, 'utf8');
    expect(page).toMatch(/Data as of \d{4}-\d{2}-\d{2}T/);
  });

  it('fits a 390 px phone: no horizontal scrolling, the charts as wide as the screen', async () => {
    for (const args of [
      ['weekly', '--week', '2025-W24'],
      ['trend', '--weeks', '12', '--through-week', '2025-W24'],
    ]) {
      const { file } = await write<WeeklyReport>(`phone-${args[0]}`, args);
      const { page } = await open(file);
      await page.setViewportSize({ width: 390, height: 844 });
      expect({ args, width: await page.evaluate('document.documentElement.scrollWidth') }).toEqual({
        args,
        width: 390,
      });
      const widths = (await page.evaluate(
        "Array.from(document.querySelectorAll('svg.chart'), (svg) => svg.getBoundingClientRect().width)",
      )) as number[];
      for (const width of widths) expect(width).toBeGreaterThan(340);
      if (SCREENSHOTS && args[0] === 'weekly') {
        await page.screenshot({ path: resolve(SCREENSHOTS, 'weekly-report-phone.png') });
      }
    }
  });
});
