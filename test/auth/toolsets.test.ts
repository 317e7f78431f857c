/**
 * Named bearer tokens with toolsets, and per-caller quotas, over HTTP through the built CLI: a
 * token sees and calls only its tools; tool calls and HTTP requests are limited per caller.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, startCli, type RunningCli } from '../support/cli.js';
import { SALES_TOOLS } from '../support/tool-names.js';

const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' } as const;
const ALL_TOOLS = [...SALES_TOOLS].sort();
const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const listTools = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

const newToken = (): string => randomBytes(24).toString('base64url');
let dir: string;
const running: RunningCli[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'querygate-toolsets-'));
});
afterAll(async () => {
  for (const server of running) await server.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function writeTokens(name: string, tokens: unknown[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ tokens }), { mode: 0o600 });
  return path;
}

function baseEnv(tokensFile: string): Record<string, string> {
  return {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_TOKEN_KEY: 'toolsets-test-key',
    QUERYGATE_HTTP_TOKENS_FILE: tokensFile,
  };
}

async function startServer(env: Record<string, string>): Promise<{ server: RunningCli; url: URL }> {
  const server = startCli(['serve', '--http', '--port', '0'], env);
  running.push(server);
  return { server, url: new URL((await server.waitForLog(LISTEN))[1]!) };
}

/** An SDK client with a bearer token; `onRequest` sees every HTTP request the transport sends. */
async function connect(url: URL, token: string, onRequest: () => void = () => undefined): Promise<Client> {
  const client = new Client({ name: 'toolsets-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: (input, init) => {
        onRequest();
        return fetch(input, init);
      },
    }),
  );
  return client;
}

