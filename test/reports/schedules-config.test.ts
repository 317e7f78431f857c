/**
 * The parts of reports left running that need no database: a schedule's section of the configuration
 * file (read, or refused with the field and the rule), its due times in the reporting zone across the
 * clock changes, and what a rerun restates.
 */
import { describe, expect, it } from 'vitest';
import { parseConfigFile, resolveConfigFile, type AvailablePack } from '../../src/config-file/index.js';
import { ConfigError } from '../../src/lib/errors.js';
import { figuresOf, restatedFigures, restatementSentence } from '../../src/history/restatement.js';
import { dueTimes } from '../../src/schedules/scheduler.js';
import { alertRuleProblems, firedAlerts } from '../../src/output/alerts.js';
import { weeklyOutput } from '../../reports/weekly-shape.js';

const OPTIONS = { statementTimeoutMs: 5000 };
const AVAILABLE: AvailablePack[] = [
  {
    pack: 'sales',
    templates: [{ name: 'query_sales' }],
    reports: [{ name: 'weekly_sales_report', uses: [{ name: 'query_sales' }] }],
  },
];

function refusal(value: unknown): string {
  try {
    resolveConfigFile(parseConfigFile(value, OPTIONS), AVAILABLE);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the file was accepted');
}

const WEEKLY = {
  report: 'weekly_sales_report',
  arguments: { week: 'last_week' },
  cron: '0 8 * * 1',
  deliver: [{ folder: '/srv/reports' }],
};

describe('the schedules section', () => {
  it('reads a schedule, its fan-out and its destinations, with the defaults', () => {
    const file = resolveConfigFile(
      parseConfigFile(
        {
          smtp: { url_env: 'TEAM_SMTP_URL', from: 'reports@example.com' },
          history: { keep: '400d' },
          schedules: {
            weekly: {
              ...WEEKLY,
              deliver: [
                { email: { to: ['team@example.com'] } },
                { webhook: { url: 'https://hooks.example.com/x', style: 'slack', secret_env: 'HOOK_KEY' } },
                { webhook: { url: 'http://127.0.0.1:9/y' } },
              ],
              fan_out: [{ data_scope: { region: ['Europe'] }, deliver: [{ folder: '/srv/eu' }] }],
            },
          },
        },
        OPTIONS,
      ),
      AVAILABLE,
    );
    expect(file.historyKeepMs).toBe(400 * 86_400_000);
    expect(file.smtp).toEqual({ urlEnv: 'TEAM_SMTP_URL', from: 'reports@example.com' });
    expect(file.schedules).toEqual([
      {
        name: 'weekly',
        report: 'weekly_sales_report',
        arguments: { week: 'last_week' },
        cron: '0 8 * * 1',
        missed: 'skip',
        send: 'always',
        formats: ['html'],
        runs: [
          {
            destinations: [
              { kind: 'email', name: 'email[0]', to: ['team@example.com'] },
              {
                kind: 'webhook',
                name: 'webhook[0]',
                url: 'https://hooks.example.com/x',
                style: 'slack',
                secretEnv: 'HOOK_KEY',
              },
              { kind: 'webhook', name: 'webhook[1]', url: 'http://127.0.0.1:9/y', style: 'json' },
            ],
          },
          { dataScope: { region: ['Europe'] }, destinations: [{ kind: 'folder', name: 'folder[0]', path: '/srv/eu' }] },
        ],
      },
    ]);
  });

  it('refuses each mistake with the field and the rule', () => {
    expect(refusal({ schedules: { weekly: { ...WEEKLY, cron: 'every monday' } } })).toBe(
      'QUERYGATE_CONFIG schedules.weekly.cron: is not a cron expression of five or six fields',
    );
    expect(refusal({ schedules: { weekly: { ...WEEKLY, report: 'monthly_report' } } })).toBe(
      'QUERYGATE_CONFIG schedules.weekly.report: "monthly_report" is not a served report (the reports: weekly_sales_report)',
    );
    expect(refusal({ schedules: { weekly: { ...WEEKLY, deliver: [{ email: { to: ['team@example.com'] } }] } } })).toBe(
      'QUERYGATE_CONFIG schedules.weekly: sends email, so the file needs an "smtp" section ({ url_env, from })',
    );
    expect(
      refusal({
        schedules: { weekly: { ...WEEKLY, deliver: [{ email: { to: ['not an address'] } }] } },
        smtp: { url_env: 'X', from: 'a@b.c' },
      }),
    ).toBe('QUERYGATE_CONFIG schedules.weekly.deliver[0].email.to[0]: must be an email address');
    expect(
      refusal({ schedules: { weekly: { ...WEEKLY, deliver: [{ webhook: { url: 'ftp://example.com' } }] } } }),
    ).toBe('QUERYGATE_CONFIG schedules.weekly.deliver[0].webhook.url: must be an http or https URL');
    expect(refusal({ schedules: { weekly: { ...WEEKLY, missed: 'later', formats: ['docx'] } } })).toBe(
      [
        'QUERYGATE_CONFIG schedules.weekly.missed: must be "catch_up" or "skip"',
        'QUERYGATE_CONFIG schedules.weekly.formats[0]: must be one of md, json, html, csv, pdf',
      ].join('\n'),
    );
    expect(refusal({ schedules: { weekly: { ...WEEKLY, deliver: undefined } } })).toBe(
      'QUERYGATE_CONFIG schedules.weekly: give "deliver", "fan_out", or both',
    );
    expect(
      refusal({
        schedules: {
          weekly: {
            ...WEEKLY,
            data_scope: { region: ['Europe'] },
            fan_out: [{ data_scope: { region: ['Asia'] }, deliver: [{ folder: '/a' }] }],
          },
        },
      }),
    ).toBe('QUERYGATE_CONFIG schedules.weekly.data_scope: give each scope in "fan_out", not here too');
    expect(refusal({ schedules: { 'Weekly Report': WEEKLY } })).toBe(
      'QUERYGATE_CONFIG schedules["Weekly Report"]: a schedule name is 1 to 64 lower-case letters, digits, _ or -',
    );
    expect(refusal({ smtp: { url_env: 'smtp://user:secret@mail', from: 'a@b.c' } })).toBe(
      'QUERYGATE_CONFIG smtp.url_env: must be an environment variable name such as REPORTS_SMTP_URL',
    );
    expect(refusal({ history: { keep: 'forever' } })).toBe(
      'QUERYGATE_CONFIG history.keep: is not a duration; give minutes, hours or days, such as 90m, 36h or 2d',
    );
  });
});

describe('due times', () => {
  it('are read on the wall clock of the reporting zone, across both clock changes', () => {
    // 08:00 on Mondays in Berlin is 07:00 UTC in winter and 06:00 UTC in summer.
    const spring = dueTimes(
      '0 8 * * 1',
      'Europe/Berlin',
      Date.parse('2025-03-20T00:00:00Z'),
      Date.parse('2025-04-01T00:00:00Z'),
    );
    expect(spring.map((d) => d.toISOString())).toEqual(['2025-03-24T07:00:00.000Z', '2025-03-31T06:00:00.000Z']);
    const autumn = dueTimes(
      '0 8 * * 1',
      'Europe/Berlin',
      Date.parse('2025-10-20T00:00:00Z'),
      Date.parse('2025-11-01T00:00:00Z'),
    );
    expect(autumn.map((d) => d.toISOString())).toEqual(['2025-10-20T06:00:00.000Z', '2025-10-27T07:00:00.000Z']);
    // 02:30 does not exist on 30 March 2025 in Berlin: the day still gets its run, once.
    const gap = dueTimes(
      '30 2 * * *',
      'Europe/Berlin',
      Date.parse('2025-03-29T00:00:00Z'),
      Date.parse('2025-03-31T12:00:00Z'),
    );
    expect(gap).toHaveLength(3);
    expect(new Set(gap.map((d) => d.toISOString().slice(0, 10))).size).toBe(3);
  });

  it('are bounded when a long outage is caught up', () => {
    expect(dueTimes('* * * * *', 'UTC', 0, 86_400_000)).toHaveLength(50);
  });
});

describe('a restatement', () => {
  const sent = {
    week: '2025-W43',
    summary: '177 orders',
    metrics: [
      { metric: 'order_count', currency: null, value: 177, last_week: 160, change_unit: 'percent', note: 'a' },
      { metric: 'revenue', currency: 'EUR', value: 19080.37, last_week: 18000, change_unit: 'percent' },
    ],
    daily: [{ date: '2025-10-20', weekday: 'Monday', currency: 'EUR', revenue: 100 }],
  };
  const rerun = {
    ...sent,
    summary: '176 orders',
    metrics: [
      { ...sent.metrics[0]!, value: 176, note: 'b' },
      { ...sent.metrics[1]!, value: 18898.24 },
    ],
    daily: [],
  };

  it('names every figure by its table, row and column, leaving text out', () => {
    expect([...figuresOf(sent)]).toEqual([
      ['metrics: order_count', 177],
      ['metrics: order_count last_week', 160],
      ['metrics: revenue EUR', 19080.37],
      ['metrics: revenue EUR last_week', 18000],
      ['daily: 2025-10-20 Monday EUR revenue', 100],
    ]);
  });

  it('lists what changed, a row gone too, and says it in one sentence', () => {
    const changes = restatedFigures(sent, rerun);
    expect(changes).toEqual([
      { figure: 'metrics: order_count', was: 177, now: 176 },
      { figure: 'metrics: revenue EUR', was: 19080.37, now: 18898.24 },
      { figure: 'daily: 2025-10-20 Monday EUR revenue', was: 100, now: null },
    ]);
    expect(restatementSentence('2025-10-27T07:00:03.120Z', changes)).toBe(
      'Restated since the edition of 2025-10-27 07:00 UTC: metrics: order_count 177 → 176; metrics: revenue EUR 19,080.37 → 18,898.24; daily: 2025-10-20 Monday EUR revenue 100 → –.',
    );
    expect(restatedFigures(sent, { ...sent, summary: 'other words' })).toEqual([]);
  });
});

describe('alert rules', () => {
  const answer = {
    metrics: [
      {
        metric: 'refund_rate',
        currency: null,
        value: 7.25,
        change_vs_last_week: 1.5,
        change_unit: 'percentage_points',
      },
      { metric: 'revenue', currency: 'EUR', value: 1000, change_vs_last_week: -25, change_unit: 'percent' },
      { metric: 'revenue', currency: 'USD', value: null, change_vs_last_week: null, change_unit: 'percent' },
    ],
    notable_days: [],
    daily: [{ date: '2025-03-24', revenue: 1 }],
  };

  it('fire on a figure above or below its bound, or a table with rows, and not on a missing figure', () => {
    expect(
      firedAlerts(answer, [
        { figure: 'metrics: refund_rate', above: 6 },
        { figure: 'metrics: refund_rate', below: 7.25 },
        { figure: 'metrics: revenue EUR change_vs_last_week', below: -20 },
        { figure: 'metrics: revenue USD', below: 1 },
        { figure: 'metrics: revenue GBP', below: 1 },
        { rowsIn: 'notable_days' },
        { rowsIn: 'daily' },
      ]),
    ).toEqual([
      { rule: 'metrics: refund_rate above 6', text: 'Alert: metrics: refund_rate is 7.25, above 6.' },
      {
        rule: 'metrics: revenue EUR change_vs_last_week below -20',
        text: 'Alert: metrics: revenue EUR change_vs_last_week is -25, below -20.',
      },
      { rule: 'rows in daily', text: 'Alert: 1 row in daily.' },
    ]);
  });

  it("are checked against the report's answer schema, naming the rule", () => {
    expect(
      alertRuleProblems(
        weeklyOutput,
        [
          { figure: 'metrics: refund_rate', above: 6 },
          { figure: 'metrics: revenue EUR change_vs_last_week', below: -20 },
          { figure: 'metric: refund_rate', above: 6 },
          { figure: 'regions: Europe EUR region', above: 6 },
          { rowsIn: 'notable_day' },
          { rowsIn: 'notable_days' },
        ],
        'reports.weekly_sales_report.alerts',
      ),
    ).toEqual([
      expect.stringMatching(
        /^reports\.weekly_sales_report\.alerts\[2\]\.figure: "metric" is not a table of the report \(its tables: metrics, daily, /,
      ),
      expect.stringMatching(
        /^reports\.weekly_sales_report\.alerts\[3\]\.figure: "regions: Europe EUR region" names no number of regions \(its numbers: revenue, last_week_revenue, change_pct\)$/,
      ),
      expect.stringMatching(
        /^reports\.weekly_sales_report\.alerts\[4\]\.rows_in: "notable_day" is not a table of the report/,
      ),
    ]);
  });

  it('are read from the configuration file, each mistake naming its field', () => {
    const file = parseConfigFile(
      {
        reports: {
          weekly_sales_report: { alerts: [{ figure: 'metrics: refund_rate', above: 6 }, { rows_in: 'notable_days' }] },
        },
      },
      OPTIONS,
    );
    expect(file.reports.weekly_sales_report!.alerts).toEqual([
      { figure: 'metrics: refund_rate', above: 6 },
      { rowsIn: 'notable_days' },
    ]);
    expect(refusal({ reports: { weekly_sales_report: { alerts: [{ figure: 'metrics: refund_rate' }] } } })).toBe(
      'QUERYGATE_CONFIG reports.weekly_sales_report.alerts[0]: give "above", "below", or both',
    );
  });
});
