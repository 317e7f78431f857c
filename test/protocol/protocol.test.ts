/**
 * Both MCP eras on one endpoint, against the built CLI: 2026-07-28 through the SDK's v2 client and
 * through raw requests for what a well-behaved client never sends; 2025-11-25 through the SDK's v1
 * client, with logging/setLevel and completions.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdio } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin } from '../support/harness.js';
import { post as postTo, type Answer } from '../support/raw-http.js';
import { loadSalesData, ordersBetween, type SalesData } from '../support/sales-data.js';
import { SALES_TOOLS } from '../support/tool-names.js';

const MODERN = '2026-07-28';
const TOOLS = SALES_TOOLS;
const MAY = { start_date: '2025-05-01', end_date: '2025-05-31' };
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

let server: RunningCli;
let url: URL;
let data: SalesData;
const env = (): Record<string, string> => ({
  DATABASE_URL: inject('readerUrl'),
  QUERYGATE_TOKEN_KEY: 'protocol-test-key',
});

beforeAll(async () => {
  server = startCli(['serve', '--http', '--port', '0'], env());
  url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  const admin = await connectAdmin();
  try {
    data = await loadSalesData(admin);
  } finally {
    await admin.end();
  }
});
afterAll(async () => {
  expect(await server.stop()).toBe(0);
});

/** May's order count in UTC, from the seeded rows rather than from the server. */
const mayOrders = (): number => ordersBetween(data, MAY.start_date, MAY.end_date).length;
const mayStatuses = (): string[] => ordersBetween(data, MAY.start_date, MAY.end_date).map((o) => o.status);

const envelope = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'protocol-test', version: '1.0.0' },
  ...extra,
});

/** A raw POST to the server under test. */
const post = (body: unknown, headers: Record<string, string | undefined> = {}): Promise<Answer> =>
  postTo(url, body, headers);

/** A well-formed 2026-07-28 request with its mirrored headers. */
function modern(
  id: number,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string | undefined> = {},
): Promise<Answer> {
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
  return post(
    { jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope(params._meta as Record<string, unknown>) } },
    {
      'mcp-protocol-version': MODERN,
      'mcp-method': method,
      ...(name === undefined ? {} : { 'mcp-name': name }),
      ...headers,
    },
  );
}

/** The JSON-RPC messages of an SSE body, in order. */
const events = (body: string): Record<string, unknown>[] =>
  body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);

describe('2026-07-28 through the SDK v2 client', () => {
  const pinned = (): ModernClient =>
    new ModernClient({ name: 'protocol-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });

  it('lists the tools and answers a call over HTTP, without initialize', async () => {
    const client = pinned();
    await client.connect(new ModernHttp(url));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(TOOLS);
      const result = (await client.callTool({ name: 'query_order_count', arguments: MAY })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { order_count: number }).order_count).toBe(mayOrders());
    } finally {
      await client.close();
    }
  });

  it('lists the tools and answers a call over stdio', async () => {
    const client = pinned();
    await client.connect(new ModernStdio({ command: process.execPath, args: [CLI], env: env(), stderr: 'pipe' }));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(TOOLS);
      const result = (await client.callTool({ name: 'query_order_count', arguments: MAY })) as CallToolResult;
      expect((result.structuredContent as { order_count: number }).order_count).toBe(mayOrders());
    } finally {
      await client.close();
    }
  });
});

