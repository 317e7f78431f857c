/**
 * npm run inspector: the MCP Inspector's CLI (v2), a client querygate did not write, lists the tools
 * and calls query_order_count over Streamable HTTP and over stdio, in both of its protocol eras:
 * `legacy` (the 2025-11-25 initialize handshake) and `modern` (2026-07-28, stateless). Each call must
 * list every registered tool and return a result, not an error, whose structured fields add up.
 *
 * Over stdio the Inspector launches querygate itself on the database the HTTP server seeded, once
 * that server has stopped: only one querygate at a time may use a data folder.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CLI,
  TOOLS,
  buildIfNeeded,
  installTool,
  makeWorkDir,
  node22,
  serverEnv,
  startHttpServer,
  step,
} from './mcp-harness.mjs';

const ERAS = ['legacy', 'modern'];

let node, inspector, work, toolNames;
const ready = await step('install the Inspector, build querygate', async () => {
  node = await node22();
  inspector = join(
    await installTool(TOOLS.inspector),
    'node_modules',
    TOOLS.inspector.name,
    'clients/launcher/build/index.js',
  );
  await buildIfNeeded();
  const { templates } = await import('../dist/queries/index.js');
  toolNames = templates.map((t) => t.name);
  work = await makeWorkDir('querygate-inspector-');
  // The Inspector keeps a catalog and settings under ~/.mcp-inspector: a home of its own keeps them out of the user's.
  await mkdir(join(work, 'home'));
});

// Seven full days that the demo data covers: it ends yesterday (UTC) and spans two years.
const day = (daysAgo) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
const range = { start_date: day(7), end_date: day(1) };

let passed = ready;
const counts = [];
if (ready) {
  const dataDir = join(work, 'data');
  let server;
  passed =
    (await step('start querygate over HTTP', async () => {
      server = await startHttpServer(dataDir, join(work, 'server.log'));
    })) && passed;
  if (server) {
    try {
      for (const era of ERAS) passed = (await check(`HTTP, ${era} era`, [server.url], era)) && passed;
    } finally {
      await server.stop();
    }
    const stdio = ['-e', `QUERYGATE_DATA_DIR=${dataDir}`, process.execPath, CLI, 'serve'];
    for (const era of ERAS) passed = (await check(`stdio, ${era} era`, stdio, era)) && passed;
    passed =
      (await step('the same order count everywhere', async () => {
        if (new Set(counts).size > 1) throw new Error(`order counts differ: ${counts.join(', ')}`);
      })) && passed;
  }
}
if (!passed && work) {
  console.log('\n== querygate stderr (HTTP server)');
  console.log(await readFile(join(work, 'server.log'), 'utf8').catch(() => '(no log)'));
}
if (work) await rm(work, { recursive: true, force: true });
process.exit(passed ? 0 : 1);

/** tools/list and one tools/call through the Inspector CLI on one target in one protocol era. */
function check(label, target, era) {
  return step(`Inspector CLI, ${label}`, async () => {
    const common = [...target, '--protocol-era', era];
    const listed = await inspect([...common, '--method', 'tools/list']);
    const names = listed.result?.tools?.map((t) => t.name) ?? [];
    const missing = toolNames.filter((name) => !names.includes(name));
    if (missing.length > 0) throw new Error(`tools/list lacks ${missing.join(', ')}: ${JSON.stringify(listed)}`);
    console.log(`tools/list: ${names.join(', ')}`);

    const call = [
      '--method',
      'tools/call',
      '--tool-name',
      'query_order_count',
      '--tool-args-json',
      JSON.stringify(range),
    ];
    const { result } = await inspect([...common, ...call]);
    const out = result?.structuredContent;
    const byStatus = Object.values(out?.by_status ?? {}).reduce((sum, n) => sum + n, 0);
    if (
      result?.isError ||
      out?.start_date !== range.start_date ||
      out?.end_date !== range.end_date ||
      !Number.isInteger(out?.order_count) ||
      out.order_count <= 0 ||
      byStatus !== out.order_count
    ) {
      throw new Error(`unexpected query_order_count result: ${JSON.stringify(result)}`);
    }
    counts.push(out.order_count);
    console.log(`tools/call query_order_count ${range.start_date}..${range.end_date}: ${out.order_count} orders`);
  });
}

/** Runs the Inspector CLI with JSON output; resolves to what it printed, or throws with its stderr. */
async function inspect(args) {
  const child = spawn(node, [inspector, '--cli', ...args, '--format', 'json'], {
    env: { ...serverEnv(join(work, 'data')), HOME: join(work, 'home') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const outcome = await new Promise((done) => child.once('exit', (code, signal) => done(signal ?? code)));
  clearTimeout(timer);
  if (outcome !== 0) throw new Error(`inspector ${args.join(' ')} exited ${outcome}\n${stdout}${stderr}`);
  return JSON.parse(stdout);
}