/** A raw POST, for status codes and headers. */
function post(
  url: URL,
  headers: Record<string, string>,
  body = listTools,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((done, fail) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

const textOf = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

async function callError(client: Client, name: string): Promise<McpError> {
  const error = await client.callTool({ name, arguments: RANGE }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error, `calling ${name}`).toBeInstanceOf(McpError);
  return error as McpError;
}

describe('tokens with toolsets', () => {
  const salesOnly = newToken();
  const everything = newToken();
  let url: URL;

  beforeAll(async () => {
    const file = await writeTokens('toolsets.json', [
      { name: 'sales-only', token: salesOnly, tools: ['query_sales'] },
      { name: 'everything', token: everything },
    ]);
    ({ url } = await startServer(baseEnv(file)));
  });

  it('shows and runs only the toolset; other tools are unknown, exactly like a missing one', async () => {
    const client = await connect(url, salesOnly);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['query_sales']);

      const hidden = await callError(client, 'query_order_count');
      const missing = await callError(client, 'query_does_not_exist');
      expect(hidden.code).toBe(-32602);
      expect(hidden.message).toMatch(/Unknown tool/);
      expect(missing.code).toBe(hidden.code);
      expect(missing.message.replace('query_does_not_exist', 'X')).toBe(
        hidden.message.replace('query_order_count', 'X'),
      );

      const sales = (await client.callTool({
        name: 'query_sales',
        arguments: { ...RANGE, group_by: 'region' },
      })) as CallToolResult;
      expect(sales.isError, textOf(sales)).toBeFalsy();
      expect((sales.structuredContent as { rows: unknown[] }).rows.length).toBeGreaterThan(0);
    } finally {
      await client.close();
    }
  });

  it('shows every tool to a token without a toolset', async () => {
    const client = await connect(url, everything);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(ALL_TOOLS);
      const count = (await client.callTool({ name: 'query_order_count', arguments: RANGE })) as CallToolResult;
      expect(count.isError, textOf(count)).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('answers 401 with WWW-Authenticate: Bearer without a token or with a wrong one', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${newToken()}` },
      { authorization: salesOnly }, // the right token without the Bearer scheme
    ];
    for (const headers of attempts) {
      const res = await post(url, headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer\b/);
    }
    expect((await post(url, { authorization: `Bearer ${salesOnly}` })).status).toBe(200);
  });
});

describe('a bad token file', () => {
  /** The CLI's own message, apart from the JSON log lines written before the file was read. */
  const messages = (stderr: string): string[] =>
    stderr
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter((line) => {
        try {
          JSON.parse(line);
          return false;
        } catch {
          return true;
        }
      });

  it('naming a tool that does not exist makes serve exit 2 with one line', async () => {
    const file = await writeTokens('unknown-tool.json', [
      { name: 'bot', token: newToken(), tools: ['query_sales', 'query_everything'] },
    ]);
    const { code, stderr } = await runCli(['serve', '--http', '--port', '0'], baseEnv(file));
    expect(code, stderr).toBe(2);
    const lines = messages(stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^querygate: .*QUERYGATE_HTTP_TOKENS_FILE.*tools/);
  });

  it('holding a token shorter than 16 characters makes serve exit 2 with one line', async () => {
    const file = await writeTokens('short-token.json', [{ name: 'bot', token: 'x'.repeat(15) }]);
    const { code, stderr } = await runCli(['serve', '--http', '--port', '0'], baseEnv(file));
    expect(code, stderr).toBe(2);
    const lines = messages(stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^querygate: .*QUERYGATE_HTTP_TOKENS_FILE.*16/);
    expect(stderr).not.toContain('x'.repeat(15));
  });

  it('fails closed: an empty token list, a blank token or a file others can read stop serve', async () => {
    const empty = await writeTokens('empty.json', []);
    const emptyRun = await runCli(['serve', '--http', '--port', '0'], baseEnv(empty));
    expect(emptyRun.code, emptyRun.stderr).toBe(2);
    expect(messages(emptyRun.stderr)[0]).toMatch(/at least one token/);

    const blank = await runCli(['serve', '--http', '--port', '0'], { ...baseEnv(empty), QUERYGATE_HTTP_TOKEN: '   ' });
    expect(blank.code, blank.stderr).toBe(2);
    expect(messages(blank.stderr)[0]).toMatch(/QUERYGATE_HTTP_TOKEN: is set but blank/);

    const open = await writeTokens('open.json', [{ name: 'bot', token: newToken() }]);
    await chmod(open, 0o644);
    const openRun = await runCli(['serve', '--http', '--port', '0'], baseEnv(open));
    expect(openRun.code, openRun.stderr).toBe(2);
    expect(messages(openRun.stderr)[0]).toMatch(/readable by others/);
  });
});

describe('quotas over HTTP', () => {
  const RATE = 3; // tool calls per caller per minute
  const REQUESTS_PER_MINUTE = RATE * 5; // HTTP requests per caller per minute
  const first = newToken();
  const second = newToken();
  let url: URL;

  beforeAll(async () => {
    const file = await writeTokens('quota.json', [
      { name: 'first', token: first },
      { name: 'second', token: second },
    ]);
    ({ url } = await startServer({ ...baseEnv(file), QUERYGATE_RATE_LIMIT: String(RATE) }));
  });

  it('refuses the call over the rate with a retry hint, then HTTP requests with 429, per caller', async () => {
    let requests = 0;
    const started = Date.now();
    const client = await connect(url, first, () => requests++);
    try {
      for (let i = 0; i < RATE; i++) {
        const ok = (await client.callTool({ name: 'query_order_count', arguments: RANGE })) as CallToolResult;
        expect(ok.isError, `call ${i + 1}: ${textOf(ok)}`).toBeFalsy();
      }
      const refused = (await client.callTool({ name: 'query_order_count', arguments: RANGE })) as CallToolResult;
      expect(refused.isError).toBe(true);
      const text = textOf(refused);
      expect(text).toMatch(/rate_limited/);
      const retry = /retry in (\d+) seconds?/i.exec(text);
      expect(retry, text).not.toBeNull();
      // One call comes back every 60 / RATE seconds, so the wait is at least 1 s and at most that.
      expect(Number(retry![1])).toBeGreaterThanOrEqual(1);
      expect(Number(retry![1])).toBeLessThanOrEqual(60 / RATE);
    } finally {
      await client.close();
    }

    let tooMany: Awaited<ReturnType<typeof post>> | undefined;
    while (!tooMany && requests < REQUESTS_PER_MINUTE * 3) {
      requests++;
      const res = await post(url, { authorization: `Bearer ${first}` });
      if (res.status === 429) tooMany = res;
      else expect(res.status).toBe(200);
    }
    const elapsedMs = Date.now() - started;
    expect(tooMany, `no 429 after ${requests} requests`).toBeDefined();
    // A full bucket lets REQUESTS_PER_MINUTE through, plus what refilled while this test ran
    // (usually nothing); the refused request is the one after those.
    const accepted = requests - 1;
    const refilled = Math.floor((elapsedMs * REQUESTS_PER_MINUTE) / 60_000);
    expect(accepted).toBeGreaterThanOrEqual(REQUESTS_PER_MINUTE);
    expect(accepted).toBeLessThanOrEqual(REQUESTS_PER_MINUTE + refilled);
    expect(String(tooMany!.headers['retry-after'])).toMatch(/^[1-9]\d*$/);
    expect(JSON.parse(tooMany!.body)).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number) } });

    // Another caller has a bucket of its own.
    const other = await post(url, { authorization: `Bearer ${second}` });
    expect(other.status).toBe(200);
    expect((JSON.parse(other.body) as { result: { tools: unknown[] } }).result.tools).toHaveLength(ALL_TOOLS.length);
  });
});