describe('2026-07-28 on the wire', () => {
  it('discovers the server: versions, capabilities, identity and cache hints', async () => {
    const res = await modern(1, 'server/discover');
    expect(res.status).toBe(200);
    expect(res.json.id).toBe(1);
    expect(res.json.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: [MODERN, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'],
      capabilities: { tools: {}, logging: {}, completions: {}, resources: {}, prompts: {} },
      cacheScope: 'public',
      ttlMs: expect.any(Number),
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'querygate', version: expect.any(String) } },
    });
  });

  it('marks every result complete, names the server, and gives lists their cache hints', async () => {
    const tools = await modern(2, 'tools/list');
    expect(tools.json.result).toMatchObject({
      resultType: 'complete',
      cacheScope: 'private',
      ttlMs: expect.any(Number),
    });
    const orders = [1, 2, 3].map(async (n) =>
      ((await modern(n, 'tools/list')).json.result!.tools as { name: string }[]).map((t) => t.name),
    );
    for (const order of await Promise.all(orders)) expect(order).toEqual(TOOLS);
    for (const method of ['resources/list', 'resources/templates/list', 'prompts/list']) {
      expect((await modern(3, method)).json.result, method).toMatchObject({
        resultType: 'complete',
        cacheScope: 'private',
        ttlMs: expect.any(Number),
      });
    }
    const read = await modern(3, 'resources/read', { uri: 'querygate://catalog' });
    expect(read.json.result).toMatchObject({
      resultType: 'complete',
      cacheScope: 'private',
      ttlMs: expect.any(Number),
    });
    // A prompt is not cacheable (GetPromptResult): no hint on it.
    const prompt = await modern(3, 'prompts/get', { name: 'weekly_sales_review', arguments: { week: 'last_week' } });
    expect(prompt.json.result).toMatchObject({ resultType: 'complete', messages: [expect.any(Object)] });
    expect(prompt.json.result).not.toHaveProperty('ttlMs');
    const call = await modern(4, 'tools/call', { name: 'query_order_count', arguments: MAY });
    expect(call.json.result).toMatchObject({
      resultType: 'complete',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'querygate' } },
      structuredContent: { order_count: mayOrders() },
    });
    // A call result is not cacheable: no hint on it.
    expect(call.json.result).not.toHaveProperty('ttlMs');
  });

  it('refuses a request without its _meta, or with one missing a required key, with 400 and -32602', async () => {
    const bare = await post(
      { jsonrpc: '2.0', id: 11, method: 'tools/list', params: {} },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
    );
    expect([bare.status, bare.json.id, bare.json.error?.code]).toEqual([400, 11, -32602]);
    for (const missing of ['io.modelcontextprotocol/protocolVersion', 'io.modelcontextprotocol/clientCapabilities']) {
      const meta = envelope();
      delete meta[missing];
      const res = await post(
        { jsonrpc: '2.0', id: 12, method: 'tools/list', params: { _meta: meta } },
        { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
      );
      expect([res.status, res.json.id, res.json.error?.code], missing).toEqual([400, 12, -32602]);
      expect(res.json.error?.message).toContain(missing.split('/')[1]);
    }
    // clientInfo is only a SHOULD.
    const meta = envelope();
    delete meta['io.modelcontextprotocol/clientInfo'];
    const noInfo = await post(
      { jsonrpc: '2.0', id: 13, method: 'tools/list', params: { _meta: meta } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
    );
    expect(noInfo.status).toBe(200);
  });

  it('answers an unknown version with -32022, the supported list and the requested version', async () => {
    const res = await post(
      {
        jsonrpc: '2.0',
        id: 21,
        method: 'tools/list',
        params: { _meta: envelope({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }) },
      },
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
    );
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      id: 21,
      error: {
        code: -32022,
        data: { requested: '2099-01-01', supported: expect.arrayContaining([MODERN, '2025-11-25']) },
      },
    });
  });

  it('refuses headers that disagree with the body, or are missing, with 400 and -32020', async () => {
    const count = { name: 'query_order_count', arguments: MAY };
    const cases: [string, number, Promise<Answer>][] = [
      ['version header', 31, modern(31, 'tools/list', {}, { 'mcp-protocol-version': '2025-11-25' })],
      ['no version header', 32, modern(32, 'tools/list', {}, { 'mcp-protocol-version': undefined })],
      ['method header', 33, modern(33, 'tools/list', {}, { 'mcp-method': 'tools/call' })],
      ['no method header', 34, modern(34, 'tools/list', {}, { 'mcp-method': undefined })],
      ['name header', 35, modern(35, 'tools/call', count, { 'mcp-name': 'query_sales' })],
      ['no name header', 36, modern(36, 'tools/call', count, { 'mcp-name': undefined })],
      ['bad base64', 37, modern(37, 'tools/call', count, { 'mcp-name': '=?base64?%%%?=' })],
    ];
    for (const [what, id, answer] of cases) {
      const res = await answer;
      expect([res.status, res.json.id, res.json.error?.code], what).toEqual([400, id, -32020]);
    }
    // A name sent in the base64 form is decoded before it is compared.
    const encoded = `=?base64?${Buffer.from('query_order_count').toString('base64')}?=`;
    const ok = await modern(38, 'tools/call', { name: 'query_order_count', arguments: MAY }, { 'mcp-name': encoded });
    expect(ok.status).toBe(200);
    expect(ok.json.result).toMatchObject({ structuredContent: { order_count: mayOrders() } });
  });

  it('answers the methods 2026-07-28 removed, and unknown ones, with 404 and -32601 under their id', async () => {
    for (const [id, method] of [
      [41, 'initialize'],
      [42, 'ping'],
      [43, 'logging/setLevel'],
      [44, 'resources/subscribe'],
      [45, 'no/such/method'],
    ] as const) {
      const res = await modern(id, method);
      expect([res.status, res.json.id, res.json.error?.code], method).toEqual([404, id, -32601]);
    }
  });

  it('sends log messages only for a request whose _meta sets a level, on an SSE stream ahead of the answer', async () => {
    const quiet = await modern(51, 'tools/call', { name: 'query_order_count', arguments: MAY });
    expect(quiet.headers['content-type']).toBe('application/json');
    const logged = await modern(52, 'tools/call', {
      name: 'query_order_count',
      arguments: MAY,
      _meta: { 'io.modelcontextprotocol/logLevel': 'info' },
    });
    expect(logged.headers['content-type']).toBe('text/event-stream');
    const [message, answer, ...rest] = events(logged.body);
    expect(rest).toEqual([]);
    expect(message).toMatchObject({
      method: 'notifications/message',
      params: {
        level: 'info',
        // The count reads one row per order status.
        data: { tool: 'query_order_count', outcome: 'ok', row_count: new Set(mayStatuses()).size },
      },
    });
    expect(answer).toMatchObject({
      id: 52,
      result: { resultType: 'complete', structuredContent: { order_count: mayOrders() } },
    });
    // Above the level asked for, nothing is sent: a successful call logs at info.
    const strict = await modern(53, 'tools/call', {
      name: 'query_order_count',
      arguments: MAY,
      _meta: { 'io.modelcontextprotocol/logLevel': 'warning' },
    });
    expect(strict.headers['content-type']).toBe('application/json');
    // A rejected call logs at warning, naming the field but never echoing a value.
    const rejected = await modern(54, 'tools/call', {
      name: 'query_order_count',
      arguments: { start_date: 'jane@example.com', end_date: '2025-05-31' },
      _meta: { 'io.modelcontextprotocol/logLevel': 'warning' },
    });
    const [warning] = events(rejected.body);
    expect(warning).toMatchObject({
      params: { level: 'warning', data: { outcome: 'rejected', invalid_fields: ['start_date'] } },
    });
    expect(JSON.stringify(warning)).not.toContain('jane');
  });

  it('writes the traceparent of _meta into the audit line', async () => {
    await modern(61, 'tools/call', {
      name: 'query_sales',
      arguments: { ...MAY, group_by: 'region' },
      _meta: { traceparent: TRACEPARENT },
    });
    const audit = await server.waitForLog(new RegExp(`"type":"audit".*"traceparent":"${TRACEPARENT}"`));
    expect(audit[0]).toContain('"tool":"query_sales"');
  });
});

