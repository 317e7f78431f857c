/** The built CLI over Streamable HTTP, through the SDK's HTTP client and through raw requests. */
import { request } from 'node:http';
import { networkInterfaces } from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SALES_TOOLS } from '../support/tool-names.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCli, type RunningCli } from '../support/cli.js';

let server: RunningCli;
let url: URL;
let authed: RunningCli;
let authedUrl: URL;
/** Bound to every address with a token, as a replica in a cluster runs. */
let open: RunningCli;
let openUrl: URL;
const TOKEN = 'http-test-token-0123456789';

beforeAll(async () => {
  const env = { DATABASE_URL: inject('readerUrl'), QUERYGATE_TOKEN_KEY: 'http-test-key' };
  server = startCli(['serve', '--http', '--port', '0'], env);
  authed = startCli(['serve', '--http', '--port', '0'], { ...env, QUERYGATE_HTTP_TOKEN: TOKEN });
  url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  authedUrl = new URL((await authed.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  open = startCli(['serve', '--http', '--host', '0.0.0.0', '--port', '0'], { ...env, QUERYGATE_HTTP_TOKEN: TOKEN });
  openUrl = new URL((await open.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
});
afterAll(async () => {
  expect(await server.stop()).toBe(0);
  expect(await authed.stop()).toBe(0);
  expect(await open.stop()).toBe(0);
});

async function connect(target: URL, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'http-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(target, { requestInit: { headers } }));
  return client;
}

/** A raw HTTP request, so that headers a browser or fetch would fix (Host) can be set. */
function raw(
  target: URL,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((done, fail) => {
    const req = request(
      target,
      {
        method: options.method ?? 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...options.headers,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', fail);
    req.end(options.body);
  });
}

const listTools = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

describe('over Streamable HTTP', () => {
  it('answers each tool through the SDK client', async () => {
    const client = await connect(url);
    try {
      const range = { start_date: '2025-05-01', end_date: '2025-05-31' };
      for (const [name, args] of [
        ['query_order_count', range],
        ['query_sales', { ...range, group_by: 'region' }],
        ['query_top_products', range],
        ['query_recent_orders', range],
      ] as const) {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        expect(result.isError, name).toBeFalsy();
        expect(result.structuredContent, name).toBeDefined();
      }
      const bad = (await client.callTool({
        name: 'query_sales',
        arguments: { ...range, group_by: 'hour' },
      })) as CallToolResult;
      expect(bad.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('binds to loopback by default', () => {
    expect(url.hostname).toBe('127.0.0.1');
  });

  it('refuses a foreign Host header (DNS rebinding)', async () => {
    const res = await raw(url, { headers: { host: `evil.example:${url.port}` }, body: listTools });
    expect(res.status).toBe(403);
  });

  it('refuses a foreign Origin', async () => {
    const res = await raw(url, { headers: { origin: 'https://evil.example' }, body: listTools });
    expect(res.status).toBe(403);
    const ok = await raw(url, { headers: { origin: `http://localhost:${url.port}` }, body: listTools });
    expect(ok.status).toBe(200);
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const res = await raw(url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(1_100_000) } }),
    });
    expect(res.status).toBe(413);
  });

  it('answers malformed JSON with a JSON-RPC parse error', async () => {
    const res = await raw(url, { body: '{"jsonrpc": "2.0", "id": 1, ' });
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: -32700 } });
  });

  it('takes only POST at /mcp, and nothing elsewhere', async () => {
    expect((await raw(url, { method: 'GET' })).status).toBe(405);
    expect((await raw(new URL('/other', url), { body: listTools })).status).toBe(404);
  });
});

describe('with a bearer token configured', () => {
  it('answers 401 with WWW-Authenticate without the token, or with a wrong one', async () => {
    const missing = await raw(authedUrl, { body: listTools });
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
    const wrong = await raw(authedUrl, { headers: { authorization: 'Bearer nope' }, body: listTools });
    expect(wrong.status).toBe(401);
  });

  it('serves a client that presents the token', async () => {
    const client = await connect(authedUrl, { authorization: `Bearer ${TOKEN}` });
    try {
      expect((await client.listTools()).tools).toHaveLength(SALES_TOOLS.length);
    } finally {
      await client.close();
    }
  });
});

describe('probes of a server bound to every address', () => {
  /** The machine's own address, as a kubelet or load balancer reaches a pod; loopback when it has none. */
  const machineAddress =
    Object.values(networkInterfaces())
      .flat()
      .find((a) => a?.family === 'IPv4' && !a.internal)?.address ?? '127.0.0.1';

  it('item 7: /healthz and /readyz answer 200 whatever the Host and Origin, while /mcp keeps refusing them', async () => {
    const port = openUrl.port;
    const throughMachine = new URL(`http://${machineAddress}:${port}/`);
    const loopback = new URL(`http://127.0.0.1:${port}/`);
    const cases: { target: URL; headers: Record<string, string> }[] = [
      { target: throughMachine, headers: {} }, // Host: <machine address>:<port>, set by node:http
      { target: loopback, headers: { host: `querygate.default.svc:3111` } },
      { target: loopback, headers: { host: `10.1.2.3:${port}`, origin: 'https://evil.example' } },
    ];
    for (const { target, headers } of cases) {
      for (const path of ['/healthz', '/readyz']) {
        const res = await raw(new URL(path, target), { method: 'GET', headers });
        expect(res.status, `${path} ${JSON.stringify(headers)} via ${target.host}`).toBe(200);
        expect(JSON.parse(res.body)).toEqual({ status: 'ok' });
      }
      // The DNS-rebinding check still guards the endpoint that carries data, even with the right token.
      const mcp = await raw(new URL('/mcp', target), {
        headers: { ...headers, authorization: `Bearer ${TOKEN}` },
        body: listTools,
      });
      expect(mcp.status, `/mcp ${JSON.stringify(headers)} via ${target.host}`).toBe(403);
    }
    // Through an allowed Host the token still opens /mcp: the refusals above were the Host check.
    const allowed = await raw(new URL('/mcp', loopback), {
      headers: { authorization: `Bearer ${TOKEN}` },
      body: listTools,
    });
    expect(allowed.status).toBe(200);
  });

  it('item 7: the probes take GET only', async () => {
    const res = await raw(new URL(`http://127.0.0.1:${openUrl.port}/readyz`), {
      headers: { host: 'querygate.default.svc:3111' },
      body: listTools,
    });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET');
  });
});
