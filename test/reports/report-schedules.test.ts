/**
 * The team's trial of reports left running: its own orders in USD and EUR, the reporting zone
 * Europe/Berlin, the week of the clock change (2025-W13), and two `serve --http` replicas sharing one
 * job store. A schedule declared in the configuration file sends the week by email (to a real SMTP
 * server on loopback), by webhook (to a receiver that fails twice, then takes it) and to a folder, and
 * fans out a Europe report with CSV and PDF attached. The replica running the report is killed mid-run:
 * the other takes it over, and each delivery still arrives exactly once. The figures mailed are held to
 * the raw orders; the edition is kept in the history, and a rerun after a late refund says what it restates.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import type pg from 'pg';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin } from '../support/harness.js';
import { loadSalesData, type SalesData } from '../support/sales-data.js';
import { addOrder, checkWeeklyReport, type WeeklyReport } from '../support/sales-reports.js';
import { createScratchDatabase, eventually, readersWaitingOnLocks, type ScratchDatabase } from '../support/scratch.js';

const ZONE = 'Europe/Berlin';
const WEEK = '2025-W13';
const FROM = '2025-03-24';
const TO = '2025-03-30';
const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;

let scratch: ScratchDatabase;
let watcher: pg.Client;
let dir: string;
let smtp: SMTPServer;
let smtpPort: number;
let receiver: Server;
let receiverUrl: string;
const mails: ParsedMail[] = [];
const hooks: { status: number; headers: IncomingHttpHeaders; body: string }[] = [];
const replicas: RunningCli[] = [];
/** The due instant of the schedule: a fixed second, soon after the replicas are up. */
let dueAt: Date;

/** Orders in euros at the edges of the clock change: Berlin's days, not UTC's, decide their week. */
const EDGE_ORDERS: [number, string, string, string][] = [
  // 00:30 on Monday 24 March in Berlin (CET), still Sunday in UTC: inside the week.
  [983001, 'paid', '2025-03-23T23:30:00Z', '210.00'],
  // 00:30 on Sunday 30 March (CET), half an hour before the clocks jump: inside.
  [983002, 'paid', '2025-03-29T23:30:00Z', '95.25'],
  // 03:30 on Sunday 30 March (CEST), after the jump: inside.
  [983003, 'shipped', '2025-03-30T01:30:00Z', '48.10'],
  // 00:30 on Monday 31 March (CEST), still Sunday in UTC: the next week.
  [983004, 'paid', '2025-03-30T22:30:00Z', '500.00'],
];

