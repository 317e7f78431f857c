/** The built CLI over stdio, driven by the SDK's own stdio client, as Claude Desktop would launch it. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli } from './support/cli.js';
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
      // The result goes out serialized once, with its JSON spliced in: the text block must still be
      // exactly the structured content.
      const [block] = result.content as { type: string; text: string }[];
      expect(block?.type, name).toBe('text');
      expect(JSON.parse(block!.text), name).toEqual(result.structuredContent);
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

describe('stdio as a pipe', () => {
  const rpc = (id: number, name: string, args: object): string =>
    `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })}\n`;
  const range = { start_date: '2025-05-01', end_date: '2025-05-31' };

  it('answers every request written before stdin closed, then exits 0', async () => {
    // A scheduled report may pipe its requests in and close stdin at once: `querygate < requests.jsonl`.
    const cli = startCli([], { DATABASE_URL: inject('readerUrl') });
    cli.child.stdin!.end(
      rpc(1, 'query_order_count', range) + rpc(2, 'query_sales', { ...range, group_by: 'week' }) + rpc(3, 'nope', {}),
    );
    const stdout = await readAll(cli.child.stdout!);
    expect(await cli.exited, cli.stderr()).toBe(0);
    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; result?: CallToolResult; error?: { code: number } });
    expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3]);
    const { rows } = await admin.query(
      "select count(*)::int as n from sales.orders where ordered_at >= '2025-05-01T00:00:00Z' and ordered_at < '2025-06-01T00:00:00Z'",
    );
    const count = answers.find((a) => a.id === 1)!.result!;
    expect((count.structuredContent as { order_count: number }).order_count).toBe(rows[0].n);
    expect(answers.find((a) => a.id === 2)!.result!.isError).toBeFalsy();
    expect(answers.find((a) => a.id === 3)!.error!.code).toBe(-32602);
  });

  it('paces many piped calls instead of refusing them as busy, and gets every answer out to a slow reader', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl'), QUERYGATE_RATE_LIMIT: '1000' });
    const calls = Array.from({ length: 22 }, (_, i) => rpc(i + 1, 'query_recent_orders', { ...range, limit: 100 }));
    cli.child.stdin!.end(calls.join(''));
    // Nobody reads for a while: the answers (about 30 KB each) fill the pipe and wait in the process.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const lines = (await readAll(cli.child.stdout!)).trim().split('\n');
    expect(await cli.exited, cli.stderr()).toBe(0);
    const answers = lines.map((line) => JSON.parse(line) as { id: number; result: CallToolResult });
    expect(answers.map((a) => a.id).sort((x, y) => x - y)).toEqual(calls.map((_, i) => i + 1));
    for (const answer of answers) {
      expect(answer.result.isError, JSON.stringify(answer).slice(0, 300)).toBeFalsy();
      expect((answer.result.structuredContent as { rows: unknown[] }).rows).toHaveLength(100);
    }
  });

  it('answers a last line without a newline, and malformed messages, then exits', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl') });
    // JSON null, a message without jsonrpc 2.0, one with an id but no method, then a ping with no newline.
    cli.child.stdin!.end(
      'null\n{"id":7,"method":"ping"}\n{"jsonrpc":"2.0","id":9}\n{"jsonrpc":"2.0","id":8,"method":"ping"}',
    );
    const lines = (await readAll(cli.child.stdout!)).trim().split('\n');
    expect(await cli.exited, cli.stderr()).toBe(0);
    const notJsonRpc = { code: -32600, message: expect.stringMatching(/not a JSON-RPC 2.0 message/) };
    expect(lines.map((line) => JSON.parse(line) as object)).toEqual([
      { jsonrpc: '2.0', id: null, error: notJsonRpc },
      { jsonrpc: '2.0', id: null, error: notJsonRpc },
      { jsonrpc: '2.0', id: 9, error: { code: -32600, message: expect.stringMatching(/method must be a string/) } },
      { jsonrpc: '2.0', id: 8, result: {} },
    ]);
  });

  it('refuses a line over 1 MiB with -32600 and goes on serving', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl') });
    const huge = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(1_100_000)}"}}\n`;
    // Written in pieces, as a pipe delivers it: the limit must hold across chunks.
    for (let at = 0; at < huge.length; at += 64 * 1024) cli.child.stdin!.write(huge.slice(at, at + 64 * 1024));
    cli.child.stdin!.end(rpc(2, 'query_order_count', range));
    const lines = (await readAll(cli.child.stdout!)).trim().split('\n');
    expect(await cli.exited, cli.stderr()).toBe(0);
    const answers = lines.map((line) => JSON.parse(line) as { id: unknown; result?: CallToolResult; error?: object });
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(JSON.stringify(answers[0])).toMatch(/limited to 1048576 bytes/);
    expect(answers[1]).toMatchObject({ id: 2, result: { structuredContent: { order_count: expect.any(Number) } } });
  });
});

function readAll(stream: Readable): Promise<string> {
  return new Promise((done, fail) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    stream.once('end', () => done(text));
    stream.once('error', fail);
  });
}
