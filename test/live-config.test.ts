/**
 * The configuration file reloaded while serving, against the built CLI and real clients: tools
 * appear and disappear, clients are told (notifications/tools/list_changed over stdio, on a
 * subscriptions/listen stream over HTTP for 2026-07-28), a bad file is refused with the reason in
 * the log and the tools in force stay, and SIGHUP reloads too.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdio } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli } from './support/cli.js';
import { eventually } from './support/scratch.js';
import { SALES_QUERY_TOOLS } from './support/tool-names.js';

const ALL = SALES_QUERY_TOOLS;
const WITHOUT_TOP = ALL.filter((t) => t !== 'query_top_products');
const MAY = { start_date: '2025-05-01', end_date: '2025-05-31' };
const ANALYST_TOKEN = 'analyst-token-0123456789';

const folder = mkdtempSync(join(tmpdir(), 'querygate-live-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Writes the file as editors do: a new file renamed over the old one. */
function replaceFile(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

const serving = (tools: readonly string[], toolsets = 'analysts: [query_order_count]'): string =>
  `packs:\n  - name: sales\n    templates: [${tools.join(', ')}]\ntoolsets:\n  ${toolsets}\n`;

const names = (list: { tools: { name: string }[] }): string[] => list.tools.map((t) => t.name);

/** How many times a pattern occurs in a text: log lines come and go in order, so counts tell what is new. */
const count = (text: string, pattern: RegExp): number => text.match(new RegExp(pattern, 'g'))?.length ?? 0;

describe('over stdio, a 2025-11-25 client', () => {
  it('is told when tools disappear and appear, keeps them when a bad file is refused, and SIGHUP reloads', async () => {
    const path = join(folder, 'stdio.yaml');
    replaceFile(path, serving(ALL));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve'],
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: inject('readerUrl'),
        QUERYGATE_TOKEN_KEY: 'live-test-key',
        QUERYGATE_CONFIG: path,
      },
      stderr: 'pipe',
    });
    let stderr = '';
    (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'live-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    await client.connect(transport);
    try {
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
      expect(names(await client.listTools())).toEqual(ALL);

      replaceFile(path, serving(WITHOUT_TOP));
      await eventually('notifications/tools/list_changed', async () => changes === 1, 10_000);
      expect(names(await client.listTools())).toEqual(WITHOUT_TOP);
      await expect(client.callTool({ name: 'query_top_products', arguments: MAY })).rejects.toMatchObject({
        code: -32602,
        message: expect.stringContaining('Unknown tool: "query_top_products"'),
      });

      // A row cap over 100: refused, with the field and the rule in the log; the tools in force stay.
      replaceFile(path, `${serving(ALL)}limits:\n  query_sales: { max_rows: 500 }\n`);
      await eventually('the refusal in the log', async () => count(stderr, /configuration file refused/) === 1, 10_000);
      expect(stderr).toContain('QUERYGATE_CONFIG limits.query_sales.max_rows: must be at most 100');
      expect(names(await client.listTools())).toEqual(WITHOUT_TOP);
      const call = (await client.callTool({ name: 'query_order_count', arguments: MAY })) as CallToolResult;
      expect(call.isError).toBeFalsy();

      // SIGHUP reads the file again: still bad, refused again.
      process.kill(transport.pid!, 'SIGHUP');
      await eventually('a second refusal', async () => count(stderr, /configuration file refused/) === 2, 10_000);

      replaceFile(path, serving(ALL));
      await eventually('the tool to come back', async () => changes === 2, 10_000);
      expect(names(await client.listTools())).toEqual(ALL);
      const reloads = count(stderr, /configuration file reloaded/);
      process.kill(transport.pid!, 'SIGHUP');
      await eventually('the reload', async () => count(stderr, /configuration file reloaded/) === reloads + 1, 10_000);
      // Nothing the client sees changed: it is not told anything.
      expect(names(await client.listTools())).toEqual(ALL);
      expect(changes).toBe(2);

      // The reporting time zone follows the file, for the next call.
      const zone = async (): Promise<unknown> =>
        ((await client.callTool({ name: 'query_order_count', arguments: MAY })) as CallToolResult).structuredContent;
      expect(await zone()).toMatchObject({ time_zone: 'UTC' });
      replaceFile(path, `${serving(ALL)}time_zone: Asia/Tokyo\n`);
      await eventually('the reload', async () => count(stderr, /configuration file reloaded/) === reloads + 2, 10_000);
      expect(await zone()).toMatchObject({ time_zone: 'Asia/Tokyo', starts_at: '2025-05-01T00:00:00.000+09:00' });
    } finally {
      await client.close();
    }
  });
});

