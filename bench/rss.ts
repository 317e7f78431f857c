/**
 * Peak RSS of `querygate serve` over stdio as an MCP client launches it: `node cli.js`, no flag.
 * Each launch connects through the SDK client, lists the tools, runs every workload `--calls` times,
 * and reads the server's VmHWM from /proc before closing. Builds given with --cli (default: this
 * one) are launched in turn, alternating their order each round, on one seeded embedded database.
 * Usage: npm run build && node dist/bench/rss.js [--orders 200000] [--calls 200] [--rounds 3] [--cli A --cli B]
 *        [--reader-url URL]
 */
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { startEmbedded } from '../src/db/embedded.js';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { createLogger } from '../src/lib/logger.js';
import { CLI, cpuMs, memoryMb } from './measure.js';

const UNTIL = '2026-06-30';
const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '200000' },
    calls: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    cli: { type: 'string', multiple: true },
    /** A seeded sales database's reader URL, instead of a new embedded one. */
    'reader-url': { type: 'string' },
  },
});
const clis = (values.cli ?? [CLI]).map((path) => resolve(path));
const logger = createLogger('warn');
const daysBefore = (n: number): string =>
  new Date(Date.parse(`${UNTIL}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);
const CALLS: { name: string; arguments: Record<string, unknown> }[] = [
  { name: 'query_order_count', arguments: { start_date: daysBefore(6), end_date: UNTIL } },
  { name: 'query_sales', arguments: { start_date: daysBefore(89), end_date: UNTIL, group_by: 'day' } },
  { name: 'query_top_products', arguments: { start_date: daysBefore(89), end_date: UNTIL } },
  { name: 'query_recent_orders', arguments: { start_date: daysBefore(89), end_date: UNTIL, limit: 100 } },
];

/**
 * One launch: the server's peak RSS in MB after tools/list and `calls` rounds of every call, and
 * the server's CPU ms per call over those calls (start-up excluded).
 */
async function launch(cli: string, env: Record<string, string>, calls: number): Promise<{ mb: number; cpu: number }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'serve'],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'rss', version: '1.0.0' });
  await client.connect(transport);
  try {
    await client.listTools();
    const cpuBefore = await cpuMs(transport.pid!);
    for (let i = 0; i < calls; i++) {
      for (const call of CALLS) {
        const answer = await client.callTool(call);
        if (answer.isError) throw new Error(`${call.name}: ${JSON.stringify(answer.content)}`);
      }
    }
    const cpu = ((await cpuMs(transport.pid!)) - cpuBefore) / (calls * CALLS.length);
    return { mb: await memoryMb(transport.pid!, 'VmHWM'), cpu };
  } finally {
    await client.close();
  }
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'querygate-rss-'));
  await chmod(dataDir, 0o755);
  const database =
    values['reader-url'] === undefined
      ? await startEmbedded({ dataDir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger)
      : undefined;
  try {
    if (database) {
      await seedDatabase(database.adminUrl, { orders: Number(values.orders), until: UNTIL, replace: false }, logger);
    }
    const env = {
      DATABASE_URL: database?.readerUrl ?? values['reader-url']!,
      QUERYGATE_RATE_LIMIT: '100000000',
      QUERYGATE_AUDIT_LOG: join(dataDir, 'audit.log'),
    };
    const peaks = new Map<string, number[]>(clis.map((cli) => [cli, []]));
    const cpus = new Map<string, number[]>(clis.map((cli) => [cli, []]));
    for (let round = 0; round < Number(values.rounds); round++) {
      const order = round % 2 === 0 ? clis : [...clis].reverse();
      for (const cli of order) {
        const { mb, cpu } = await launch(cli, env, Number(values.calls));
        peaks.get(cli)!.push(mb);
        cpus.get(cli)!.push(cpu);
        process.stderr.write(`round ${round + 1} ${cli}: ${mb.toFixed(1)} MB, ${cpu.toFixed(2)} CPU ms/call\n`);
      }
    }
    for (const [cli, mbs] of peaks) {
      const cpu = cpus.get(cli)!;
      process.stdout.write(
        `${cli}: peak RSS ${mbs.map((m) => m.toFixed(1)).join(', ')} MB; server CPU ${cpu.map((c) => c.toFixed(2)).join(', ')} ms/call\n`,
      );
    }
  } finally {
    await database?.stop();
  }
}

await main();
