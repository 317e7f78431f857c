/** The built CLI over stdio, driven by the SDK's own stdio client, as Claude Desktop would launch it. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli } from '../support/cli.js';
import { connectAdmin } from '../support/harness.js';

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
      'query_metrics',
      'query_order_count',
      'query_recent_orders',
      'query_sales',
      'query_top_products',
      'sales_trend_report',
      'weekly_sales_report',
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

  it('19.5.1 answers an over-long request from the SDK client under its id, which the SDK writes after params', async () => {
    // The client would wait ten minutes for an answer that does not carry its id; the test's own
    // timeout is far shorter, so only an answer under the id can settle this call.
    const call = client.callTool(
      { name: 'query_order_count', arguments: { start_date: '2025-05-01', pad: 'x'.repeat(1_200_000) } },
      undefined,
      { timeout: 600_000 },
    );
    await expect(call).rejects.toMatchObject({
      code: -32600,
      message: expect.stringMatching(/a message is limited to 1048576 bytes/),
    });
    // The session goes on.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
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
      { jsonrpc: '2.0', error: notJsonRpc },
      { jsonrpc: '2.0', error: notJsonRpc },
      { jsonrpc: '2.0', id: 9, error: { code: -32600, message: expect.stringMatching(/method must be a string/) } },
      { jsonrpc: '2.0', id: 8, result: {} },
    ]);
  });

  it('refuses a line over 1 MiB with -32600 under its id, and goes on serving', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl') });
    const huge = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(1_100_000)}"}}\n`;
    // Written in pieces, as a pipe delivers it: the limit must hold across chunks.
    for (let at = 0; at < huge.length; at += 64 * 1024) cli.child.stdin!.write(huge.slice(at, at + 64 * 1024));
    cli.child.stdin!.end(rpc(2, 'query_order_count', range));
    const lines = (await readAll(cli.child.stdout!)).trim().split('\n');
    expect(await cli.exited, cli.stderr()).toBe(0);
    const answers = lines.map((line) => JSON.parse(line) as { id: unknown; result?: CallToolResult; error?: object });
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatchObject({ id: 1, error: { code: -32600 } });
    expect(JSON.stringify(answers[0])).toMatch(/limited to 1048576 bytes/);
    expect(answers[1]).toMatchObject({ id: 2, result: { structuredContent: { order_count: expect.any(Number) } } });
  });
});

describe('item 10: stdio under piped load', () => {
  const rpc = (id: number, name: string, args: object): string =>
    `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })}\n`;

  it('item 10: 20,000 piped tools/list requests to a reader that does not read keep memory bounded, then each is answered once', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl') });
    const count = 20_000;
    const requests = Array.from(
      { length: count },
      (_, i) => `${JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' })}\n`,
    );
    cli.child.stdin!.end(requests.join(''));
    // Nobody reads stdout until the process has done all it can: its CPU time stops advancing,
    // either because every answer is made (and held in memory) or because it waits for the reader.
    const pid = cli.child.pid!;
    await untilIdle(pid);
    // Unbounded, the answers held for the reader (14 KB each, before the reports) took the process to 380 MB here and
    // 890 MB elsewhere; bounded, it stays at its idle size (about 85 MB). The bound is far from both.
    const peakMb = await memoryMb(pid, 'VmHWM');
    expect(peakMb, `peak RSS ${peakMb} MB`).toBeLessThan(200);

    // Read a line at a time: all the answers together are longer than a string may be.
    const seen = new Map<number, number>();
    let lines = 0;
    for await (const line of createInterface({ input: cli.child.stdout!, crlfDelay: Infinity })) {
      lines++;
      const answer = JSON.parse(line) as { id: number; result?: { tools: unknown[] } };
      expect(answer.result?.tools, line.slice(0, 200)).toHaveLength(7);
      seen.set(answer.id, (seen.get(answer.id) ?? 0) + 1);
    }
    expect(await cli.exited, cli.stderr()).toBe(0);
    expect(lines).toBe(count);
    expect(seen.size).toBe(count);
    for (let id = 1; id <= count; id++) expect(seen.get(id), `id ${id}`).toBe(1);
  }, 180_000);

  it('item 10: 500 piped calls with QUERYGATE_MAX_CONCURRENT=64, a pool of 2 and a queue of 1 are paced, none refused as busy', async () => {
    const cli = startCli([], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_RATE_LIMIT: '100000',
      QUERYGATE_MAX_CONCURRENT: '64',
      QUERYGATE_POOL_MAX: '2',
      QUERYGATE_MAX_QUEUE: '1',
    });
    const range = { start_date: '2025-05-01', end_date: '2025-05-31' };
    const count = 500;
    cli.child.stdin!.end(Array.from({ length: count }, (_, i) => rpc(i + 1, 'query_order_count', range)).join(''));
    const lines = (await readAll(cli.child.stdout!)).trim().split('\n');
    expect(await cli.exited, cli.stderr()).toBe(0);
    const answers = lines.map((line) => JSON.parse(line) as { id: number; result: CallToolResult });
    const refused = answers.filter((a) => a.result.isError);
    expect(refused.length, JSON.stringify(refused[0]?.result.content)).toBe(0);
    expect(answers.map((a) => a.id).sort((x, y) => x - y)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    const { rows } = await admin.query(
      "select count(*)::int as n from sales.orders where ordered_at >= '2025-05-01T00:00:00Z' and ordered_at < '2025-06-01T00:00:00Z'",
    );
    for (const answer of answers) {
      expect((answer.result.structuredContent as { order_count: number }).order_count).toBe(rows[0].n);
    }
  }, 120_000);
});

/** A process's memory in MB from /proc: VmRSS now, or VmHWM, its peak. */
async function memoryMb(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!kb) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(kb[1]) / 1024;
}

/** CPU time (user + system) a process has used, in clock ticks. */
async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Waits (bounded) until a process uses next to no CPU over a second: it has done what it can. */
async function untilIdle(pid: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let before = await cpuTicks(pid);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await cpuTicks(pid);
    if (now - before <= 5) return;
    if (Date.now() > deadline) throw new Error(`process ${pid} still busy after ${timeoutMs} ms`);
    before = now;
  }
}

function readAll(stream: Readable): Promise<string> {
  return new Promise((done, fail) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    stream.once('end', () => done(text));
    stream.once('error', fail);
  });
}
