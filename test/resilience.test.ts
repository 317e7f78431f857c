/**
 * Fault tolerance, for real: a database that is down at start-up or goes away mid-session, a client
 * that leaves mid-call, and a server told to stop while a call runs.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect as connectSocket, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { freePort, startEmbedded, type EmbeddedDatabase } from '../src/db/embedded.js';
import { silentLogger } from '../src/lib/logger.js';
import { CLI, startCli, type RunningCli } from './support/cli.js';
import { figures, startHarness, textOf } from './support/harness.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from './support/scratch.js';
import { salesPack } from '../pack/index.js';

const week = { start_date: '2025-06-01', end_date: '2025-06-07' };

function get(url: URL): Promise<number> {
  return new Promise((done, fail) => {
    request(url, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    })
      .on('error', fail)
      .end();
  });
}

describe('a database that is down at start-up', () => {
  it('over stdio: the server starts and answers calls with "database unavailable"', async () => {
    const port = await freePort(); // nothing listens there
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI],
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: `postgres://querygate_reader:pw@127.0.0.1:${port}/querygate`,
        QUERYGATE_TOKEN_KEY: 'resilience-test-key',
      },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'resilience', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools).toHaveLength(7);
      const result = (await client.callTool({ name: 'query_order_count', arguments: week })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain('code: database_unavailable');
    } finally {
      await client.close();
    }
  });

  describe('over HTTP, with a database that comes up, goes down and comes back', () => {
    let dataDir: string;
    let port: number;
    let database: EmbeddedDatabase | undefined;
    const readerPassword = 'resilience-reader-pw';

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'querygate-resilience-'));
      await chmod(dataDir, 0o755);
      // Known credentials up front, so the server can be given its URL before the database exists.
      await writeFile(
        join(dataDir, 'secrets.json'),
        JSON.stringify({ adminPassword: 'resilience-admin-pw', readerPassword, tokenKey: 'resilience-token-key' }),
        { mode: 0o600 },
      );
      port = await freePort();
    });
    afterAll(async () => {
      await database?.stop();
      await rm(dataDir, { recursive: true, force: true });
    });

    const startDatabase = async (): Promise<void> => {
      database = await startEmbedded(
        {
          dataDir,
          port,
          readerRole: DEFAULT_READER_ROLE,
          packs: [salesPack],
          seedIfEmpty: { until: '2025-06-30', counts: { sales: 300 } },
        },
        silentLogger,
      );
    };

    it('is not ready until the database answers, then serves; survives a restart of the database', async () => {
      const server = startCli(['serve', '--http', '--port', '0'], {
        DATABASE_URL: `postgres://${DEFAULT_READER_ROLE}:${readerPassword}@127.0.0.1:${port}/querygate`,
        QUERYGATE_TOKEN_KEY: 'resilience-test-key',
      });
      try {
        const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
        expect(await get(new URL('/healthz', url))).toBe(200);
        expect(await get(new URL('/readyz', url))).toBe(503);
        const client = new Client({ name: 'resilience', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(url));
        const call = async (): Promise<CallToolResult> =>
          (await client.callTool({ name: 'query_order_count', arguments: week })) as CallToolResult;
        expect(textOf(await call())).toContain('code: database_unavailable');

        await startDatabase();
        await eventually(
          'the server to become ready',
          async () => (await get(new URL('/readyz', url))) === 200,
          60_000,
        );
        const first = await call();
        expect(first.isError).toBeFalsy();

        await database!.stop();
        database = undefined;
        await eventually('/readyz to report the outage', async () => (await get(new URL('/readyz', url))) === 503);
        const during = await call();
        expect(during.isError).toBe(true);
        expect(textOf(during)).toContain('code: database_unavailable');

        await startDatabase();
        const after = await eventually('calls to succeed again', async () => {
          const result = await call();
          return result.isError ? undefined : result;
        });
        expect(figures(after.structuredContent)).toEqual(figures(first.structuredContent));
        await eventually('/readyz to report ready again', async () => (await get(new URL('/readyz', url))) === 200);
        await client.close();
      } finally {
        expect(await server.stop()).toBe(0);
      }
    });
  });
});

describe('a call whose client goes away', () => {
  let scratch: ScratchDatabase;
  beforeAll(async () => {
    scratch = await createScratchDatabase('cancel_check', { orders: 200, until: '2025-06-30' });
  });
  afterAll(() => scratch.drop());

  /** Backends of one application that are waiting on a lock. */
  const waiting = async (application: string): Promise<number> =>
    (
      await scratch.admin.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
        [application],
      )
    ).rows[0]!.n;

  it('has its query cancelled on the server when the client cancels the request', async () => {
    const harness = await startHarness({
      readerUrl: scratch.readerUrl,
      statementTimeoutMs: 60_000,
      applicationName: 'querygate-cancel-test',
    });
    // A first call opens the pooled connection; a new backend would wait on the lock while starting.
    expect((await harness.call('query_recent_orders', week)).isError).toBeFalsy();
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    try {
      const abort = new AbortController();
      const call = harness.client
        .callTool({ name: 'query_recent_orders', arguments: week }, undefined, { signal: abort.signal })
        .catch((err: unknown) => err);
      await eventually('the query to wait on the lock', async () => (await waiting('querygate-cancel-test')) === 1);
      abort.abort();
      await call;
      // Long before the 60 s statement timeout, the backend has given the query up.
      await eventually('the query to be cancelled', async () => (await waiting('querygate-cancel-test')) === 0, 10_000);
    } finally {
      await scratch.admin.query('rollback');
      await harness.close();
    }
  });

  it('has its query cancelled when an HTTP client disconnects mid-call', async () => {
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'cancel-test-key',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    });
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    try {
      const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
      const req = request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      });
      req.on('error', () => undefined);
      req.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'query_recent_orders', arguments: week },
        }),
      );
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      req.destroy();
      await eventually('the query to be cancelled', async () => (await waiting('querygate')) === 0, 10_000);
    } finally {
      await scratch.admin.query('rollback');
      expect(await server.stop()).toBe(0);
    }
  });

  it('on SIGTERM: the call in flight finishes, new connections are refused, the process exits 0', async () => {
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'sigterm-test-key',
    });
    const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    let locked = true;
    try {
      const response = postCall(url, 7).answer;
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      server.child.kill('SIGTERM');
      await server.waitForLog(/"msg":"stopping/);
      await expect(get(new URL('/healthz', url))).rejects.toThrow(/ECONNREFUSED/);
      await scratch.admin.query('rollback');
      locked = false;
      const body = JSON.parse(await response) as { id: number; result: CallToolResult };
      expect(body.id).toBe(7);
      expect(body.result.isError).toBeFalsy();
      expect(await server.exited).toBe(0);
    } finally {
      if (locked) await scratch.admin.query('rollback');
      await server.stop();
    }
  });
});

