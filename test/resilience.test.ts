/**
 * Fault tolerance, for real: a database that is down at start-up or goes away mid-session, a client
 * that leaves mid-call, and a server told to stop while a call runs.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { freePort, startEmbedded, type EmbeddedDatabase } from '../src/db/embedded.js';
import { silentLogger } from '../src/logger.js';
import { CLI, startCli } from './support/cli.js';
import { figures, startHarness, textOf } from './support/harness.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from './support/scratch.js';

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
      expect((await client.listTools()).tools).toHaveLength(4);
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
        { dataDir, port, readerRole: DEFAULT_READER_ROLE, seedIfEmpty: { orders: 300, until: '2025-06-30' } },
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
      const response = new Promise<string>((done, fail) => {
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
            id: 7,
            method: 'tools/call',
            params: { name: 'query_recent_orders', arguments: week },
          }),
        );
      });
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
