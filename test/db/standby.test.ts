/**
 * A streaming hot standby as the reader, as "Deploying for a team" draws it: a physical replica of a
 * scratch primary of this file's own, made with the PostgreSQL binaries the project ships.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../support/cli.js';
import { checkNamed, parseChecks } from '../support/doctor-report.js';
import { onPort, startScratchCluster, type ScratchCluster } from '../support/peers.js';
import { eventually } from '../support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const RANGE = { start_date: '2025-06-01', end_date: '2025-06-30' } as const;

let cluster: ScratchCluster;
let standbyReaderUrl: string;

beforeAll(async () => {
  cluster = await startScratchCluster({ withStandby: true });
  standbyReaderUrl = onPort(cluster.primary.readerUrl, cluster.standbyPort!);
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

async function onPrimary<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: cluster.primary.adminUrl });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

/** The orders of RANGE, counted on the primary. */
const primaryCount = (): Promise<number> =>
  onPrimary(
    async (admin) =>
      (
        await admin.query<{ n: number }>(
          `select count(*)::int as n from sales.orders where ordered_at >= $1::date and ordered_at < $2::date + 1`,
          [RANGE.start_date, RANGE.end_date],
        )
      ).rows[0]!.n,
  );

/** `count` new paid orders on the primary, inside RANGE. */
const addOrders = (count: number): Promise<void> =>
  onPrimary(async (admin) => {
    await admin.query(
      `insert into sales.orders (id, customer_id, status, ordered_at, currency, total_amount)
       select (select max(id) from sales.orders) + g, (select min(id) from sales.customers), 'paid',
              '2025-06-15T12:00:00Z', 'USD', 10
         from generate_series(1, $1::int) g`,
      [count],
    );
  });

describe('a hot standby as the reader', () => {
  it('19.6.1 doctor checks a hot standby without crashing: its refused READ WRITE BEGIN is a refused write', async () => {
    const { code, stdout, stderr } = await runCli(['doctor'], { DATABASE_URL: standbyReaderUrl });
    expect(stderr).not.toMatch(/cannot set transaction read-write mode|\n\s+at /);
    const checks = parseChecks(stdout);
    expect(checkNamed(checks, 'a write in a READ WRITE transaction fails').status).toBe('PASS');
    expect(checkNamed(checks, 'a write in a default transaction fails').status).toBe('PASS');
    expect(code, stdout).toBe(0);
  }, 60_000);

  it("19.6.1 serve reads a hot standby: ready, /readyz 200, the primary's counts, and new orders once replayed", async () => {
    const cli = startCli(['serve', '--http', '--port', '0'], { DATABASE_URL: standbyReaderUrl });
    try {
      const url = new URL((await cli.waitForLog(LISTEN))[1]!);
      const serving = JSON.parse((await cli.waitForLog(/^\{.*"msg":"serving".*\}$/m))[0]) as { ready: boolean };
      expect(serving.ready, cli.stderr()).toBe(true);
      expect((await fetch(new URL('/readyz', url))).status).toBe(200);
      const client = new Client({ name: 'standby-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(url));
      const count = async (): Promise<number> => {
        const result = (await client.callTool({ name: 'query_order_count', arguments: RANGE })) as CallToolResult;
        expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
        return (result.structuredContent as { order_count: number }).order_count;
      };
      expect(await count()).toBe(await primaryCount());
      await addOrders(7);
      const expected = await primaryCount();
      await eventually('the standby to replay the new orders', async () => (await count()) === expected);
      await client.close();
    } finally {
      await cli.stop();
    }
  }, 60_000);

  it('19.6.2 with replay paused while the primary takes orders: answers carry the replayed commit time and data_stale, /readyz and /metrics report the lag, unready past the bound', async () => {
    const standby = new pg.Client({ connectionString: cluster.standbyAdminUrl });
    await standby.connect();
    const cli = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: standbyReaderUrl,
      QUERYGATE_MAX_REPLICA_LAG_SECONDS: '2',
    });
    try {
      const url = new URL((await cli.waitForLog(LISTEN))[1]!);
      const client = new Client({ name: 'standby-lag-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(url));
      const call = async (): Promise<{ order_count: number; data_as_of: string; data_stale?: boolean }> => {
        const result = (await client.callTool({ name: 'query_order_count', arguments: RANGE })) as CallToolResult;
        expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
        return result.structuredContent as { order_count: number; data_as_of: string; data_stale?: boolean };
      };
      const readyz = async (): Promise<{ status: number; body: { replica_lag_seconds?: number | null } }> => {
        const res = await fetch(new URL('/readyz', url));
        return { status: res.status, body: (await res.json()) as { replica_lag_seconds?: number | null } };
      };
      await eventually('the caught-up standby to be ready', async () => (await readyz()).status === 200);

      await standby.query('select pg_wal_replay_pause()');
      await eventually(
        'replay to pause',
        async () => (await standby.query(`select pg_get_wal_replay_pause_state() = 'paused' as p`)).rows[0].p,
      );
      await addOrders(50);
      // The standby has received the new orders' WAL and not replayed it.
      await eventually(
        'the standby to receive WAL it does not replay',
        async () =>
          (await standby.query('select pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() as behind')).rows[0].behind,
      );
      const { rows } = await standby.query<{ replayed: number; lag: number; n: number }>(
        `select extract(epoch from pg_last_xact_replay_timestamp())::float8 as replayed,
                extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp())::float8 as lag,
                (select count(*)::int from sales.orders where ordered_at >= $1::date and ordered_at < $2::date + 1) as n`,
        [RANGE.start_date, RANGE.end_date],
      );
      const replayedAt = new Date(rows[0]!.replayed * 1000).toISOString();
      const primary = await primaryCount();
      expect(rows[0]!.n).toBe(primary - 50);
      // Past the bound once the last replayed commit is more than 2 s old (it never gets younger while paused).
      await eventually('the replayed commit to be 2 s old', async () => {
        const age = await standby.query<{ age: number }>(
          'select extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp())::float8 as age',
        );
        return age.rows[0]!.age > 2;
      });

      const behind = await call();
      expect(behind.order_count).toBe(primary - 50);
      expect(behind.data_as_of).toBe(replayedAt);
      expect(behind.data_stale).toBe(true);
      const unready = await eventually('/readyz to say not ready', async () => {
        const r = await readyz();
        return r.status === 503 ? r : undefined;
      });
      expect(unready.body.replica_lag_seconds).toBeGreaterThan(2);
      const metrics = await (await fetch(new URL('/metrics', url))).text();
      const sample = /^querygate_replica_lag_seconds (\S+)$/m.exec(metrics);
      expect(sample, metrics).not.toBeNull();
      expect(Number(sample![1])).toBeGreaterThan(2);

      await standby.query('select pg_wal_replay_resume()');
      await eventually('the standby to replay the new orders', async () => (await call()).order_count === primary);
      const caughtUp = await call();
      expect(caughtUp.data_stale).toBeUndefined();
      expect(caughtUp.data_as_of > replayedAt).toBe(true);
      await eventually('/readyz to say ready again', async () => (await readyz()).status === 200);
      await client.close();
    } finally {
      await standby.query('select pg_wal_replay_resume()').catch(() => undefined);
      await standby.end();
      await cli.stop();
    }
  }, 90_000);
});