describe('legacy HTTP session ids, kept by no one', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'protocol-test', version: '1' } },
  };

  it('are issued by initialize, accepted back, and a forged or altered one is answered 404', async () => {
    const init = await post(initialize, { 'mcp-protocol-version': undefined });
    const sid = init.headers['mcp-session-id'];
    expect(sid).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const legacy = { 'mcp-protocol-version': '2025-11-25' };
    expect((await post(listToolsBody, { ...legacy, 'mcp-session-id': sid as string })).status).toBe(200);
    const altered = `${(sid as string).slice(0, 5)}${(sid as string)[5] === 'A' ? 'B' : 'A'}${(sid as string).slice(6)}`;
    for (const bad of [altered, 'not-a-session', `${'A'.repeat(22)}.${'B'.repeat(43)}`]) {
      const res = await post(listToolsBody, { ...legacy, 'mcp-session-id': bad });
      expect([res.status, res.json.id, res.json.error?.code], bad).toEqual([404, 1, -32001]);
    }
    // 2026-07-28 has no sessions: the header is ignored.
    expect((await modern(2, 'tools/list', {}, { 'mcp-session-id': 'not-a-session' })).status).toBe(200);
  });

  it('are accepted by a replica with the same QUERYGATE_TOKEN_KEY, and by no other', async () => {
    const sid = (await post(initialize, { 'mcp-protocol-version': undefined })).headers['mcp-session-id'] as string;
    const replicas = [env(), { ...env(), QUERYGATE_TOKEN_KEY: 'another-key' }].map((vars) =>
      startCli(['serve', '--http', '--port', '0'], vars),
    );
    try {
      const statuses: number[] = [];
      for (const replica of replicas) {
        const at = new URL((await replica.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
        const answer = await fetch(at, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2025-11-25',
            'mcp-session-id': sid,
          },
          body: JSON.stringify(listToolsBody),
        });
        statuses.push(answer.status);
      }
      expect(statuses).toEqual([200, 404]);
    } finally {
      for (const replica of replicas) expect(await replica.stop()).toBe(0);
    }
  });
});

