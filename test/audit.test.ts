/**
 * The audit log, read back from the file the built CLI wrote while serving HTTP: one line per
 * tools/call, whatever became of it, naming the token's name and never the token, the rows or
 * anyone's personal data.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, startCli, type RunningCli } from './support/cli.js';
import { connectAdmin } from './support/harness.js';
import { SALES_QUERY_TOOLS } from './support/tool-names.js';

const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' } as const;
/** The same range as SQL bounds over UTC instants (the server's default reporting time zone). */
const IN_RANGE = "o.ordered_at >= '2025-05-01T00:00:00Z' and o.ordered_at < '2025-06-01T00:00:00Z'";
const NET = "o.status not in ('cancelled', 'refunded')";

interface AuditLine {
  readonly [key: string]: unknown;
  readonly time: string;
  readonly request_id: string;
  readonly caller: string;
  readonly tool: string;
  readonly arguments: Record<string, unknown> | null;
  readonly outcome: string;
  readonly error_class?: string;
  readonly error_code?: string;
  readonly row_count?: number;
  readonly duration_ms: number;
}

let dir: string;
let auditPath: string;
let admin: pg.Client;
const token = randomBytes(24).toString('base64url'); // 32 characters
let server: RunningCli;
let exitCode: number | null;
let text: string;
let lines: AuditLine[];
const results: Record<string, CallToolResult> = {};
let unknownToolError: unknown;

beforeAll(async () => {
  admin = await connectAdmin();
  dir = await mkdtemp(join(tmpdir(), 'querygate-audit-'));
  auditPath = join(dir, 'audit.jsonl');
  const tokensFile = join(dir, 'tokens.json');
  await writeFile(tokensFile, JSON.stringify({ tokens: [{ name: 'analyst', token }] }), { mode: 0o600 });

  server = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_TOKEN_KEY: 'audit-test-key',
    QUERYGATE_AUDIT_LOG: auditPath,
    QUERYGATE_HTTP_TOKENS_FILE: tokensFile,
  });
  const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  const client = new Client({ name: 'audit-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  try {
    await client.listTools();
    const call = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
      (await client.callTool({ name, arguments: args })) as CallToolResult;
    results.query_order_count = await call('query_order_count', RANGE);
    results.query_sales = await call('query_sales', { ...RANGE, group_by: 'region' });
    results.query_top_products = await call('query_top_products', RANGE);
    results.query_recent_orders = await call('query_recent_orders', {
      ...RANGE,
      customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'],
    });
    results.query_metrics = await call('query_metrics', { ...RANGE, metrics: ['revenue'], group_by: ['region'] });
    results.rejected = await call('query_order_count', { start_date: '2025-02-30', end_date: '2025-03-05' });
    unknownToolError = await call('query_no_such_tool', RANGE).then(
      () => undefined,
      (err: unknown) => err,
    );
  } finally {
    await client.close();
  }
  exitCode = await server.stop();
  text = await readFile(auditPath, 'utf8');
  lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditLine);
});

