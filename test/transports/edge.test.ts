/**
 * The HTTP edge where it meets what it does not control, each peer real and on loopback: an
 * authorization server whose introspection endpoint is down, a scraper guessing the metrics token,
 * clients that hold subscription streams open, and bodies too large to read. The server is the built CLI.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createSubscriptionLimits } from '../../src/lib/limits.js';
import { freePort } from '../support/authorization-server.js';
import { startCli, type RunningCli } from '../support/cli.js';
import { post, type Answer } from '../support/raw-http.js';

const folder = mkdtempSync(join(tmpdir(), 'querygate-edge-'));
const METRICS_TOKEN = 'edge-test-metrics-token-0123';
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const MODERN = { 'mcp-protocol-version': '2025-11-25' };

/** An authorization server whose introspection endpoint answers 503 to every request, counting them. */
let down: Server;
let introspections = 0;
let edge: RunningCli;
let resource: string;
const auditPath = join(folder, 'audit.log');

const from = (address: string): Record<string, string> => ({ 'x-forwarded-for': address });

async function startServer(args: string[], env: Record<string, string>): Promise<RunningCli> {
  const cli = startCli(args, { DATABASE_URL: inject('readerUrl'), QUERYGATE_TOKEN_KEY: 'edge-test-token-key', ...env });
  await cli.waitForLog(/listening on/);
  return cli;
}

