/**
 * A job submitted while the reader cannot connect (its role refused login, its sessions ended), on a
 * scratch cluster of this file's own: the job retries with backoff, its lease held, and completes
 * once the reader is back, instead of failing for good with database_refused.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { startCli } from '../support/cli.js';
import { startScratchCluster, type ScratchCluster } from '../support/peers.js';
import { eventually } from '../support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const TREND = { weeks: 12, through_week: '2025-W24' } as const;

interface Job {
  job_id: string;
  state: string;
  result: { rows: { order_count: number }[] } | null;
  error: { code: string } | null;
}

let cluster: ScratchCluster;
let admin: pg.Client;

beforeAll(async () => {
  cluster = await startScratchCluster();
  admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
  await admin.connect();
}, 120_000);
afterAll(async () => {
  await admin?.end();
  await cluster?.stop();
});

it('19.6.7 a job submitted while the reader is down retries with backoff and completes once it is back', async () => {
  const cli = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: cluster.primary.readerUrl,
    QUERYGATE_JOBS_URL: cluster.primary.jobsUrl,
  });
  const reader = admin.escapeIdentifier(DEFAULT_READER_ROLE);
  try {
    const url = new URL((await cli.waitForLog(LISTEN))[1]!);
    const serving = JSON.parse((await cli.waitForLog(/^\{.*"msg":"serving".*\}$/m))[0]) as { ready: boolean };
    expect(serving.ready).toBe(true);
    const client = new Client({ name: 'job-retry-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));

    // The reader goes down: it may not log in, and its open sessions end.
    await admin.query(`alter role ${reader} nologin`);
    await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [
      DEFAULT_READER_ROLE,
    ]);
    const submitted = (await client.callTool({ name: 'submit_trend_report', arguments: TREND })) as CallToolResult;
    expect(submitted.isError, JSON.stringify(submitted.content)).toBeFalsy();
    const jobId = (submitted.structuredContent as unknown as Job).job_id;
    // A run of it failed, as the audit log says, while the reader was down.
    // A role that may not log in is refused, not unreachable: the code says so, and the job still retries.
    await eventually('a run of the job to fail with database_refused', async () =>
      /"type":"audit".*"tool":"sales_trend_report".*"error_code":"database_refused"/.test(cli.stderr()),
    );
    await admin.query(`alter role ${reader} login`);

    const job = await eventually('the job to end', async () => {
      const polled = (await client.callTool({
        name: 'get_report_job',
        arguments: { job_id: jobId },
      })) as CallToolResult;
      const state = polled.structuredContent as unknown as Job;
      return ['completed', 'failed', 'cancelled'].includes(state.state) ? state : undefined;
    });
    expect(job.error).toBeNull();
    expect(job.state).toBe('completed');
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from sales.orders
        where status not in ('cancelled', 'refunded') and ordered_at >= '2025-03-24T00:00:00Z' and ordered_at < '2025-06-16T00:00:00Z'`,
    );
    expect(job.result!.rows.reduce((sum, row) => sum + row.order_count, 0)).toBe(rows[0]!.n);
    await client.close();
  } finally {
    await admin.query(`alter role ${reader} login`);
    await cli.stop();
  }
}, 90_000);
