/**
 * The trend report as a long job, through a real MCP client: submit_trend_report answers at once,
 * get_report_job follows it to the report's answer (the synchronous call's figures, and the raw
 * orders' sums computed here), mistakes are told at submit time, another caller's job is as unknown
 * as none, a caller's jobs in flight are bounded, jobs expire, and cancelling a job whose query is
 * blocked on a lock cancels that query on the database. A job whose replica went quiet is taken over
 * (and failed after three runs), and one let go by a stopping replica is taken over at once.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobSettings } from '../../src/jobs/service.js';
import { connectAdmin, figures, startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { addEuroOrders } from '../support/sales-reports.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from '../support/scratch.js';

// Wednesday 2 July 2025: last week is 2025-W26 (23..29 June); the test data ends on 30 June.
const NOW = Date.parse('2025-07-02T12:00:00Z');
const TREND = { weeks: 12, through_week: '2025-W24' } as const;

interface Job {
  job_id: string;
  state: 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
  progress: { done: number; total: number; message: string } | null;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  attempt: number;
  cancel_requested: boolean;
  expires_at: string;
  poll_interval_ms: number;
}

interface TrendRow {
  start_date: string;
  currency: string;
  revenue: number;
  order_count: number;
}

/** Polls get_report_job until the job's state is final. */
async function finished(harness: Harness, jobId: string): Promise<Job> {
  return eventually(`job ${jobId} to end`, async () => {
    const job = structured<Job>(await harness.call('get_report_job', { job_id: jobId }));
    return ['completed', 'failed', 'cancelled'].includes(job.state) ? job : undefined;
  });
}

/** A result's text without its request id, which differs between any two calls. */
const withoutRequestId = (result: CallToolResult): string => textOf(result).replace(/request_id: [\w-]+/, '');

