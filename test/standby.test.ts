/**
 * A streaming hot standby as the reader, as "Deploying for a team" draws it: a physical replica of a
 * scratch primary of this file's own, made with the PostgreSQL binaries the project ships.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from './support/cli.js';
import { checkNamed, parseChecks } from './support/doctor-report.js';
import { onPort, startScratchCluster, type ScratchCluster } from './support/peers.js';
import { eventually } from './support/scratch.js';

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
});
