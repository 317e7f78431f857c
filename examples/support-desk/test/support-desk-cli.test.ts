/**
 * `querygate serve` and `querygate doctor` serve and check the support desk by configuration alone:
 * the built CLI, QUERYGATE_PACKS naming the compiled pack by its path, alone and beside the sales pack.
 * A server of both packs needs one reader that reads both, so those run against a database of their
 * own holding both packs, migrated for the default reader role.
 */
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { supportDeskPack } from '../pack/index.js';
import { seedSupportDesk } from '../pack/seed.js';
import { salesPack } from '../../../pack/index.js';
import { seedDatabase } from '../../../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../../../src/config.js';
import { withDatabase } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { CLI, runCli } from '../../../test/support/cli.js';
import { connectAdmin } from '../../../test/support/harness.js';
import { readerUrlFor } from '../../../test/support/packs.js';
import { createClosedDatabase } from '../../../test/support/scratch.js';
import { SALES_QUERY_TOOLS, SALES_REPORT_TOOLS, SUPPORT_QUERY_TOOLS } from '../../../test/support/tool-names.js';

const SUPPORT_PACK = resolve('dist/examples/support-desk/pack/index.js');
const SUPPORT_TOOLS = SUPPORT_QUERY_TOOLS;
const SALES_TOOLS = SALES_QUERY_TOOLS;
/** Reports are listed after every pack's templates, and plan nothing of their own: their templates do. */
const REPORTS = SALES_REPORT_TOOLS;
const MAY = { start_date: '2025-05-01', end_date: '2025-05-31' };

/** An MCP client over stdio to `node dist/src/cli.js serve`, as a desktop client launches it. */
async function serveOverStdio(env: Record<string, string>): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve'],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'support-desk-cli-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as Record<string, unknown>;
};

/**
 * The tickets opened in May 2025 (UTC), on the raw table, and how many team-and-priority cells of them
 * stand for fewer than 5 requesters (tickets count no one: those are counted all the same).
 */
async function ticketsInMay(admin: pg.Client): Promise<{ all: number; smallCells: number }> {
  const { rows } = await admin.query<{ all: number; small_cells: number }>(
    `with cells as (select team_id, priority, count(*) as n, count(distinct requester_id) as people
                      from support.tickets
                     where created_at >= '2025-05-01 00:00+00' and created_at < '2025-06-01 00:00+00' group by 1, 2)
     select coalesce(sum(n), 0)::int as "all", count(*) filter (where people < 5)::int as small_cells from cells`,
  );
  return { all: rows[0]!.all, smallCells: rows[0]!.small_cells };
}

const planLine = (tool: string): RegExp =>
  new RegExp(`^\\s*PLAN\\s+${tool}\\s+cost\\s+\\d+\\.\\d+ \\(ceiling \\d+\\)$`, 'm');

describe('the support desk alone, named by its path', () => {
  let admin: pg.Client;
  let client: Client;
  let stderr: () => string;

  beforeAll(async () => {
    admin = await connectAdmin();
    ({ client, stderr } = await serveOverStdio({
      DATABASE_URL: readerUrlFor(supportDeskPack),
      QUERYGATE_PACKS: SUPPORT_PACK,
    }));
  });
  afterAll(async () => {
    await client?.close();
    await admin.end();
  });

  it('serve lists its tools, and tells a model what they are for', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(SUPPORT_TOOLS);
    expect(client.getInstructions()).toContain('support desk tools');
  });

  it('serve answers from the support tables', async () => {
    const out = await call(client, 'query_ticket_volume', { ...MAY, group_by: 'priority' });
    const rows = out.rows as { priority: string; ticket_count: number }[];
    const may = await ticketsInMay(admin);
    expect(rows.reduce((sum, r) => sum + r.ticket_count, 0)).toBe(may.all);
    expect(out).not.toHaveProperty('suppressed_groups');
    expect(may.all).toBeGreaterThan(0);
    // The desk protects its requesters and lists their tickets: one line at start-up names both.
    expect(stderr()).toContain(
      'query_ticket_metrics protects requesters, but query_recent_tickets lists the records of people',
    );
    const times = await call(client, 'query_recent_tickets', { ...MAY, limit: 5 });
    expect(times.row_count).toBe(5);
    expect(stderr()).toContain('"tool":"query_recent_tickets"');
  });

  it('doctor passes, reading nothing outside support_reporting, and prices each plan', async () => {
    const { code, stdout, stderr } = await runCli(['doctor'], {
      DATABASE_URL: readerUrlFor(supportDeskPack),
      QUERYGATE_PACKS: SUPPORT_PACK,
    });
    expect(code, stdout + stderr).toBe(0);
    expect(stdout).toMatch(/^\s*PASS\s+reads nothing outside the support_reporting schema\s*$/m);
    expect(stdout).toMatch(/^\s*PASS\s+declared personal columns are masked at the source\s*$/m);
    for (const tool of SUPPORT_TOOLS) expect(stdout).toMatch(planLine(tool));
  });
});