describe('19.5.7 a file written in two steps', () => {
  it('19.5.7 applies only the file that reads the same twice, never the wider first half, and warns when a reload widens access', async () => {
    const path = join(folder, 'two-steps.yaml');
    const only = ['query_order_count', 'query_sales'];
    replaceFile(path, serving(only));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve'],
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: inject('readerUrl'),
        QUERYGATE_TOKEN_KEY: 'live-test-key',
        QUERYGATE_CONFIG: path,
      },
      stderr: 'pipe',
    });
    let stderr = '';
    (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'live-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++);
    await client.connect(transport);
    try {
      expect(names(await client.listTools())).toEqual(only);
      // A tool that writes the packs first and their templates a moment later (past the 200 ms
      // debounce, within the settling interval): in between, templates left out mean every one.
      writeFileSync(path, 'packs:\n  - name: sales\n', { mode: 0o600 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      writeFileSync(path, serving(['query_order_count']), { mode: 0o600 });
      await eventually('the second half in force', async () => changes === 1, 10_000);
      expect(names(await client.listTools())).toEqual(['query_order_count']);
      expect(count(stderr, /configuration file reloaded/)).toBe(1);
      expect(stderr).toContain('configuration file still changing');
      expect(stderr).not.toContain('widens access');

      // A reload that does widen access applies, with a warning naming what it opened.
      replaceFile(path, serving(WITHOUT_TOP, 'analysts: [query_order_count, query_sales]'));
      await eventually('the wider file in force', async () => changes === 2, 10_000);
      // The log comes on stderr, the notification on stdout: one may arrive before the other.
      await eventually('the warning logged', async () => stderr.includes('widens access'), 10_000);
      const warning = stderr
        .split('\n')
        .filter((line) => line.includes('widens access'))
        .map((line) => JSON.parse(line) as { level: string; widened: string[] });
      expect(warning).toEqual([
        expect.objectContaining({
          level: 'warn',
          widened: [
            `tools served: ${WITHOUT_TOP.filter((t) => t !== 'query_order_count').join(', ')}`,
            'toolset analysts: query_sales',
          ],
        }),
      ]);
    } finally {
      await client.close();
    }
  });
});

describe('over stdio, a 2026-07-28 client', () => {
  it('is told on its subscriptions/listen stream, which ends when it cancels or the server stops', async () => {
    const path = join(folder, 'stdio-modern.yaml');
    replaceFile(path, serving(ALL));
    const client = new ModernClient(
      { name: 'live-test', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => void changes++);
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_TOKEN_KEY: 'live-test-key',
      QUERYGATE_CONFIG: path,
    };
    const transport = new ModernStdio({ command: process.execPath, args: [CLI, 'serve'], env, stderr: 'pipe' });
    await client.connect(transport);
    try {
      const subscription = await client.listen({ toolsListChanged: true });
      expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
      replaceFile(path, serving(WITHOUT_TOP));
      await eventually('notifications/tools/list_changed', async () => changes > 0, 10_000);
      expect(names(await client.listTools())).toEqual(WITHOUT_TOP);
      expect(changes).toBe(1);
      await subscription.close();
      expect(await subscription.closed).toBe('local');
      // The session goes on after the cancelled subscription.
      expect(names(await client.listTools({}, { cacheMode: 'bypass' }))).toEqual(WITHOUT_TOP);
      // Stopping the server ends a subscription with its answer.
      const last = await client.listen({ toolsListChanged: true });
      process.kill(transport.pid!, 'SIGTERM');
      expect(await last.closed).toBe('graceful');
    } finally {
      await client.close();
    }
  });

  it('piped, answers the other requests and exits when stdin closes, its subscription open', async () => {
    const path = join(folder, 'stdio-pipe.yaml');
    replaceFile(path, serving(ALL));
    const cli = startCli(['serve'], { DATABASE_URL: inject('readerUrl'), QUERYGATE_CONFIG: path });
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {},
    };
    // More subscriptions than the session runs requests at once: none of them holds a place.
    const listens = [1, 2, 3, 4, 5].map((id) => ({
      jsonrpc: '2.0',
      id: `listen-${id}`,
      method: 'subscriptions/listen',
      params: { _meta: meta, notifications: { toolsListChanged: true } },
    }));
    const list = { jsonrpc: '2.0', id: 'list', method: 'tools/list', params: { _meta: meta } };
    let stdout = '';
    cli.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    cli.child.stdin!.end([...listens, list].map((m) => `${JSON.stringify(m)}\n`).join(''));
    expect(await cli.exited, cli.stderr()).toBe(0);
    const messages = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id?: string; method?: string; params?: { _meta?: object } });
    expect(messages.find((m) => m.id === 'list')).toMatchObject({ result: { tools: expect.any(Array) } });
    const acknowledged = messages.filter((m) => m.method === 'notifications/subscriptions/acknowledged');
    expect(acknowledged.map((m) => m.params?._meta)).toEqual(
      listens.map((l) => ({ 'io.modelcontextprotocol/subscriptionId': l.id })),
    );
  });
});

