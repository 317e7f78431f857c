/**
 * Every stdio process is a caller of its own: two processes of `serve` over stdio against the same
 * database (and job store) share no jobs and no rate limit, unless the operator names them one
 * caller with QUERYGATE_STDIO_CALLER. The engine's own caller ids cannot be token names.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli as startCliProcess, type RunningCli } from '../support/cli.js';
import { eventually } from '../support/scratch.js';

const TREND = { weeks: 12, through_week: '2025-W24' } as const;
const RATE = 2;
const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' } as const;

interface Served {
  readonly client: Client;
  readonly stderr: () => string;
}

const opened: Client[] = [];
const started: RunningCli[] = [];
afterAll(async () => {
  for (const client of opened) await client.close();
  // A process that should have refused to start, and did not, is stopped here.
  for (const cli of started) await cli.stop();
});

const startCli = (args: string[], env: Record<string, string>): RunningCli => {
  const cli = startCliProcess(args, env);
  started.push(cli);
  return cli;
};

/** One `serve` process over stdio, on the shared test database and job store, as an MCP client launches it. */
async function serveStdio(env: Record<string, string> = {}): Promise<Served> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI],
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_JOBS_URL: inject('jobsUrl'),
      QUERYGATE_TOKEN_KEY: 'stdio-callers-key',
      QUERYGATE_RATE_LIMIT: String(RATE),
      ...env,
    },
    stderr: 'pipe',
  });
  let stderr = '';
  (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'stdio-callers-test', version: '1.0.0' });
  await client.connect(transport);
  opened.push(client);
  return { client, stderr: () => stderr };
}

const call = async (served: Served, name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
  (await served.client.callTool({ name, arguments: args })) as CallToolResult;
const text = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const jobIdOf = (result: CallToolResult): string => (result.structuredContent as { job_id: string }).job_id;

const auditCallers = (stderr: string): unknown[] =>
  stderr
    .split('\n')
    .filter((line) => line.includes('"type":"audit"'))
    .map((line) => (JSON.parse(line) as { caller: unknown }).caller);

describe('two stdio processes against the same database', () => {
  it("19.4.2 are two callers: neither reads the other's job by id, and each has its own rate limit", async () => {
    const [a, b] = await Promise.all([serveStdio(), serveStdio()]);
    const submitted = await call(a, 'submit_trend_report', TREND);
    expect(submitted.isError, text(submitted)).toBeFalsy();
    const jobId = jobIdOf(submitted);

    expect((await call(a, 'get_report_job', { job_id: jobId })).isError).toBeFalsy();
    const theirs = await call(b, 'get_report_job', { job_id: jobId });
    expect(theirs.isError).toBe(true);
    expect(text(theirs)).toContain('job_id: names no job of yours');
    expect((await call(b, 'cancel_report_job', { job_id: jobId })).isError).toBe(true);

    // A spends its whole burst (its job's run takes a token too), until it is refused...
    const refused = await eventually('process a to meet its rate limit', async () => {
      const result = await call(a, 'query_order_count', RANGE);
      return text(result).includes('code: rate_limited') ? result : undefined;
    });
    expect(refused.isError).toBe(true);
    // ... and B, a caller of its own, still has its burst.
    const other = await call(b, 'query_order_count', RANGE);
    expect(other.isError, text(other)).toBeFalsy();

    const [callerA] = auditCallers(a.stderr());
    const [callerB] = auditCallers(b.stderr());
    expect(callerA).toMatch(/^stdio:[\w-]+$/);
    expect(callerB).toMatch(/^stdio:[\w-]+$/);
    expect(callerA).not.toBe(callerB);
  });

  it('19.4.2 are one caller when the operator names them so with QUERYGATE_STDIO_CALLER', async () => {
    const name = `analyst-${process.pid}`;
    const [a, b] = await Promise.all([
      serveStdio({ QUERYGATE_STDIO_CALLER: name }),
      serveStdio({ QUERYGATE_STDIO_CALLER: name }),
    ]);
    const jobId = jobIdOf(await call(a, 'submit_trend_report', TREND));
    const polled = await call(b, 'get_report_job', { job_id: jobId });
    expect(polled.isError, text(polled)).toBeFalsy();
    expect((polled.structuredContent as { job_id: string }).job_id).toBe(jobId);
    expect(auditCallers(b.stderr())).toContain(`stdio:${name}`);
  });
});

describe('the engine’s own caller ids', () => {
  const folder = mkdtempSync(join(tmpdir(), 'querygate-callers-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it.each(['stdio', 'http', 'cli', 'STDIO'])(
    '19.4.2 cannot be token names: a token named %s is refused at start-up in one line naming it and the rule',
    async (name) => {
      const file = join(folder, `${name}.json`);
      writeFileSync(file, JSON.stringify({ tokens: [{ name, token: 'a-token-of-0123456789' }] }));
      chmodSync(file, 0o600);
      const cli = startCli(['serve', '--http', '--port', '0'], {
        DATABASE_URL: inject('readerUrl'),
        QUERYGATE_TOKEN_KEY: 'stdio-callers-key',
        QUERYGATE_HTTP_TOKENS_FILE: file,
      });
      expect(await cli.exited).not.toBe(0);
      const lines = cli
        .stderr()
        .split('\n')
        .filter((line) => line.includes('reserved'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`tokens[0].name: "${name}" is reserved for the server's own callers`);
      expect(cli.stderr()).not.toMatch(/\n\s+at /);
    },
  );

  it('19.4.2 QUERYGATE_STDIO_CALLER must be a caller name', async () => {
    const cli = startCli([], { DATABASE_URL: inject('readerUrl'), QUERYGATE_STDIO_CALLER: 'oauth:someone' });
    expect(await cli.exited).not.toBe(0);
    expect(cli.stderr()).toContain('QUERYGATE_STDIO_CALLER: "oauth:someone" is not a caller name');
  });
});