afterAll(async () => {
  await server?.stop();
  await admin?.end();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the audit log file', () => {
  it('is written by a server that then stops cleanly', () => {
    expect(exitCode, server.stderr()).toBe(0);
  });

  it('got the answers the calls deserve', () => {
    for (const name of SALES_QUERY_TOOLS) {
      expect(results[name]!.isError, name).toBeFalsy();
    }
    expect(results.rejected!.isError).toBe(true);
    expect(unknownToolError).toBeInstanceOf(McpError);
    expect((unknownToolError as McpError).code).toBe(-32602);
  });

  it('is created with mode 0600', async () => {
    expect((await stat(auditPath)).mode & 0o777).toBe(0o600);
  });

  it('holds exactly one line per tools/call, in order, and none for initialize or tools/list', () => {
    expect(lines.map((l) => [l.tool, l.outcome])).toEqual([
      ['query_order_count', 'ok'],
      ['query_sales', 'ok'],
      ['query_top_products', 'ok'],
      ['query_recent_orders', 'ok'],
      ['query_metrics', 'ok'],
      ['query_order_count', 'rejected'],
      ['query_no_such_tool', 'unknown_tool'],
    ]);
  });

  it('gives every line a time, a request id, the caller name and a duration', () => {
    const ids = new Set<string>();
    for (const line of lines) {
      expect(Number.isNaN(Date.parse(line.time)), line.time).toBe(false);
      expect(line.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      expect(line.request_id).toMatch(/^\S{8,}$/);
      ids.add(line.request_id);
      expect(line.caller).toBe('analyst');
      expect(typeof line.duration_ms).toBe('number');
      expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect(ids.size).toBe(lines.length);
  });

  it('records the validated arguments, defaults included, and the row count of ok calls', async () => {
    const count = async (sql: string): Promise<number> => (await admin.query<{ n: number }>(sql)).rows[0]!.n;
    const expected = [
      {
        arguments: { ...RANGE },
        rows: await count(`select count(distinct o.status)::int as n from sales.orders o where ${IN_RANGE}`),
      },
      {
        arguments: { ...RANGE, group_by: 'region' },
        rows: await count(
          `select count(distinct c.region)::int as n from sales.orders o join sales.customers c on c.id = o.customer_id where ${IN_RANGE} and ${NET}`,
        ),
      },
      {
        arguments: { ...RANGE, limit: 10, metric: 'revenue' },
        rows: await count(
          `select least(10, count(distinct oi.product_id))::int as n from sales.orders o join sales.order_items oi on oi.order_id = o.id where ${IN_RANGE} and ${NET}`,
        ),
      },
      {
        arguments: { ...RANGE, customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'], limit: 20 },
        rows: await count(`select least(20, count(*))::int as n from sales.orders o where ${IN_RANGE}`),
      },
      {
        arguments: { ...RANGE, metrics: ['revenue'], group_by: ['region'], limit: 100 },
        // Each region and currency, and each currency's total (no total adds two currencies).
        rows: await count(
          `select (count(distinct (c.region, o.currency)) + count(distinct o.currency))::int as n
             from sales.orders o join sales.customers c on c.id = o.customer_id where ${IN_RANGE}`,
        ),
      },
    ];
    const ok = lines.filter((l) => l.outcome === 'ok');
    expect(ok).toHaveLength(expected.length);
    ok.forEach((line, i) => {
      expect(line.arguments, line.tool).toEqual(expected[i]!.arguments);
      expect(expected[i]!.rows, line.tool).toBeGreaterThan(0);
      expect(line.row_count, line.tool).toBe(expected[i]!.rows);
      expect(line.error_class, line.tool).toBeUndefined();
      expect(line.error_code, line.tool).toBeUndefined();
    });
  });

  it('records a rejected call with null arguments, its error class and code, and its request id', () => {
    const rejected = lines.find((l) => l.outcome === 'rejected')!;
    expect(rejected.arguments).toBeNull();
    expect(rejected.error_class).toBe('argument');
    expect(rejected.error_code).toBe('invalid_arguments');
    expect(rejected.row_count).toBeUndefined();
    // The client was told the same request id the audit line carries.
    const said = results.rejected!.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    expect(said).toContain(rejected.request_id);
  });

  it('records an unknown tool as a protocol error', () => {
    const unknown = lines.find((l) => l.outcome === 'unknown_tool')!;
    expect(unknown.arguments).toBeNull();
    expect(unknown.error_class).toBe('protocol');
    expect(unknown.error_code).toBe('unknown_tool');
    expect(unknown.row_count).toBeUndefined();
  });

  it('never holds the token, result rows or personal data', async () => {
    expect(text).not.toContain(token);
    const { rows } = await admin.query<{ name: string; email: string; phone: string }>(
      'select name, email, phone from sales.customers',
    );
    expect(rows.length).toBeGreaterThan(0);
    // The recent-orders call did return customers: their raw fields must not have followed into the log.
    const returned = results.query_recent_orders!.structuredContent as { rows: unknown[] };
    expect(returned.rows.length).toBeGreaterThan(0);
    for (const line of text.split('\n').filter((l) => l !== '')) {
      expect(line).not.toContain('rows');
      expect(line).not.toContain('***@');
    }
    const personal = rows.flatMap((c) => [c.name, c.email, c.phone]);
    expect(personal.filter((value) => text.includes(value))).toEqual([]);
  });
});

describe('an audit log file readable by others', () => {
  it('makes serve refuse to start with a one-line message', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'querygate-audit-open-'));
    try {
      const path = join(folder, 'audit.jsonl');
      await writeFile(path, '');
      await chmod(path, 0o644);
      const { code, stderr } = await runCli(['serve'], {
        DATABASE_URL: inject('readerUrl'),
        QUERYGATE_TOKEN_KEY: 'audit-test-key',
        QUERYGATE_AUDIT_LOG: path,
      });
      expect(code, stderr).toBe(2);
      expect(stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(stderr).toContain('QUERYGATE_AUDIT_LOG');
      // Refused, not repaired: the file is as it was.
      expect((await stat(path)).mode & 0o777).toBe(0o644);
      expect(await readFile(path, 'utf8')).toBe('');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
