/**
 * Jobs across replicas: two `serve --http` processes on one database (a scratch one, whose rollup a
 * test may lock). A job submitted on one is polled to its end on the other; a cancel asked of the
 * other stops the query on the first; and when the replica running a job dies (SIGKILL, its query
 * held by a lock), the other takes the job over once its lease runs out, runs it again, and answers
 * with the figures of a synchronous call.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin, figures, structured } from '../support/harness.js';
import { createScratchDatabase, eventually, readersWaitingOnLocks, type ScratchDatabase } from '../support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const TREND = { weeks: 12, through_week: '2025-W24' } as const;

interface Job {
  job_id: string;
  state: string;
  attempt: number;
  result: Record<string, unknown> | null;
}

let scratch: ScratchDatabase;
let watcher: pg.Client;
const replicas: RunningCli[] = [];
const clients: Client[] = [];

async function startReplica(): Promise<Client> {
  const replica = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: scratch.readerUrl,
    QUERYGATE_JOBS_URL: scratch.jobsUrl,
    QUERYGATE_TOKEN_KEY: 'job-replicas-key',
    QUERYGATE_JOB_LEASE_SECONDS: '2',
    QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
  });
  replicas.push(replica);
  const url = new URL((await replica.waitForLog(LISTEN))[1]!);
  const client = new Client({ name: 'job-replicas', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  clients.push(client);
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
  (await client.callTool({ name, arguments: args })) as CallToolResult;

const job = async (client: Client, id: string): Promise<Job> =>
  structured<Job>(await call(client, 'get_report_job', { job_id: id }));

const blocked = (): Promise<number> => readersWaitingOnLocks(watcher, scratch.name);

let a: Client;
let b: Client;

beforeAll(async () => {
  scratch = await createScratchDatabase('job_replicas', { orders: 2000, until: '2025-06-30' });
  watcher = await connectAdmin();
  [a, b] = await Promise.all([startReplica(), startReplica()]);
});
afterAll(async () => {
  await scratch?.admin.query('rollback').catch(() => undefined);
  for (const client of clients) await client.close().catch(() => undefined);
  for (const replica of replicas) await replica.stop();
  await watcher?.end();
  await scratch?.drop();
});

describe('a job and two replicas', () => {
  it('is submitted on one and polled to its end on the other', async () => {
    const submitted = structured<Job>(await call(a, 'submit_trend_report', TREND));
    const done = await eventually('the job to complete, polled on the other replica', async () => {
      const seen = await job(b, submitted.job_id);
      return seen.state === 'completed' ? seen : undefined;
    });
    expect(done.attempt).toBe(1);
    expect(figures(done.result)).toEqual(figures(structured(await call(b, 'sales_trend_report', TREND))));
  });

  it('is cancelled through the other replica, which stops its query on the database', async () => {
    const locker = scratch.admin;
    await locker.query('begin');
    await locker.query('lock table reporting.order_hours in access exclusive mode');
    try {
      const submitted = structured<Job>(await call(a, 'submit_trend_report', TREND));
      await eventually('its query to wait on the lock', async () => (await blocked()) === 1);
      await call(b, 'cancel_report_job', { job_id: submitted.job_id });
      await eventually('the job to be cancelled', async () => (await job(b, submitted.job_id)).state === 'cancelled');
      await eventually('its query to be gone', async () => (await blocked()) === 0);
    } finally {
      await locker.query('rollback');
    }
  });

  it('is taken over by the other replica when the one running it dies, and completed there', async () => {
    const locker = scratch.admin;
    await locker.query('begin');
    await locker.query('lock table reporting.order_hours in access exclusive mode');
    let released = false;
    try {
      const submitted = structured<Job>(await call(a, 'submit_trend_report', TREND));
      await eventually('its query on the first replica to wait on the lock', async () => (await blocked()) === 1);
      replicas[0]!.child.kill('SIGKILL');
      await replicas[0]!.exited;
      // Polling the survivor: once the lease is out it claims the job (a second attempt) and runs it.
      const takenOver = await eventually('the other replica to take the job over', async () => {
        const seen = await job(b, submitted.job_id);
        return seen.attempt === 2 && seen.state === 'running' ? seen : undefined;
      });
      expect(takenOver.result).toBeNull();
      // The dead replica's query still waits for the lock, beside the survivor's.
      await eventually("the survivor's query to wait on the lock too", async () => (await blocked()) === 2);
      await locker.query('rollback');
      released = true;
      const done = await eventually('the job to complete on the survivor', async () => {
        const seen = await job(b, submitted.job_id);
        return seen.state === 'completed' ? seen : undefined;
      });
      expect(done.attempt).toBe(2);
      expect(figures(done.result)).toEqual(figures(structured(await call(b, 'sales_trend_report', TREND))));
    } finally {
      if (!released) await locker.query('rollback');
    }
  });
});