describe('errors whose request cannot be told', () => {
  it('carry no id at all, never a null one', async () => {
    for (const res of [
      await post('{"jsonrpc": "2.0", "id": 1, '),
      await post(listToolsBody, { origin: 'https://evil.example' }),
      await post(listToolsBody, { 'content-type': 'text/plain' }),
      await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.json).toHaveProperty('error');
      expect(res.json).not.toHaveProperty('id');
    }
  });
});
const listToolsBody = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('2025-11-25 through the SDK v1 client', () => {
  it('sends a stdio session log messages from logging/setLevel on, at that level and above', async () => {
    const client = new Client({ name: 'protocol-test', version: '1.0.0' });
    const messages: { level: string; data: Record<string, unknown> }[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      messages.push(n.params as (typeof messages)[number]);
    });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [CLI], env: env(), stderr: 'pipe' }),
    );
    try {
      // A stdio session can be told of changes between its requests: the catalog may be subscribed to.
      expect(client.getServerCapabilities()).toMatchObject({
        logging: {},
        completions: {},
        resources: { subscribe: true, listChanged: false },
      });
      await client.callTool({ name: 'query_order_count', arguments: MAY });
      expect(messages).toEqual([]); // nothing before the client asks
      await client.setLoggingLevel('info');
      await client.callTool({ name: 'query_order_count', arguments: MAY });
      await client.callTool({
        name: 'query_order_count',
        arguments: { start_date: '2025-05-31', end_date: '2025-05-01' },
      });
      expect(messages.map((m) => [m.level, m.data.tool, m.data.outcome])).toEqual([
        ['info', 'query_order_count', 'ok'],
        ['warning', 'query_order_count', 'rejected'],
      ]);
      await client.setLoggingLevel('error');
      await client.callTool({
        name: 'query_order_count',
        arguments: { start_date: '2025-05-31', end_date: '2025-05-01' },
      });
      expect(messages).toHaveLength(2);
      await expect(client.setLoggingLevel('loud' as 'info')).rejects.toThrow(/level must be one of/);
    } finally {
      await client.close();
    }
  });

  it('completes the enum-valued arguments of a tool, and refuses what does not exist', async () => {
    const client = new Client({ name: 'protocol-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      // Stateless HTTP has no stream to tell a legacy client of an update on: nothing is subscribable.
      expect(client.getServerCapabilities()?.resources).toEqual({ subscribe: false, listChanged: false });
      const complete = (name: string, argument: string, value: string) =>
        client.complete({ ref: { type: 'ref/tool', name } as never, argument: { name: argument, value } });
      expect((await complete('query_sales', 'group_by', '')).completion).toEqual({
        values: ['day', 'week', 'month', 'region', 'category'],
        total: 5,
        hasMore: false,
      });
      expect((await complete('query_sales', 'group_by', 'C')).completion.values).toEqual(['category']);
      expect((await complete('query_order_count', 'status', 'p')).completion.values).toEqual(['pending', 'paid']);
      expect((await complete('query_top_products', 'metric', 'x')).completion.values).toEqual([]);
      // A free-form argument has nothing to offer.
      expect((await complete('query_sales', 'start_date', '2025')).completion.values).toEqual([]);
      await expect(complete('query_sales', 'colour', '')).rejects.toThrow(/no argument "colour"/);
      await expect(complete('drop_tables', 'x', '')).rejects.toThrow(/Unknown tool/);
      await expect(
        client.complete({ ref: { type: 'ref/prompt', name: 'weekly' }, argument: { name: 'week', value: '' } }),
      ).rejects.toThrow(/Unknown prompt/);
    } finally {
      await client.close();
    }
  });

  it('takes logging/setLevel over stateless HTTP, which has no session to keep it for', async () => {
    const client = new Client({ name: 'protocol-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url));
    try {
      await client.setLoggingLevel('debug');
      const result = (await client.callTool({ name: 'query_order_count', arguments: MAY })) as CallToolResult;
      expect((result.structuredContent as { order_count: number }).order_count).toBe(mayOrders());
      // A legacy result is not dressed for 2026-07-28.
      const raw = await post({ jsonrpc: '2.0', id: 7, method: 'tools/list' }, { 'mcp-protocol-version': '2025-11-25' });
      expect(raw.json.result).not.toHaveProperty('resultType');
      expect(raw.json.result).not.toHaveProperty('ttlMs');
    } finally {
      await client.close();
    }
  });
});
