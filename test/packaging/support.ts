/** Shared by the install checks: commands run to completion, scratch folders, and a served MCP session. */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, type StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { templates } from '../../queries/index.js';
import { reports } from '../../reports/index.js';
import { eventually } from '../support/scratch.js';

export const packageJson = JSON.parse(readFileSync('package.json', 'utf8')) as {
  name: string;
  version: string;
  bin: Record<string, string>;
  engines: { node: string };
};

/** Runs a command to completion and gives its output; rejects with that output when it fails. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: 'pipe' });
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', fail);
    child.once('close', (code) =>
      code === 0
        ? done({ stdout, stderr })
        : fail(new Error(`${command} ${args.join(' ')} exited ${code}\n${stdout}\n${stderr}`)),
    );
  });
}

/**
 * A scratch folder that the postgres system user can enter: PostgreSQL refuses to run as root, so
 * under root the embedded database runs as `postgres`, which must reach both its data and its binaries.
 */
export async function scratchDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

/** Removes a scratch folder, first stopping an embedded PostgreSQL a failed check may have left running in it. */
export async function removeScratch(dir: string | undefined, dataDir?: string): Promise<void> {
  if (!dir) return;
  const pidFile = dataDir && join(dataDir, 'pg', 'postmaster.pid');
  if (pidFile && existsSync(pidFile)) {
    const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGINT'); // PostgreSQL's fast shutdown
    await eventually('the left-over PostgreSQL to stop', async () => !existsSync(pidFile)).catch(() => undefined);
  }
  await rm(dir, { recursive: true, force: true });
}

const today = new Date().toISOString().slice(0, 10);
const monthAgo = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);

/**
 * Launches a server as an MCP client configuration would, through the SDK's stdio client (an
 * `initialize` line, `notifications/initialized`, then requests, each a JSON line on stdin and
 * answered on stdout). Checks that it is this version, offers every tool and answers one from its
 * embedded database in `dataDir`, then closes the session and waits for the database to stop.
 */
export async function expectServes(
  launch: StdioServerParameters,
  dataDir: string,
  expected: { timeZone: string },
): Promise<void> {
  const transport = new StdioClientTransport({ ...launch, stderr: 'pipe' });
  let stderr = '';
  (transport.stderr as Readable).on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const client = new Client({ name: 'querygate-install-check', version: '1.0.0' });
  try {
    await client.connect(transport);
    expect(client.getServerVersion()).toMatchObject({ name: 'querygate', version: packageJson.version });
    const { tools } = await client.listTools();
    // The built-in database keeps jobs too: a report that runs as a job brings its submit tool and the two job tools.
    const jobs = reports.flatMap((r) => (r.job ? [r.job.submitTool] : []));
    const served = [...templates, ...reports].map((t) => t.name);
    const listed = jobs.length > 0 ? [...served, ...jobs, 'get_report_job', 'cancel_report_job'] : served;
    expect(tools.map((t) => t.name).sort()).toEqual(listed.sort());
    const result = (await client.callTool({
      name: 'query_order_count',
      arguments: { start_date: monthAgo, end_date: today },
    })) as CallToolResult;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ time_zone: expected.timeZone });
    expect((result.structuredContent as { order_count: number }).order_count).toBeGreaterThan(0);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nthe server's stderr:\n${stderr}`);
  } finally {
    await client.close();
  }
  // Stdin closed is a client going away: the server stops its database and exits by itself.
  await eventually('the embedded database to stop', async () => !existsSync(join(dataDir, 'pg', 'postmaster.pid')));
}