/** An instant on Berlin's wall clock: its year, month, day, hour, minute and second. */
function berlin(at: Date): Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number> {
  return Object.fromEntries(
    new Intl.DateTimeFormat('en-GB', {
      timeZone: ZONE,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(at)
      .filter((p) => p.type !== 'literal')
      .map((p) => [p.type, Number(p.value)]),
  ) as Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number>;
}

/** A six-field cron for one instant, as Berlin's wall clock shows it. */
function cronAt(at: Date): string {
  const p = berlin(at);
  return `${p.second} ${p.minute} ${p.hour} ${p.day} ${p.month} *`;
}

/** The stem of a run's files: the schedule, and the due time on Berlin's wall clock (weekly-team-2026-12-05-1744). */
function stemAt(schedule: string, at: Date): string {
  const p = berlin(at);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${schedule}-${p.year}-${two(p.month)}-${two(p.day)}-${two(p.hour)}${two(p.minute)}`;
}

async function listen(server: { listen: (port: number, host: string, done: () => void) => unknown }): Promise<void> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
}

/** The raw orders of one region's customers, and their items: what the Europe report may see. */
const only = (data: SalesData, region: string): SalesData => {
  const orders = data.orders.filter((o) => data.customers.get(o.customerId)?.region === region);
  const ids = new Set(orders.map((o) => o.id));
  return { ...data, orders, items: data.items.filter((i) => ids.has(i.orderId)) };
};

const attachment = (mail: ParsedMail, suffix: string) => mail.attachments.find((a) => a.filename?.endsWith(suffix));
const mailsTo = (address: string) => mails.filter((m) => m.to && JSON.stringify(m.to).includes(address));

beforeAll(async () => {
  scratch = await createScratchDatabase('report_schedules', { orders: 3000, until: '2025-06-30' });
  for (const [id, status, at, amount] of EDGE_ORDERS) {
    await addOrder(scratch.admin, { id, status, at, currency: 'EUR', product: 3, amount });
  }
  watcher = await connectAdmin();
  dir = mkdtempSync(join(tmpdir(), 'querygate-schedules-'));

  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, done) {
      simpleParser(stream)
        .then((mail) => {
          mails.push(mail);
          done();
        })
        .catch(done);
    },
  });
  await listen(smtp.server);
  smtpPort = (smtp.server.address() as AddressInfo).port;

  // A receiver that is down for the first two attempts, then takes the report.
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const status = hooks.length < 2 ? 503 : 200;
      hooks.push({ status, headers: req.headers, body });
      res.writeHead(status).end();
    });
  });
  await listen(receiver);
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/sales`;

  dueAt = new Date(Math.ceil((Date.now() + 45_000) / 1000) * 1000);
  const config = {
    smtp: { url_env: 'TEAM_SMTP_URL', from: 'reports@example.com' },
    history: { keep: '400d' },
    reports: {
      weekly_sales_report: {
        alerts: [
          { figure: 'metrics: refund_rate', above: 0 },
          { figure: 'metrics: revenue EUR change_vs_last_week', below: -99.9 },
        ],
      },
    },
    schedules: {
      'weekly-team': {
        report: 'weekly_sales_report',
        arguments: { week: WEEK },
        cron: cronAt(dueAt),
        missed: 'catch_up',
        formats: ['html', 'json', 'csv', 'pdf'],
        deliver: [
          { email: { to: ['team@example.com'] } },
          { webhook: { url: receiverUrl, secret_env: 'TEAM_HOOK_KEY' } },
          { folder: join(dir, 'out') },
        ],
        fan_out: [{ data_scope: { region: ['Europe'] }, deliver: [{ email: { to: ['europe@example.com'] } }] }],
      },
    },
  };
  writeFileSync(join(dir, 'querygate.json'), JSON.stringify(config));
  const env = {
    DATABASE_URL: scratch.readerUrl,
    QUERYGATE_JOBS_URL: scratch.jobsUrl,
    QUERYGATE_TIME_ZONE: ZONE,
    QUERYGATE_CONFIG: join(dir, 'querygate.json'),
    QUERYGATE_TOKEN_KEY: 'report-schedules-key',
    QUERYGATE_JOB_LEASE_SECONDS: '4',
    QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    TEAM_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    TEAM_HOOK_KEY: 'a-shared-signing-key',
  };
  for (let k = 0; k < 2; k++) replicas.push(startCli(['serve', '--http', '--port', '0'], env));
  await Promise.all(replicas.map((r) => r.waitForLog(LISTEN, 60_000)));
}, 180_000);

afterAll(async () => {
  await scratch?.admin.query('rollback').catch(() => undefined);
  for (const replica of replicas) await replica.stop();
  await new Promise<void>((done) => (smtp ? smtp.close(() => done()) : done()));
  await new Promise((done) => receiver?.close(done));
  await watcher?.end();
  await scratch?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const blocked = (): Promise<number> => readersWaitingOnLocks(watcher, scratch.name);

describe('a schedule on two replicas', () => {
  it('runs the week once when due, is taken over when its replica dies mid-run, and delivers each copy once', async () => {
    // The report's first statement will wait on this lock: the run is caught mid-way.
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    let released = false;
    try {
      await eventually('the due run to wait on the lock', async () => (await blocked()) >= 1, 90_000);
      const { rows } = await scratch.admin.query<{ owner: string; id: string }>(
        "select owner, id from querygate_jobs.jobs where id like 'schedule-%' and state = 'running' and owner is not null",
      );
      expect(rows.length).toBeGreaterThanOrEqual(1);
      const pid = Number(rows[0]!.owner.split('-')[0]);
      const victim = replicas.find((r) => r.child.pid === pid)!;
      expect(victim).toBeDefined();
      victim.child.kill('SIGKILL');
      await victim.exited;
      await scratch.admin.query('rollback');
      released = true;
    } finally {
      if (!released) await scratch.admin.query('rollback');
    }
    await eventually(
      'both runs to be delivered',
      async () => {
        const { rows } = await scratch.admin.query<{ state: string }>('select state from querygate_jobs.schedule_runs');
        return rows.length === 2 && rows.every((r) => r.state === 'done');
      },
      120_000,
    ).catch(async (err: unknown) => {
      const { rows } = await scratch.admin.query('select * from querygate_jobs.report_deliveries');
      throw new Error(`${String(err)}\n${JSON.stringify(rows)}\n${replicas.map((r) => r.stderr()).join('\n')}`);
    });
    // A few more ticks of the survivor: nothing is sent again.
    await new Promise((done) => setTimeout(done, 5000));

    const { rows: runs } = await scratch.admin.query<{ due_at: Date; scope_key: string; attempts: number }>(
      `select r.due_at, r.scope_key, j.attempts from querygate_jobs.schedule_runs r join querygate_jobs.jobs j on j.id = r.job_id order by r.scope_key`,
    );
    expect(runs.map((r) => r.due_at.getTime())).toEqual([dueAt.getTime(), dueAt.getTime()]);
    // One of the two was taken over from the dead replica: its second attempt.
    expect(Math.max(...runs.map((r) => r.attempts))).toBe(2);

    // Email: once to the team, once to Europe.
    expect(mailsTo('team@example.com')).toHaveLength(1);
    expect(mailsTo('europe@example.com')).toHaveLength(1);
    // Webhook: two refusals and one success, all of one delivery, so with one idempotency key.
    expect(hooks.map((h) => h.status)).toEqual([503, 503, 200]);
    expect(new Set(hooks.map((h) => h.headers['idempotency-key'])).size).toBe(1);
    const { rows: deliveries } = await scratch.admin.query<{ destination: string; state: string; attempts: number }>(
      'select destination, state, attempts from querygate_jobs.report_deliveries order by scope_key, destination',
    );
    expect(deliveries).toEqual([
      { destination: 'email[0]', state: 'delivered', attempts: 1 },
      { destination: 'folder[0]', state: 'delivered', attempts: 1 },
      { destination: 'webhook[0]', state: 'delivered', attempts: 3 },
      { destination: 'email[0]', state: 'delivered', attempts: 1 },
    ]);
  }, 240_000);

  it('mails the figures of the week in Berlin, in both currencies, as the raw orders give them', async () => {
    const data = await loadSalesData(scratch.admin);
    const [team] = mailsTo('team@example.com');
    expect(team!.subject).toBe(`weekly_sales_report ${FROM} to ${TO}`);
    expect(team!.headers.get('x-querygate-idempotency-key')).toBeTruthy();
    expect(team!.html).toContain('<svg');
    const answer = JSON.parse(attachment(team!, '.json')!.content.toString('utf8')) as WeeklyReport;
    expect(answer.week).toBe(WEEK);
    checkWeeklyReport(data, answer, ZONE, FROM, TO);
    expect(new Set(answer.metrics.filter((m) => m.currency !== null).map((m) => m.currency))).toEqual(
      new Set(['EUR', 'USD']),
    );
    expect(attachment(team!, '.pdf')!.content.subarray(0, 5).toString()).toBe('%PDF-');
    expect(team!.attachments.map((a) => a.filename).sort()).toContain(`${stemAt('weekly-team', dueAt)}.pdf`);
    // The declared rules, judged on the figures just held to the raw orders.
    const metric = (name: string, currency: string | null) =>
      answer.metrics.find((m) => m.metric === name && m.currency === currency)!;
    const refunds = metric('refund_rate', null).value!;
    const eurChange = metric('revenue', 'EUR').change_vs_last_week;
    const expected = [
      ...(refunds > 0
        ? [
            {
              rule: 'metrics: refund_rate above 0',
              text: `Alert: metrics: refund_rate is ${refunds.toLocaleString('en-US', { maximumFractionDigits: 20 })}, above 0.`,
            },
          ]
        : []),
      ...(eurChange !== null && eurChange < -99.9
        ? [{ rule: 'metrics: revenue EUR change_vs_last_week below -99.9' }]
        : []),
    ];
    expect(refunds).toBeGreaterThan(0); // the week has refunds: the rule must fire
    expect((answer as WeeklyReport & { alerts?: unknown[] }).alerts).toEqual(expected);
    expect(team!.html).toContain(`<p class="notice alert">${expected[0]!.text}</p>`);
    expect(attachment(team!, '.daily.csv')).toBeDefined();

    // The webhook's body is the same edition, signed with the shared key.
    const hook = JSON.parse(hooks[2]!.body) as { answer: WeeklyReport; edition: string; idempotency_key: string };
    expect(hook.answer).toEqual(answer);
    expect(hook.idempotency_key).toBe(hooks[2]!.headers['idempotency-key']);
    const { createHmac } = await import('node:crypto');
    expect(hooks[2]!.headers['x-querygate-signature']).toBe(
      `sha256=${createHmac('sha256', 'a-shared-signing-key').update(hooks[2]!.body).digest('hex')}`,
    );
    // The folder holds the same files.
    const files = readdirSync(join(dir, 'out')).sort();
    expect(files.filter((f) => f.endsWith('.pdf'))).toHaveLength(1);
    expect(
      JSON.parse(
        readFileSync(
          join(
            dir,
            'out',
            files.find((f) => f.endsWith('.json'))!,
          ),
          'utf8',
        ),
      ),
    ).toEqual(answer);

    // Europe's report: its region's orders only, the scope said on the page, CSV and PDF attached.
    const [europe] = mailsTo('europe@example.com');
    const scoped = JSON.parse(attachment(europe!, '.json')!.content.toString('utf8')) as WeeklyReport;
    checkWeeklyReport(only(data, 'Europe'), scoped, ZONE, FROM, TO);
    expect(europe!.html).toContain('<p class="notice scope">Data scope: region: Europe.');
    expect(attachment(europe!, '.pdf')!.filename).toBe(`${stemAt('weekly-team', dueAt)}-Europe.pdf`);
    expect(attachment(europe!, '.about.csv')!.content.toString('utf8')).toContain('data_scope.region,Europe');
  });

  it('keeps the edition, shows it byte for byte, and says what a rerun after a late refund restates', async () => {
    const env = {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_JOBS_URL: scratch.jobsUrl,
      QUERYGATE_TIME_ZONE: ZONE,
    };
    const history = await runCli(['report', 'history', '--report', 'weekly'], env);
    expect(history.code).toBe(0);
    const lines = history.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +RAN +REPORT +PERIOD +SCOPE +SOURCE/);
    expect(lines.slice(1)).toHaveLength(2);
    expect(lines.slice(1).every((l) => l.includes(`${FROM}..${TO}`) && l.includes('schedule:weekly-team'))).toBe(true);
    const sent = lines
      .slice(1)
      .find((l) => / all /.test(l))!
      .split(/ +/)[0]!;
    const [team] = mailsTo('team@example.com');
    const shown = await runCli(['report', 'show', sent, '--format', 'json'], env);
    expect(shown.stdout).toBe(attachment(team!, '.json')!.content.toString('utf8'));

    // A late refund of an order of the week.
    const before = JSON.parse(shown.stdout) as WeeklyReport;
    await scratch.admin.query("update sales.orders set status = 'refunded' where id = 983002");
    const rerun = await runCli(['report', 'weekly', '--week', WEEK, '--format', 'json'], env);
    expect(rerun.code).toBe(0);
    const after = JSON.parse(rerun.stdout) as WeeklyReport & {
      restated: {
        edition: string;
        text: string;
        changes: { figure: string; was: number | null; now: number | null }[];
      };
    };
    checkWeeklyReport(await loadSalesData(scratch.admin), after, ZONE, FROM, TO);
    expect(after.restated.edition).toBe(sent);
    const refundRate = (r: WeeklyReport) => r.metrics.find((m) => m.metric === 'refund_rate')!.value;
    expect(refundRate(after)).not.toBe(refundRate(before));
    expect(after.restated.changes).toContainEqual({
      figure: 'metrics: refund_rate',
      was: refundRate(before),
      now: refundRate(after),
    });
    expect(after.restated.text).toMatch(
      /^Restated since the edition of \d{4}-\d\d-\d\d \d\d:\d\d UTC: .*metrics: refund_rate/,
    );
    const md = await runCli(['report', 'weekly', '--week', WEEK], env);
    expect(md.stdout).toContain('_Restated since the edition of');

    const list = await runCli(['report', 'schedule', 'list'], {
      ...env,
      QUERYGATE_CONFIG: join(dir, 'querygate.json'),
      TEAM_SMTP_URL: 'smtp://127.0.0.1:1',
      TEAM_HOOK_KEY: 'x',
    });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      /^weekly-team +weekly_sales_report +\S+ \S+ \S+ \S+ \S+ \S+ \(Europe\/Berlin\) +\d{4}-\d\d-\d\d \d\d:\d\d UTC +\d{4}-\d\d-\d\d \d\d:\d\d UTC +done +4 delivered$/m,
    );

    // A rule that fires makes a cron run exit 7, the report written with the alert in it.
    const rules = join(dir, 'alerts.json');
    writeFileSync(rules, JSON.stringify({ reports: { weekly_sales_report: { alerts: [{ rows_in: 'daily' }] } } }));
    const alerted = await runCli(['report', 'weekly', '--week', WEEK, '--format', 'json'], {
      ...env,
      QUERYGATE_CONFIG: rules,
    });
    const days = (JSON.parse(alerted.stdout) as WeeklyReport).daily.length;
    expect(alerted.code).toBe(7);
    expect(alerted.stderr).toBe(`querygate report: Alert: ${days} rows in daily.\n`);

    const unknown = await runCli(['report', 'show', 'no-such-edition'], env);
    expect(unknown).toEqual({
      code: 2,
      stdout: '',
      stderr: 'querygate report: report show: no edition is called "no-such-edition"; report history lists them\n',
    });
  }, 240_000);
});

describe('a schedule that could never run or deliver', () => {
  it('stops serve at start-up, each mistake one line naming the field, with no secret in it', async () => {
    const path = join(dir, 'broken.json');
    writeFileSync(
      path,
      JSON.stringify({
        smtp: { url_env: 'UNSET_SMTP_URL', from: 'reports@example.com' },
        schedules: {
          weekly: {
            report: 'weekly_sales_report',
            arguments: { week: '2025-W99' },
            cron: '0 8 * * 1',
            deliver: [{ email: { to: ['team@example.com'] } }],
            fan_out: [{ data_scope: { country: ['DE'] }, deliver: [{ folder: join(dir, 'de') }] }],
          },
        },
      }),
    );
    const { code, stderr } = await runCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_JOBS_URL: scratch.jobsUrl,
      QUERYGATE_CONFIG: path,
    });
    expect(code, stderr).toBe(2);
    expect(stderr).toMatch(/QUERYGATE_CONFIG schedules\.weekly\.arguments\.week: /);
    expect(stderr).toContain(
      'QUERYGATE_CONFIG smtp.url_env: UNSET_SMTP_URL is not set; set it to smtp://user:password@host:port',
    );
    expect(stderr).toContain(
      'QUERYGATE_CONFIG schedules.weekly: data_scope: "country" is not a data-scope dimension of the served packs (region)',
    );
    expect(stderr).not.toContain(scratch.jobsUrl);
    expect(stderr).not.toMatch(/\n\s+at /);
  }, 120_000);
});