/**
 * A TCP relay between the server and the database, which the test can freeze (bytes stop flowing
 * both ways and new connections are accepted but never answered: a stalled database) or close.
 */
interface Relay {
  readonly url: string;
  freeze(): void;
  close(): Promise<void>;
}

async function startRelay(databaseUrl: string): Promise<Relay> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const pairs: [Socket, Socket][] = [];
  let frozen = false;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createNetServer((client) => {
    track(client);
    if (frozen) return;
    const upstream = connectSocket(Number(target.port), target.hostname);
    track(upstream);
    client.pipe(upstream).on('error', () => undefined);
    upstream.pipe(client);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(databaseUrl);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as AddressInfo).port);
  return {
    url: relayed.toString(),
    freeze: () => {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A hang detector: the value, or `hung` once a generous bound has passed. Not a timing assertion. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)));
  promise.catch(() => undefined); // a late failure, after the bound, is not an unhandled rejection
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

/** A tools/call over HTTP whose answer (the body) is awaited later; the request can be cut. */
function postCall(url: URL, id: number): { answer: Promise<string>; destroy(): void } {
  let cut: () => void = () => undefined;
  const answer = new Promise<string>((done, fail) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => done(body));
      },
    );
    req.on('error', fail);
    req.end(
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'query_recent_orders', arguments: week },
      }),
    );
    cut = () => req.destroy();
  });
  answer.catch(() => undefined);
  return { answer, destroy: () => cut() };
}