beforeAll(async () => {
  down = createServer((req, res) => {
    if (req.url === '/introspect') introspections++;
    if (req.url === '/.well-known/openid-configuration') {
      const issuer = `http://127.0.0.1:${(down.address() as { port: number }).port}`;
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks`, introspection_endpoint: `${issuer}/introspect` }));
      return;
    }
    if (req.url === '/jwks') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}');
      return;
    }
    req.resume();
    res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
  });
  await new Promise<void>((done) => down.listen(0, '127.0.0.1', done));
  const issuer = `http://127.0.0.1:${(down.address() as { port: number }).port}`;
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  const config = join(folder, 'edge.json');
  writeFileSync(
    config,
    JSON.stringify({
      toolsets: { analysts: ['query_order_count'] },
      scopes: { 'sales:read': ['analysts'] },
      oauth: {
        resource,
        authorization_servers: [{ issuer, introspection: { client_id: 'querygate', client_secret_env: 'QG_SECRET' } }],
      },
    }),
    { mode: 0o600 },
  );
  edge = await startServer(['serve', '--http', '--port', String(port)], {
    QUERYGATE_CONFIG: config,
    QG_SECRET: 'edge-introspection-secret',
    QUERYGATE_AUTH_FAILURES_PER_MINUTE: '5',
    QUERYGATE_TRUST_PROXY_HOPS: '1',
    QUERYGATE_METRICS_TOKEN: METRICS_TOKEN,
    QUERYGATE_AUDIT_LOG: auditPath,
  });
}, 60_000);

afterAll(async () => {
  expect(await edge?.stop()).toBe(0);
  await new Promise((done) => down?.close(done));
});

const listWith = (token: string, headers: Record<string, string>): Promise<Answer> =>
  post(new URL(resource), LIST, { ...MODERN, ...headers, authorization: `Bearer ${token}` });

const auditLines = (source: string): [unknown, unknown][] =>
  readFileSync(auditPath, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.type === 'auth_failure' && l.source === source)
    .map((l) => [l.reason, l.status]);

describe('19.5.3 an introspection endpoint that fails', () => {
  it('19.5.3 charges 100 garbage opaque tokens from one address to its throttle: 5 answered 503, the rest 429', async () => {
    const before = introspections;
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) statuses.push((await listWith(`garbage-${i}`, from('198.51.100.1'))).status);
    // The throttle allows 5 failures a minute; a 503 is one of them.
    expect(statuses).toEqual([...Array(5).fill(503), ...Array(95).fill(429)]);
    expect(introspections - before).toBeGreaterThanOrEqual(1);
    expect(introspections - before).toBeLessThanOrEqual(5);
  });

  it('19.5.3 backs off from the failing endpoint: tokens from many addresses wait outside with 503 and Retry-After', async () => {
    const before = introspections;
    const answers: Answer[] = [];
    for (let i = 0; i < 20; i++) answers.push(await listWith(`other-garbage-${i}`, from(`198.51.100.${100 + i}`)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(503));
    for (const answer of answers) {
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(answer.json.error?.message).toMatch(/authorization server could not be asked/);
    }
    // Without the breaker, each of the 20 is a request to the authorization server.
    expect(introspections - before).toBeLessThan(5);
  });
});

describe('19.5.5 the metrics token', () => {
  const scrape = (token: string | undefined, address: string): Promise<Answer> =>
    new Promise((done, fail) => {
      fetch(new URL('/metrics', resource), {
        headers: { ...from(address), ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      })
        .then(async (res) =>
          done({ status: res.status, headers: Object.fromEntries(res.headers), body: await res.text(), json: {} }),
        )
        .catch(fail);
    });

  it('19.5.5 throttles guesses per address, even the right token once throttled, and audits them', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await scrape(`guess-${i}-of-the-metrics-token`, '203.0.113.5')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const throttled = await scrape(METRICS_TOKEN, '203.0.113.5');
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another address with the right token is not held up.
    expect((await scrape(METRICS_TOKEN, '203.0.113.6')).status).toBe(200);
    expect(auditLines('203.0.113.5')).toEqual([
      ...Array(5).fill(['missing_or_invalid_metrics_token', 401]),
      ['throttled', 429],
    ]);
    expect(readFileSync(auditPath, 'utf8')).not.toContain('guess-');
  });
});

describe('19.5.4 subscriptions/listen streams', () => {
  it('19.5.4 caps the streams of one caller and of the server, and ends each at its lifetime so the client listens again', async () => {
    const tokens = join(folder, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { name: 'alice', token: 'alice-token-0123456789' },
          { name: 'bob', token: 'bob-token-0123456789ab' },
        ],
      }),
      { mode: 0o600 },
    );
    const cli = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_TOKEN_KEY: 'edge-test-token-key',
      QUERYGATE_HTTP_TOKENS_FILE: tokens,
      QUERYGATE_MAX_STREAMS_PER_CALLER: '2',
      QUERYGATE_MAX_STREAMS: '3',
      QUERYGATE_STREAM_LIFETIME_SECONDS: '5',
    });
    const url = new URL((await cli.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
    const connect = async (token: string): Promise<ModernClient> => {
      const client = new ModernClient(
        { name: 'edge-test', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(new ModernHttp(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    };
    const alice = await connect('alice-token-0123456789');
    const bob = await connect('bob-token-0123456789ab');
    try {
      const first = await alice.listen({ toolsListChanged: true });
      await alice.listen({ toolsListChanged: true });
      await expect(alice.listen({ toolsListChanged: true })).rejects.toThrow(
        /Too many subscriptions: this caller already holds 2 open streams/,
      );
      // Another caller has places of its own, up to the server's cap.
      await bob.listen({ toolsListChanged: true });
      await expect(bob.listen({ toolsListChanged: true })).rejects.toThrow(
        /Too many subscriptions: the server holds 3 open streams/,
      );
      // The lifetime ends the stream with its answer while the server goes on, and gives its place back.
      expect(await first.closed).toBe('graceful');
      expect(cli.child.exitCode).toBeNull();
      const again = await alice.listen({ toolsListChanged: true });
      expect(again.honoredFilter).toEqual({ toolsListChanged: true });
    } finally {
      await alice.close();
      await bob.close();
      expect(await cli.stop()).toBe(0);
    }
  }, 30_000);

  it('19.5.4 gives a place back once, however often its stream is released', () => {
    const limits = createSubscriptionLimits({ perCaller: 1, total: 2, maxLifetimeMs: 1000 });
    const a = limits.open('a');
    expect(a.ok).toBe(true);
    expect(limits.open('a')).toEqual({ ok: false, reason: 'this caller already holds 1 open streams' });
    expect(limits.open('b').ok).toBe(true);
    expect(limits.open('c')).toEqual({ ok: false, reason: 'the server holds 2 open streams' });
    if (a.ok) {
      a.release();
      a.release();
    }
    expect(limits.open('c').ok).toBe(true);
    expect(limits.open('d').ok).toBe(false);
  });
});

describe('19.5.2 a body over the limit', () => {
  let plain: RunningCli;
  let url: URL;
  const FIVE_MB = 5 * 1024 * 1024;
  const body = Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(FIVE_MB) } }),
  );
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  beforeAll(async () => {
    plain = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_TOKEN_KEY: 'edge-test-token-key',
      QUERYGATE_RATE_LIMIT: '1000',
    });
    url = new URL((await plain.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  });
  afterAll(async () => {
    expect(await plain?.stop()).toBe(0);
  });

  /** A POST by node:http, with its length declared or sent chunked: the status read, or the error met. */
  const nodePost = (chunked: boolean): Promise<number | string> =>
    new Promise((done) => {
      const req = request(
        url,
        { method: 'POST', headers: chunked ? headers : { ...headers, 'content-length': String(body.length) } },
        (res) => {
          res.resume();
          res.on('end', () => done(res.statusCode ?? 0));
          res.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
      if (chunked) {
        for (let at = 0; at < body.length; at += 256 * 1024) req.write(body.subarray(at, at + 256 * 1024));
        req.end();
      } else req.end(body);
    });

  const fetchPost = (): Promise<number | string> =>
    fetch(url, { method: 'POST', headers, body })
      .then(async (res) => {
        await res.text();
        return res.status;
      })
      .catch((err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message);

  it('19.5.2 answers 413 to every one of 20 five-megabyte bodies, declared or chunked, sent by node:http', async () => {
    const statuses: (number | string)[] = [];
    for (let i = 0; i < 20; i++) statuses.push(await nodePost(i % 2 === 1));
    expect(statuses).toEqual(Array(20).fill(413));
  });

  it('19.5.2 answers 413 to every one of 20 five-megabyte bodies sent by fetch, and serves the next request', async () => {
    const statuses: (number | string)[] = [];
    for (let i = 0; i < 20; i++) statuses.push(await fetchPost());
    expect(statuses).toEqual(Array(20).fill(413));
    const ok = await post(url, LIST, MODERN);
    expect(ok.status).toBe(200);
  });
});
