/**
 * The reader through Debian's PgBouncer (1.18: no prepared statements of its own) in transaction and
 * in session mode, in front of a scratch cluster of this file's own, as an operator would run it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectReader } from '../../src/db/connect.js';
import { READER_CONNECTION_CHECK } from '../../src/db/doctor/index.js';
import { silentLogger } from '../../src/lib/logger.js';
import { runCli, startCli, type RunningCli } from '../support/cli.js';
import { checkNamed, parseChecks } from '../support/doctor-report.js';
import { startPgBouncer, startScratchCluster, type PgBouncer, type ScratchCluster } from '../support/peers.js';
import { eventually } from '../support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const IGNORE = 'statement_timeout, idle_in_transaction_session_timeout, options';

let cluster: ScratchCluster;
let transaction: PgBouncer;
let session: PgBouncer;

beforeAll(async () => {
  cluster = await startScratchCluster();
  const users = [cluster.primary.readerUrl];
  transaction = await startPgBouncer({
    upstreamPort: cluster.primaryPort,
    mode: 'transaction',
    poolSize: 2,
    users,
    ignoreStartupParameters: IGNORE,
  });
  session = await startPgBouncer({
    upstreamPort: cluster.primaryPort,
    mode: 'session',
    poolSize: 8,
    users,
    ignoreStartupParameters: IGNORE,
  });
}, 120_000);
afterAll(async () => {
  await transaction?.stop();
  await session?.stop();
  await cluster?.stop();
});

async function serve(databaseUrl: string, env: Record<string, string> = {}): Promise<{ cli: RunningCli; url: URL }> {
  const cli = startCli(['serve', '--http', '--port', '0'], { DATABASE_URL: databaseUrl, ...env });
  const url = new URL((await cli.waitForLog(LISTEN))[1]!);
  return { cli, url };
}

async function mcpClient(url: URL): Promise<Client> {
  const client = new Client({ name: 'pgbouncer-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** The orders of a UTC range, counted on the primary through the admin connection. */