describe('over HTTP', () => {
  const start = (path: string) => {
    const tokens = join(folder, 'tokens.json');
    writeFileSync(
      tokens,
      JSON.stringify({
        tokens: [
          { name: 'everyone', token: 'everyone-token-0123456789' },
          { name: 'analyst', token: ANALYST_TOKEN, toolset: 'analysts' },
        ],
      }),
      { mode: 0o600 },
    );
    return startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_TOKEN_KEY: 'live-test-key',
      QUERYGATE_CONFIG: path,
      QUERYGATE_HTTP_TOKENS_FILE: tokens,
    });
  };
  const bearer = (token: string) => ({ requestInit: { headers: { authorization: `Bearer ${token}` } } });
  const modern = (): ModernClient =>
    new ModernClient({ name: 'live-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });

  it('a 2026-07-28 client that listens is told, over its subscriptions/listen stream, until the server stops', async () => {
    const path = join(folder, 'http.yaml');
    replaceFile(path, serving(ALL));
    const server = start(path);
    const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
    const client = modern();
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => void changes++);
    try {
      await client.connect(new ModernHttp(url, bearer('everyone-token-0123456789')));
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
      expect(names(await client.listTools())).toEqual(ALL);
      const subscription = await client.listen({ toolsListChanged: true, promptsListChanged: true });
      // querygate has no prompts to change: only the tools are honoured.
      expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });

      replaceFile(path, serving(WITHOUT_TOP));
      await eventually('notifications/tools/list_changed', async () => changes === 1, 10_000);
      expect(names(await client.listTools())).toEqual(WITHOUT_TOP);
      await expect(client.callTool({ name: 'query_top_products', arguments: MAY })).rejects.toMatchObject({
        code: -32602,
      });

      replaceFile(path, `${serving(ALL)}time_zone: Mars/Olympus_Mons\n`);
      await server.waitForLog(
        /configuration file refused.*QUERYGATE_CONFIG time_zone: is not an IANA time zone/,
        10_000,
      );
      expect(names(await client.listTools({}, { cacheMode: 'bypass' }))).toEqual(WITHOUT_TOP);
      expect(changes).toBe(1);

      // Stopping ends the subscription with its answer, not by cutting the stream.
      expect(await server.stop()).toBe(0);
      expect(await subscription.closed).toBe('graceful');
    } finally {
      await client.close();
      await server.stop();
    }
  });

  it('follows a toolset a bearer token names through a reload, and tells that caller only of its own changes', async () => {
    const path = join(folder, 'toolsets.yaml');
    replaceFile(path, serving(ALL));
    const server = start(path);
    const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
    const analyst = modern();
    let changes = 0;
    analyst.setNotificationHandler('notifications/tools/list_changed', () => void changes++);
    try {
      await analyst.connect(new ModernHttp(url, bearer(ANALYST_TOKEN)));
      expect(names(await analyst.listTools())).toEqual(['query_order_count']);
      const subscription = await analyst.listen({ toolsListChanged: true });

      // A tool the analyst does not see goes: nothing to tell.
      replaceFile(path, serving(WITHOUT_TOP));
      await server.waitForLog(/configuration file reloaded/, 10_000);
      // Its toolset grows: told.
      replaceFile(path, serving(WITHOUT_TOP, 'analysts: [query_order_count, query_sales]'));
      await eventually('notifications/tools/list_changed', async () => changes > 0, 10_000);
      expect(names(await analyst.listTools())).toEqual(['query_order_count', 'query_sales']);
      expect(changes).toBe(1);
      await subscription.close();
      expect(await subscription.closed).toBe('local');
    } finally {
      await analyst.close();
      expect(await server.stop()).toBe(0);
    }
  });

  it('a 2025-11-25 client is not promised list changes it cannot be sent', async () => {
    const path = join(folder, 'legacy.yaml');
    replaceFile(path, serving(ALL));
    const server = start(path);
    const url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
    const client = new Client({ name: 'live-test', version: '1.0.0' });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(url, bearer('everyone-token-0123456789') as { requestInit: RequestInit }),
      );
      // Stateless HTTP offers no GET stream, so nothing can reach this client between its requests.
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false });
      replaceFile(path, serving(WITHOUT_TOP));
      await server.waitForLog(/configuration file reloaded/, 10_000);
      // It sees the change when it lists again.
      expect(names(await client.listTools())).toEqual(WITHOUT_TOP);
    } finally {
      await client.close();
      expect(await server.stop()).toBe(0);
    }
  });
});