/** The audit lines a CLI wrote to its stderr (no QUERYGATE_AUDIT_LOG). */
function auditLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.includes('"type":"audit"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('the edge under load and while stopping', () => {
  let scratch: ScratchDatabase;
  let locked = false;
  beforeAll(async () => {
    scratch = await createScratchDatabase('edge_check', { orders: 200, until: '2025-06-30' });
  });
  afterAll(() => scratch.drop());

  const lock = async (): Promise<void> => {
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders in access exclusive mode');
    locked = true;
  };
  const unlock = async (): Promise<void> => {
    if (!locked) return;
    locked = false;
    await scratch.admin.query('rollback');
  };
  /** Backends of one application that are waiting on a lock. */
  const waiting = async (application: string): Promise<number> =>
    (
      await scratch.admin.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
        [application],
      )
    ).rows[0]!.n;
  const listening = async (cli: RunningCli): Promise<URL> =>
    new URL((await cli.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);

  it('item 8: /readyz answers 200 while the full pool waits on a lock, and 503 within a bound when the database stalls or is gone', async () => {
    const relay = await startRelay(scratch.readerUrl);
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: relay.url,
      QUERYGATE_TOKEN_KEY: 'readyz-test-key',
      QUERYGATE_POOL_MAX: '1',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    });
    try {
      const url = await listening(server);
      const readyz = new URL('/readyz', url);
      await eventually('the server to be ready', async () => (await get(readyz)) === 200);
      // The pool's only connection is open before the lock is taken.
      expect(JSON.parse(await postCall(url, 1).answer).result.isError).toBeFalsy();

      await lock();
      const call = postCall(url, 2);
      let settled = false;
      void call.answer.finally(() => (settled = true));
      await eventually('the call to wait on the lock', async () => (await waiting('querygate')) === 1);
      await sleep(1100); // past the one-second cache of the last probe, so that this one reaches the database
      expect(await within(get(readyz), 15_000)).toBe(200);
      // Ordering, not timing: the answer came while the pool's one connection was still taken.
      expect(settled).toBe(false);
      expect(await waiting('querygate')).toBe(1);
      await unlock();
      expect(JSON.parse(await call.answer).result.isError).toBeFalsy();

      relay.freeze();
      await sleep(1100);
      expect(await within(get(readyz), 15_000)).toBe(503);
      await relay.close();
      await sleep(1100);
      expect(await within(get(readyz), 15_000)).toBe(503);
      expect(await server.stop(), server.stderr()).toBe(0);
    } finally {
      await unlock();
      await relay.close();
      await server.stop();
    }
  });

  it('item 11: a call cancelled with notifications/cancelled (in memory) is audited as cancelled', async () => {
    const harness = await startHarness({
      readerUrl: scratch.readerUrl,
      statementTimeoutMs: 60_000,
      applicationName: 'querygate-audit-cancel',
    });
    // A first call opens the pooled connection; a new backend would wait on the lock while starting.
    expect((await harness.call('query_recent_orders', week)).isError).toBeFalsy();
    await lock();
    try {
      const abort = new AbortController();
      const call = harness.client
        .callTool({ name: 'query_recent_orders', arguments: week }, undefined, { signal: abort.signal })
        .catch((err: unknown) => err);
      await eventually('the query to wait on the lock', async () => (await waiting('querygate-audit-cancel')) === 1);
      abort.abort();
      await call;
      const entry = await eventually('the audit entry of the cancelled call', async () => harness.audits[1]);
      expect(entry).toMatchObject({ tool: 'query_recent_orders', outcome: 'cancelled' });
      expect(entry.error_code).toBeUndefined();
      expect(harness.audits).toHaveLength(2);
    } finally {
      await unlock();
      await harness.close();
    }
  });

  it('item 11: a call cancelled over stdio is audited as cancelled', async () => {
    const cli = startCli([], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'cancel-test-key',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    });
    try {
      await cli.waitForLog(/"msg":"serving"/);
      await lock();
      cli.child.stdin!.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'query_recent_orders', arguments: week } })}\n`,
      );
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      cli.child.stdin!.write(
        `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } })}\n`,
      );
      const entry = await eventually('the audit line of the cancelled call', async () => auditLines(cli.stderr())[0]);
      expect(entry).toMatchObject({
        caller: expect.stringMatching(/^stdio:/),
        tool: 'query_recent_orders',
        outcome: 'cancelled',
      });
      expect(entry.error_code).toBeUndefined();
      expect(await waiting('querygate')).toBe(0);
      cli.child.stdin!.end();
      expect(await cli.exited, cli.stderr()).toBe(0);
    } finally {
      await unlock();
      await cli.stop();
    }
  });

  it('item 11: a call whose HTTP client disconnects is audited as cancelled', async () => {
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'cancel-test-key',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    });
    try {
      const url = await listening(server);
      await lock();
      const call = postCall(url, 1);
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      call.destroy();
      const entry = await eventually(
        'the audit line of the cancelled call',
        async () => auditLines(server.stderr())[0],
      );
      expect(entry).toMatchObject({ caller: 'http', tool: 'query_recent_orders', outcome: 'cancelled' });
      expect(entry.error_code).toBeUndefined();
      await unlock();
      expect(await server.stop(), server.stderr()).toBe(0);
    } finally {
      await unlock();
      await server.stop();
    }
  });

  it('item 11: with QUERYGATE_SHUTDOWN_TIMEOUT_MS=1000, SIGTERM cancels a call still running and the process exits', async () => {
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'shutdown-test-key',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
      QUERYGATE_SHUTDOWN_TIMEOUT_MS: '1000',
    });
    try {
      const url = await listening(server);
      await lock();
      const call = postCall(url, 7);
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      server.child.kill('SIGTERM');
      // A hang detector far above the 1 s setting and far below the 60 s statement timeout.
      expect(await within(server.exited, 20_000), server.stderr()).toBe(0);
      expect(locked).toBe(true); // the call did not end by itself: the lock was held throughout
      const body = JSON.parse(await call.answer) as { id: number; result: CallToolResult };
      expect(body.id).toBe(7);
      expect(body.result.isError).toBe(true);
      expect(textOf(body.result)).toContain('code: shutting_down');
      expect(auditLines(server.stderr())).toEqual([
        expect.objectContaining({ tool: 'query_recent_orders', outcome: 'failed', error_code: 'shutting_down' }),
      ]);
      await eventually('the query to be cancelled on the server', async () => (await waiting('querygate')) === 0);
    } finally {
      await unlock();
      await server.stop();
    }
  });

  it('item 11: over stdio, requests that arrive after SIGTERM get an error with their id and are not run', async () => {
    const cli = startCli([], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_TOKEN_KEY: 'drain-test-key',
      QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
    });
    const answers: { id: unknown; result?: CallToolResult; error?: { code: number; message: string } }[] = [];
    let partial = '';
    cli.child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) if (line !== '') answers.push(JSON.parse(line) as (typeof answers)[number]);
    });
    const rpc = (id: number, method: string, params?: object): string =>
      `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })}\n`;
    try {
      await cli.waitForLog(/"msg":"serving"/);
      await lock();
      cli.child.stdin!.write(rpc(1, 'tools/call', { name: 'query_recent_orders', arguments: week }));
      await eventually('the query to wait on the lock', async () => (await waiting('querygate')) === 1);
      cli.child.kill('SIGTERM');
      await cli.waitForLog(/"msg":"stopping/);
      cli.child.stdin!.write(
        rpc(2, 'tools/call', { name: 'query_order_count', arguments: week }) + rpc(3, 'tools/list'),
      );
      await eventually('answers to the requests sent while stopping', async () => answers.length === 2, 10_000);
      const refusal = { code: -32000, message: expect.stringMatching(/shutting down.*not run/) };
      expect(answers).toEqual([
        { jsonrpc: '2.0', id: 2, error: refusal },
        { jsonrpc: '2.0', id: 3, error: refusal },
      ]);
      expect(await waiting('querygate')).toBe(1); // the call in flight still runs, and is answered
      await unlock();
      expect(await within(cli.exited, 20_000), cli.stderr()).toBe(0);
      expect(answers.map((a) => a.id)).toEqual([2, 3, 1]);
      expect(answers[2]!.result!.isError).toBeFalsy();
      expect(auditLines(cli.stderr()).map((l) => [l.tool, l.outcome])).toEqual([['query_recent_orders', 'ok']]);
    } finally {
      await unlock();
      await cli.stop();
    }
  });
});