async function ordersBetween(start: string, end: string): Promise<number> {
  const admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from sales.orders where ordered_at >= $1::date and ordered_at < $2::date + 1`,
      [start, end],
    );
    return rows[0]!.n;
  } finally {
    await admin.end();
  }
}

const ranges = ['2025-04-01', '2025-04-15', '2025-05-01', '2025-05-20', '2025-06-01', '2025-06-10'].map((start, i) => ({
  start_date: start,
  end_date: `2025-06-${String(20 + i).padStart(2, '0')}`,
}));

describe('through PgBouncer', () => {
  it.each(['transaction', 'session'] as const)(
    '19.6.3 two servers through PgBouncer in %s mode answer every call of three clients, as counted on the primary',
    async (mode) => {
      const bouncer = mode === 'transaction' ? transaction : session;
      const servers = [await serve(bouncer.through(cluster.primary.readerUrl))];
      servers.push(await serve(bouncer.through(cluster.primary.readerUrl)));
      try {
        const clients = await Promise.all([0, 1, 2].map((i) => mcpClient(servers[i % 2]!.url)));
        const expected = await Promise.all(ranges.map((r) => ordersBetween(r.start_date, r.end_date)));
        const failures: string[] = [];
        await Promise.all(
          clients.map(async (client) => {
            for (let round = 0; round < 4; round++) {
              for (const [i, range] of ranges.entries()) {
                const result = (await client.callTool({
                  name: 'query_order_count',
                  arguments: range,
                })) as CallToolResult;
                if (result.isError) failures.push(JSON.stringify(result.content));
                else expect((result.structuredContent as { order_count: number }).order_count).toBe(expected[i]);
              }
            }
          }),
        );
        await Promise.all(clients.map((c) => c.close()));
        expect(failures).toEqual([]);
        for (const { cli } of servers) expect(cli.stderr()).not.toMatch(/already exists|did not keep the value/);
      } finally {
        for (const { cli } of servers) await cli.stop();
      }
    },
    120_000,
  );

  it('19.6.3 two readers share one server connection of a transaction-mode pooler without colliding statement names', async () => {
    const one = await startPgBouncer({
      upstreamPort: cluster.primaryPort,
      mode: 'transaction',
      poolSize: 1,
      users: [cluster.primary.readerUrl],
      ignoreStartupParameters: IGNORE,
    });
    const readers = [0, 1].map(() =>
      connectReader(one.through(cluster.primary.readerUrl), { statementTimeoutMs: 5000, poolMax: 2 }, silentLogger),
    );
    try {
      const statement = {
        sql: 'select count(*)::text from reporting.orders where ordered_at < $1',
        parameters: ['2025-06-01'],
      };
      const answers = [];
      for (let i = 0; i < 3; i++)
        for (const reader of readers) answers.push((await reader.execute(statement)).rows[0]![0]);
      const admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
      await admin.connect();
      const { rows } = await admin.query(
        `select count(*)::text as n from sales.orders where ordered_at < '2025-06-01'`,
      );
      await admin.end();
      expect(answers).toEqual(Array(6).fill(rows[0].n));
    } finally {
      for (const reader of readers) await reader.close();
      await one.stop();
    }
  });

  it("19.6.3 the limits hold in each call's transaction, whatever another client SET on the shared server connection", async () => {
    const one = await startPgBouncer({
      upstreamPort: cluster.primaryPort,
      mode: 'transaction',
      poolSize: 1,
      users: [cluster.primary.readerUrl],
      ignoreStartupParameters: IGNORE,
    });
    const url = one.through(cluster.primary.readerUrl);
    const reader = connectReader(url, { statementTimeoutMs: 300, poolMax: 1 }, silentLogger);
    const other = new pg.Client({ connectionString: url });
    try {
      await reader.execute({ sql: 'select 1', parameters: [] });
      // Another client of the pooler, on the one server connection, undoes session settings.
      await other.connect();
      await other.query(
        `select set_config('statement_timeout', '0', false), set_config('default_transaction_read_only', 'off', false)`,
      );
      const sleep = reader.execute({ sql: 'select pg_sleep(3)', parameters: [] });
      await expect(sleep).rejects.toMatchObject({ code: '57014' });
      const readOnly = await reader.execute({ sql: `select current_setting('transaction_read_only')`, parameters: [] });
      expect(readOnly.rows[0]![0]).toBe('on');
    } finally {
      await other.end().catch(() => undefined);
      await reader.close();
      await one.stop();
    }
  });

  it.each([
    ['transaction', 'through a pooler in transaction mode'],
    ['session', 'through a pooler in session mode'],
    ['direct', 'directly'],
  ] as const)(
    '19.6.3 doctor says how the reader reaches PostgreSQL (%s) and what that changes',
    async (mode, says) => {
      const url =
        mode === 'direct'
          ? cluster.primary.readerUrl
          : (mode === 'transaction' ? transaction : session).through(cluster.primary.readerUrl);
      const { code, stdout } = await runCli(['doctor'], { DATABASE_URL: url });
      const check = checkNamed(parseChecks(stdout), 'how the reader reaches PostgreSQL');
      expect(check.status).toBe('PASS');
      expect(check.detail).toContain(says);
      if (mode !== 'direct') expect(check.detail).toMatch(/SET LOCAL.*unnamed/);
      expect(code, stdout).toBe(0);
    },
    60_000,
  );

  it('19.6.4 behind PgBouncer in session mode without ignore_startup_parameters, doctor says the connection failed and serve is not ready', async () => {
    const strict = await startPgBouncer({
      upstreamPort: cluster.primaryPort,
      mode: 'session',
      poolSize: 4,
      users: [cluster.primary.readerUrl],
    });
    const url = strict.through(cluster.primary.readerUrl);
    const password = decodeURIComponent(new URL(cluster.primary.readerUrl).password);
    try {
      const doctor = await runCli(['doctor'], { DATABASE_URL: url });
      expect(doctor.code).toBe(1);
      const check = checkNamed(parseChecks(doctor.stdout), READER_CONNECTION_CHECK);
      expect(check.status).toBe('FAIL');
      expect(check.detail).toMatch(/unsupported startup parameter/);
      expect(check.fix).toMatch(/ignore_startup_parameters/);
      expect(doctor.stdout).toMatch(/^CONNECTION FAILED: /m);
      expect(doctor.stdout).not.toMatch(/UNSAFE/);
      // The role's own checks pass: only the connection is blamed.
      expect(parseChecks(doctor.stdout).filter((c) => c.status === 'FAIL')).toHaveLength(1);
      expect(doctor.stdout + doctor.stderr).not.toContain(password);

      const { cli, url: mcp } = await serve(url);
      try {
        const serving = JSON.parse((await cli.waitForLog(/^\{.*"msg":"serving".*\}$/m))[0]) as { ready: boolean };
        expect(serving.ready).toBe(false);
        expect(cli.stderr()).toMatch(
          /"msg":"database unavailable; calls fail until it answers".*unsupported startup parameter/,
        );
        expect(cli.stderr()).not.toContain(password);
        const readyz = await fetch(new URL('/readyz', mcp));
        expect(readyz.status).toBe(503);
      } finally {
        await cli.stop();
      }
    } finally {
      await strict.stop();
    }
  }, 60_000);

  it("19.6.6 a call that waits for the pooler's only server connection is told busy with a retry hint, not timed out", async () => {
    const one = await startPgBouncer({
      upstreamPort: cluster.primaryPort,
      mode: 'transaction',
      poolSize: 1,
      users: [cluster.primary.readerUrl],
      ignoreStartupParameters: IGNORE,
    });
    const url = one.through(cluster.primary.readerUrl);
    const { cli, url: mcp } = await serve(url, { QUERYGATE_STATEMENT_TIMEOUT_MS: '1000' });
    const holder = new pg.Client({ connectionString: url });
    try {
      const serving = JSON.parse((await cli.waitForLog(/^\{.*"msg":"serving".*\}$/m))[0]) as { ready: boolean };
      expect(serving.ready).toBe(true);
      const client = await mcpClient(mcp);
      const args = ranges[0]!;
      // Another client holds the pooler's one server connection in a transaction.
      await holder.connect();
      await holder.query('begin');
      await holder.query('select 1');
      const waited = (await client.callTool({ name: 'query_order_count', arguments: args })) as CallToolResult;
      expect(waited.isError).toBe(true);
      const text = (waited.content as { text: string }[])[0]!.text;
      expect(text).toMatch(/\(code: busy,/);
      expect(text).toMatch(/Retry in \d+ second/);
      expect(text).not.toMatch(/timed out|narrower/);
      await holder.query('commit');
      const answered = (await client.callTool({ name: 'query_order_count', arguments: args })) as CallToolResult;
      expect(answered.isError).toBeFalsy();
      expect((answered.structuredContent as { order_count: number }).order_count).toBe(
        await ordersBetween(args.start_date, args.end_date),
      );
      await client.close();
    } finally {
      await holder.end().catch(() => undefined);
      await cli.stop();
      await one.stop();
    }
  }, 60_000);

  it('19.6.6 a call that waits for a connection of a full reader pool is busy, not database_unavailable', async () => {
    const reader = connectReader(cluster.primary.readerUrl, { statementTimeoutMs: 60_000, poolMax: 1 }, silentLogger);
    // A call holds the pool's only connection until it is cancelled.
    const holding = new AbortController();
    const held = reader.execute({ sql: 'select pg_sleep(30)', parameters: [] }, holding.signal).catch((err) => err);
    try {
      await eventually('the holding call to run', async () => {
        const admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
        await admin.connect();
        try {
          const { rows } = await admin.query(
            `select 1 from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'`,
          );
          return rows.length === 1;
        } finally {
          await admin.end();
        }
      });
      await expect(reader.execute({ sql: 'select 1', parameters: [] })).rejects.toMatchObject({
        name: 'InfraError',
        code: 'busy',
      });
    } finally {
      holding.abort();
      await held;
      await reader.close();
    }
  }, 60_000);

  it('19.6.5 with the job role through a transaction-mode pooler, serve says at start-up that cancels arrive with the heartbeat, and jobs still run', async () => {
    const both = await startPgBouncer({
      upstreamPort: cluster.primaryPort,
      mode: 'transaction',
      poolSize: 4,
      users: [cluster.primary.readerUrl, cluster.primary.jobsUrl],
      ignoreStartupParameters: IGNORE,
    });
    const { cli, url } = await serve(both.through(cluster.primary.readerUrl), {
      QUERYGATE_JOBS_URL: both.through(cluster.primary.jobsUrl),
    });
    try {
      await cli.waitForLog(/LISTEN cannot hear: cancels will arrive with the heartbeat/);
      const client = await mcpClient(url);
      const submitted = (await client.callTool({
        name: 'submit_trend_report',
        arguments: { weeks: 4, through_week: '2025-W24' },
      })) as CallToolResult;
      expect(submitted.isError, JSON.stringify(submitted.content)).toBeFalsy();
      const jobId = (submitted.structuredContent as { job_id: string }).job_id;
      const state = await eventually('the job to end', async () => {
        const polled = (await client.callTool({
          name: 'get_report_job',
          arguments: { job_id: jobId },
        })) as CallToolResult;
        const job = polled.structuredContent as { state: string };
        return ['completed', 'failed', 'cancelled'].includes(job.state) ? job.state : undefined;
      });
      expect(state).toBe('completed');
      await client.close();
    } finally {
      await cli.stop();
      await both.stop();
    }
  }, 60_000);

  it('19.6.5 with the job role directly connected, serve listens for cancels and says nothing of the heartbeat', async () => {
    const { cli } = await serve(transaction.through(cluster.primary.readerUrl), {
      QUERYGATE_JOBS_URL: cluster.primary.jobsUrl,
    });
    try {
      await cli.waitForLog(/"msg":"serving"/);
      const admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
      await admin.connect();
      try {
        await eventually('the job role to LISTEN', async () => {
          const { rows } = await admin.query<{ n: number }>(
            `select count(*)::int as n from pg_stat_activity where application_name = 'querygate-jobs-listen' and query ilike 'listen %'`,
          );
          return rows[0]!.n > 0;
        });
      } finally {
        await admin.end();
      }
      expect(cli.stderr()).not.toMatch(/LISTEN cannot hear/);
    } finally {
      await cli.stop();
    }
  }, 60_000);
});