describe('the support desk by its example configuration file alone', () => {
  it("serves the pack the file names by path, with the file's row cap", async () => {
    const admin = await connectAdmin();
    const { client, stderr } = await serveOverStdio({
      DATABASE_URL: readerUrlFor(supportDeskPack),
      QUERYGATE_CONFIG: resolve('examples/support-desk/querygate.yaml'),
    });
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(SUPPORT_TOOLS);
      const recent = await call(client, 'query_recent_tickets', { ...MAY, limit: 100 });
      expect((await ticketsInMay(admin)).all).toBeGreaterThan(25);
      expect(recent.row_count).toBe(25);
      expect(recent.truncated).toBe(true);
      expect(stderr()).toContain('"packs":["support_desk"]');
    } finally {
      await client.close();
      await admin.end();
    }
  });
});

describe('the sales pack and the support desk together', () => {
  let name: string;
  let server: pg.Client;
  let admin: pg.Client;
  let readerUrl: string;
  let client: Client | undefined;

  beforeAll(async () => {
    server = await connectAdmin();
    name = `both_packs_${Date.now().toString(36)}`;
    await createClosedDatabase(server, name);
    const adminUrl = withDatabase(inject('adminUrl'), name);
    for (const pack of [salesPack, supportDeskPack]) {
      await migrateToLatest(adminUrl, pack, DEFAULT_READER_ROLE, silentLogger);
    }
    await seedDatabase(adminUrl, { orders: 300, until: '2025-06-30', replace: false }, silentLogger);
    await seedSupportDesk(adminUrl, { tickets: 300, until: '2025-06-30', replace: false }, silentLogger);
    admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    readerUrl = withDatabase(inject('readerUrl'), name);
  });
  afterAll(async () => {
    await client?.close();
    await admin?.end();
    await server.query(`drop database if exists ${server.escapeIdentifier(name)} with (force)`);
    await server.end();
  });

  it('doctor passes: the reader reads the two reader schemas only, personal columns masked at the source', async () => {
    const { code, stdout, stderr } = await runCli(['doctor'], {
      DATABASE_URL: readerUrl,
      QUERYGATE_PACKS: `sales,${SUPPORT_PACK}`,
    });
    expect(code, stdout + stderr).toBe(0);
    expect(stdout).toMatch(/^\s*PASS\s+reads nothing outside the reporting, support_reporting schemas\s*$/m);
    expect(stdout).toMatch(/^\s*PASS\s+cannot read raw personal data behind the declared columns\s*$/m);
    expect(stdout).toMatch(/^\s*PASS\s+declared personal columns are masked at the source\s*$/m);
    expect(stdout).not.toMatch(/^\s*FAIL/m);
    for (const tool of [...SALES_TOOLS, ...SUPPORT_TOOLS]) expect(stdout).toMatch(planLine(tool));
  });

  it('serve lists the tools of both and answers each from its own tables', async () => {
    ({ client } = await serveOverStdio({ DATABASE_URL: readerUrl, QUERYGATE_PACKS: `sales,${SUPPORT_PACK}` }));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([...SALES_TOOLS, ...SUPPORT_TOOLS, ...REPORTS]);

    const orders = await call(client, 'query_order_count', MAY);
    const { rows: sales } = await admin.query<{ n: number }>(
      `select count(*)::int as n from sales.orders
        where ordered_at >= '2025-05-01 00:00+00' and ordered_at < '2025-06-01 00:00+00'`,
    );
    expect(orders.order_count).toBe(sales[0]!.n);

    const times = await call(client, 'query_resolution_times', MAY);
    // 300 tickets over two years: every team-and-priority cell of May stands for fewer than 5
    // requesters, and every ticket is counted all the same, from the support tables.
    const may = await ticketsInMay(admin);
    expect((times.all_teams as { ticket_count: number }).ticket_count).toBe(may.all);
    expect(may.smallCells).toBeGreaterThan(0);
  });

  it('a reader that reads both is refused to a server of one of them: it reads more than that pack', async () => {
    const { code, stdout } = await runCli(['doctor'], { DATABASE_URL: readerUrl, QUERYGATE_PACKS: SUPPORT_PACK });
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /^\s*FAIL\s+reads nothing outside the support_reporting schema\s+\((reporting\.\w+, )*reporting\.customers, /m,
    );
  });
});
