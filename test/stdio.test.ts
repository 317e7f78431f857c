/** The built CLI over stdio, driven by the SDK's own stdio client, as Claude Desktop would launch it. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLI } from './support/cli.js';
import { connectAdmin } from './support/harness.js';

let client: Client;
let transport: StdioClientTransport;
let admin: pg.Client;
let stderr = '';

beforeAll(async () => {
  transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI],
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: inject('readerUrl'), QUERYGATE_TOKEN_KEY: 'stdio-test-key' },
    stderr: 'pipe',
  });
  (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  admin = await connectAdmin();
});
afterAll(async () => {
  await client.close();
  await admin.end();
});

describe('over stdio', () => {
  it('initializes and lists the tools', async () => {
    expect(transport.pid).toBeGreaterThan(0);
    expect(client.getServerVersion()).toMatchObject({ name: 'querygate' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'query_order_count',
      'query_recent_orders',
      'query_sales',
      'query_top_products',
    ]);
  });

  it('answers each tool', async () => {
    const range = { start_date: '2025-05-01', end_date: '2025-05-31' };
    const calls = [
      ['query_order_count', range],
      ['query_sales', { ...range, group_by: 'week' }],
      ['query_top_products', { ...range, limit: 3 }],
      ['query_recent_orders', { ...range, limit: 3 }],
    ] as const;
    for (const [name, args] of calls) {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      expect(result.isError, name).toBeFalsy();
      expect(result.structuredContent, name).toBeDefined();
    }
    const count = (await client.callTool({ name: 'query_order_count', arguments: range })) as CallToolResult;
    const { rows } = await admin.query(
      "select count(*)::int as n from sales.orders where ordered_at >= '2025-05-01T00:00:00Z' and ordered_at < '2025-06-01T00:00:00Z'",
    );
    expect((count.structuredContent as { order_count: number }).order_count).toBe(rows[0].n);
  });

  it('rejects a bad call with isError', async () => {
    const result = (await client.callTool({
      name: 'query_order_count',
      arguments: { start_date: '2025-01-01', end_date: '2025-06-01' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
  });

  it('logs only to stderr, as JSON lines', () => {
    // Anything but protocol messages on stdout would have broken the client above; stderr holds the log.
    const lines = stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(stderr).toContain('"type":"audit"');
  });
});