describe('submit_trend_report and get_report_job', () => {
  let harness: Harness;
  let other: Harness;
  let admin: pg.Client;

  beforeAll(async () => {
    harness = await startHarness({ now: () => NOW, caller: { id: 'jobs-test' }, jobs: {} });
    other = await startHarness({ now: () => NOW, caller: { id: 'jobs-test-other' }, jobs: {} });
    admin = await connectAdmin();
  });
  afterAll(async () => {
    await harness?.close();
    await other?.close();
    await admin?.end();
  });

  it('are listed beside the report, with honest annotations', async () => {
    const { tools } = await harness.client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const name of ['sales_trend_report', 'submit_trend_report', 'get_report_job', 'cancel_report_job']) {
      expect(byName.has(name), name).toBe(true);
    }
    expect(byName.get('submit_trend_report')!.inputSchema).toEqual(byName.get('sales_trend_report')!.inputSchema);
    // Each says the hints whose MCP default is wrong for it: readOnlyHint defaults to false,
    // destructiveHint to true, idempotentHint to false, and openWorldHint to true (none reaches beyond
    // the server).
    expect(byName.get('submit_trend_report')!.annotations).toEqual({ destructiveHint: false, openWorldHint: false });
    expect(byName.get('get_report_job')!.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
    expect(byName.get('cancel_report_job')!.annotations).toEqual({
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
  });

  it("answer at once with a pending job, then the report's answer: the synchronous figures and the raw orders' sums", async () => {
    const submitted = structured<Job>(await harness.call('submit_trend_report', TREND));
    // The job as it is at submit: nothing of its run yet, so only how to poll it.
    expect(submitted).toEqual({
      job_id: expect.any(String),
      state: 'pending',
      expires_at: expect.any(String),
      poll_interval_ms: expect.any(Number),
    });
    expect(submitted.job_id).toMatch(/^[\w-]{22}$/);
    const job = await finished(harness, submitted.job_id);
    expect(job.state).toBe('completed');
    // 13 weeks (one before the first) read 12 at a time: two queries.
    expect(job.progress).toEqual({ done: 2, total: 2, message: '2 of 2 queries done' });
    const sync = structured<Record<string, unknown>>(await harness.call('sales_trend_report', TREND));
    expect(figures(job.result)).toEqual(figures(sync));

    const rows = (job.result as { rows: TrendRow[]; start_date: string; end_date: string }).rows;
    const { rows: sums } = await admin.query<{ monday: string; currency: string; revenue: string; orders: number }>(
      `select to_char(date_trunc('week', ordered_at at time zone 'UTC'), 'YYYY-MM-DD') as monday, currency,
              sum(total_amount)::text as revenue, count(*)::int as orders
         from sales.orders
        where status not in ('cancelled', 'refunded') and ordered_at >= '2025-03-24T00:00:00Z' and ordered_at < '2025-06-16T00:00:00Z'
        group by 1, 2`,
    );
    expect(rows).toHaveLength(12 * new Set(rows.map((r) => r.currency)).size);
    for (const row of rows) {
      const sum = sums.find((s) => s.monday === row.start_date && s.currency === row.currency);
      expect(row.revenue, `${row.start_date} ${row.currency}`).toBe(sum ? Number(sum.revenue) : 0);
      expect(row.order_count).toBe(sum?.orders ?? 0);
    }
  });

  it('tell argument mistakes at submit time, naming the field, and record no job', async () => {
    const count = async (): Promise<number> =>
      (
        await admin.query<{ n: number }>('select count(*)::int as n from querygate_jobs.jobs where caller = $1', [
          'jobs-test',
        ])
      ).rows[0]!.n;
    const before = await count();
    for (const [args, pattern] of [
      [{ weeks: 53 }, /weeks: must be at most 52/],
      [{ weeks: 4, through_week: '2025-W30' }, /through_week: 2025-W30 starts on 2025-07-21, after today/],
      [{ weeks: 4, sql: 'drop table x' }, /"sql": is not a known argument/],
    ] as const) {
      const result = await harness.call('submit_trend_report', args);
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(textOf(result)).toMatch(pattern);
      expect(textOf(result)).toMatch(/code: invalid_arguments/);
    }
    expect(await count()).toBe(before);
  });

  it("answer another caller's job id exactly as one that never was", async () => {
    const submitted = structured<Job>(await harness.call('submit_trend_report', TREND));
    const theirs = await other.call('get_report_job', { job_id: submitted.job_id });
    const none = await other.call('get_report_job', { job_id: 'AAAAAAAAAAAAAAAAAAAAAA' });
    expect(theirs.isError).toBe(true);
    expect(textOf(theirs)).toMatch(/job_id: names no job of yours/);
    expect(withoutRequestId(theirs)).toBe(withoutRequestId(none));
    const cancelTheirs = await other.call('cancel_report_job', { job_id: submitted.job_id });
    expect(withoutRequestId(cancelTheirs)).toBe(
      withoutRequestId(await other.call('cancel_report_job', { job_id: 'x' })),
    );
    // Nothing happened to it: it ends as it would have.
    expect((await finished(harness, submitted.job_id)).state).toBe('completed');
  });

  it('take over a job whose replica went quiet, and fail one whose replicas stopped too often', async () => {
    const quiet = async (id: string, attempts: number): Promise<void> => {
      await admin.query(
        `insert into querygate_jobs.jobs (id, caller, tool, arguments, state, attempts, owner, heartbeat_at, expires_at)
         values ($1, 'jobs-test', 'sales_trend_report', $2, 'running', $3, 'a-replica-gone', now() - interval '1 hour',
                 now() + interval '1 hour')`,
        [id, JSON.stringify(TREND), attempts],
      );
    };
    await quiet('quiet-job-once-run', 1);
    await quiet('quiet-job-thrice-run', 3);
    const done = await finished(harness, 'quiet-job-once-run');
    expect(done).toMatchObject({ state: 'completed', attempt: 2 });
    const sync = structured<Record<string, unknown>>(await harness.call('sales_trend_report', TREND));
    expect(figures(done.result)).toEqual(figures(sync));
    const abandoned = await finished(harness, 'quiet-job-thrice-run');
    expect(abandoned).toMatchObject({ state: 'failed', attempt: 3, result: null });
    expect(abandoned.error).toEqual({
      code: 'abandoned',
      message: 'The replicas running this job stopped 3 times before it finished; submit it again.',
    });
  });

  it('never carry SQL, stacks or credentials in what they answer', async () => {
    const result = await harness.call('get_report_job', { job_id: "x' or 1=1 --" });
    expect(textOf(result)).not.toMatch(/select|querygate_jobs\.|at .*\.js|postgres:\/\//i);
  });
});

describe('job tools and toolsets', () => {
  it('come with the report a toolset names, and stay unknown to one that does not', async () => {
    const withReport = await startHarness({
      caller: { id: 'jobs-toolset', tools: new Set(['sales_trend_report']) },
      jobs: {},
    });
    const without = await startHarness({ caller: { id: 'jobs-toolset', tools: new Set(['query_sales']) }, jobs: {} });
    try {
      const listed = (await withReport.client.listTools()).tools.map((t) => t.name);
      expect(listed).toEqual(['sales_trend_report', 'submit_trend_report', 'get_report_job', 'cancel_report_job']);
      expect((await without.client.listTools()).tools.map((t) => t.name)).toEqual(['query_sales']);
      await expect(without.call('get_report_job', { job_id: 'x' })).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining('Unknown tool: "get_report_job"'),
      });
    } finally {
      await withReport.close();
      await without.close();
    }
  });
});

describe('a job kept past its time', () => {
  it('is deleted, and its id then names no job', async () => {
    const harness = await startHarness({
      now: () => NOW,
      caller: { id: 'jobs-test-expiry' },
      jobs: { ttlSeconds: 2, leaseSeconds: 3 },
    });
    const admin = await connectAdmin();
    try {
      const submitted = structured<Job>(await harness.call('submit_trend_report', TREND));
      // The answer carries expires_at; the row, when it was created.
      const { rows: created } = await admin.query<{ created_at: Date }>(
        'select created_at from querygate_jobs.jobs where id = $1',
        [submitted.job_id],
      );
      expect(Date.parse(submitted.expires_at) - created[0]!.created_at.getTime()).toBe(2000);
      await eventually('the job to be unknown once expired', async () => {
        const result = await harness.call('get_report_job', { job_id: submitted.job_id });
        return result.isError && /names no job of yours/.test(textOf(result));
      });
      await eventually('the expired job to be deleted', async () => {
        const { rows } = await admin.query('select count(*)::int as n from querygate_jobs.jobs where id = $1', [
          submitted.job_id,
        ]);
        return rows[0].n === 0;
      });
    } finally {
      await harness.close();
      await admin.end();
    }
  });
});

describe('jobs whose query is blocked by a lock', () => {
  let scratch: ScratchDatabase;
  let harness: Harness;
  /** Holds the lock, in a transaction. */
  let locker: pg.Client;
  /** Watches pg_stat_activity, outside that transaction (which would keep one snapshot of it). */
  let watcher: pg.Client;

  beforeAll(async () => {
    scratch = await createScratchDatabase('jobs_lock', { orders: 2000, until: '2025-06-30' });
    harness = await onScratch('jobs-lock-test', { maxPerCaller: 2 });
    locker = scratch.admin;
    watcher = await connectAdmin();
  });
  afterAll(async () => {
    await locker?.query('rollback').catch(() => undefined);
    await harness?.close();
    await watcher?.end();
    await scratch?.drop();
  });

  /** A server of the scratch database, for one caller, whose queries wait as long as a lock is held. */
  const onScratch = (caller: string, jobs: Partial<JobSettings>): Promise<Harness> =>
    startHarness({
      readerUrl: scratch.readerUrl,
      now: () => NOW,
      statementTimeoutMs: 60_000,
      applicationName: 'querygate-jobs-lock-test',
      caller: { id: caller },
      jobs: { jobsUrl: scratch.jobsUrl, ...jobs },
    });

  /** The reader backends of this test waiting for a lock. */
  const blocked = async (): Promise<number[]> =>
    (
      await watcher.query<{ pid: number }>(
        `select pid from pg_stat_activity where datname = $1 and application_name = 'querygate-jobs-lock-test'
            and state = 'active' and wait_event_type = 'Lock' order by pid`,
        [scratch.name],
      )
    ).rows.map((r) => r.pid);

  it('are bounded per caller, and a cancel stops the query on the database', async () => {
    await locker.query('begin');
    await locker.query('lock table reporting.order_hours in access exclusive mode');

    const first = structured<Job>(await harness.call('submit_trend_report', TREND));
    const [firstPid] = await eventually('the first job to wait on the lock', async () => {
      const pids = await blocked();
      return pids.length === 1 ? pids : undefined;
    });
    expect(structured<Job>(await harness.call('get_report_job', { job_id: first.job_id })).state).toBe('running');
    const second = structured<Job>(await harness.call('submit_trend_report', TREND));
    await eventually('both jobs to wait on the lock', async () => (await blocked()).length === 2);

    const third = await harness.call('submit_trend_report', TREND);
    expect(third.isError).toBe(true);
    expect(textOf(third)).toMatch(
      /jobs: you have 2 jobs pending or running, the most one caller may have \(QUERYGATE_MAX_JOBS_PER_CALLER = 2\)/,
    );
    expect(textOf(third)).toMatch(/code: too_many_jobs/);

    const cancelling = structured<Job>(await harness.call('cancel_report_job', { job_id: first.job_id }));
    expect(cancelling.cancel_requested).toBe(true);
    expect((await finished(harness, first.job_id)).state).toBe('cancelled');
    // Its query is gone from the database, the other job's still waits.
    await eventually('the cancelled job to have no query on the database', async () => {
      const { rows } = await locker.query(
        `select count(*)::int as n from pg_stat_activity where pid = $1 and state = 'active'`,
        [firstPid],
      );
      return rows[0].n === 0;
    });
    expect(await blocked()).toHaveLength(1);

    // With one job fewer in flight, the caller may submit again.
    const again = structured<Job>(await harness.call('submit_trend_report', TREND));
    await locker.query('rollback');
    for (const id of [second.job_id, again.job_id]) {
      const job = await finished(harness, id);
      expect(job.state).toBe('completed');
      expect(job.progress).toEqual({ done: 2, total: 2, message: '2 of 2 queries done' });
    }
    // A finished job stays as it is when cancelled.
    const late = structured<Job>(await harness.call('cancel_report_job', { job_id: second.job_id }));
    expect(late.state).toBe('completed');
  });

  it('are let go by a replica that stops, and taken over by another without waiting for the lease', async () => {
    // A lease of ten minutes: only a job let go can be taken over within the test.
    const replica = (): Promise<Harness> => onScratch('jobs-release-test', { leaseSeconds: 600 });
    const [stopping, staying] = [await replica(), await replica()];
    await locker.query('begin');
    await locker.query('lock table reporting.order_hours in access exclusive mode');
    try {
      const submitted = structured<Job>(await stopping.call('submit_trend_report', TREND));
      await eventually('its query to wait on the lock', async () => (await blocked()).length === 1);
      await stopping.jobs!.close();
      await eventually('the other replica to take it over', async () => {
        const seen = structured<Job>(await staying.call('get_report_job', { job_id: submitted.job_id }));
        return seen.attempt === 2 && seen.state === 'running';
      });
      await locker.query('rollback');
      expect(await finished(staying, submitted.job_id)).toMatchObject({ state: 'completed', attempt: 2 });
    } finally {
      await locker.query('rollback');
      await stopping.close();
      await staying.close();
    }
  });
});

describe('a trend job for more weeks than fit one answer', () => {
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    scratch = await createScratchDatabase('jobs_fit', { orders: 2000, until: '2025-06-30' });
    await addEuroOrders(scratch.admin);
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  it('19.4.4 is refused at submit, as the report refuses it, naming weeks, and records no job', async () => {
    const args = { weeks: 52, through_week: '2025-W24' };
    // 2025-W24 is 9..15 June 2025; the trend reads the 52 weeks before and the one before them.
    const { rows } = await scratch.admin.query<{ n: number }>(
      `select count(distinct currency)::int as n from sales.orders
        where status not in ('cancelled', 'refunded')
          and ordered_at >= '2024-06-10T00:00:00Z' and ordered_at < '2025-06-16T00:00:00Z'`,
    );
    const currencies = rows[0]!.n;
    expect(currencies * args.weeks).toBeGreaterThan(100);
    const fit = Math.floor(100 / currencies);
    const rule = `weeks: with sales in ${currencies} currencies, at most ${fit} weeks fit one answer of 100 rows`;

    const caller = { id: 'jobs-too-many-weeks' };
    const on = { readerUrl: scratch.readerUrl, now: () => NOW, caller, jobs: { jobsUrl: scratch.jobsUrl } } as const;
    const plain = await startHarness(on);
    const tasks = await startHarness({ ...on, era: 'modern', extensions: { 'io.modelcontextprotocol/tasks': {} } });
    try {
      const synchronous = await plain.call('sales_trend_report', args);
      expect(synchronous.isError).toBe(true);
      expect(textOf(synchronous)).toContain(rule);
      for (const [harness, tool] of [
        [plain, 'submit_trend_report'],
        [tasks, 'sales_trend_report'],
      ] as const) {
        const submitted = await harness.call(tool, args);
        expect(submitted.isError, tool).toBe(true);
        expect(textOf(submitted)).toContain(rule);
        expect(harness.audits.at(-1)).toMatchObject({ tool, outcome: 'rejected', caller: caller.id });
      }
      const { rows: jobs } = await scratch.admin.query('select id from querygate_jobs.jobs where caller = $1', [
        caller.id,
      ]);
      expect(jobs).toEqual([]);
      // What fits is still accepted: the check refuses only what the run would.
      const accepted = await plain.call('submit_trend_report', { ...args, weeks: fit });
      expect(accepted.isError, textOf(accepted)).toBeFalsy();
    } finally {
      await plain.close();
      await tasks.close();
    }
  });
});
