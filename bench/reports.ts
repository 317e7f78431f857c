/**
 * The reports at two sizes: the weekly sales report and a 12-week trend on 200,000 and on 2,000,000
 * orders, each table in a cluster of its own, called through the built CLI over stdio (a real MCP
 * client), interleaved in rounds. The 200,000-order p50 is the baseline; the figure that matters is
 * the 2,000,000-order p50 as a ratio to it, which stays near 1 when every query behind a report reads
 * a rollup (whose size follows days, not orders).
 *
 *   npm run bench:reports -- [--small 200000] [--large 2000000] [--calls 15] [--rounds 4]
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pg from 'pg';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { startEmbedded, type EmbeddedDatabase } from '../src/db/embedded.js';
import { yesterdayUtc } from '../src/lib/date-range.js';
import { createLogger } from '../src/lib/logger.js';
import { connectCli } from './measure.js';

const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '200000' },
    large: { type: 'string', default: '2000000' },
    calls: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '4' },
  },
});
const SIZES = [Number(values.small), Number(values.large)];
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);
const logger = createLogger('warn');

interface Served {
  readonly orders: number;
  readonly database: EmbeddedDatabase;
  readonly client: Client;
  readonly dir: string;
}

const REPORTS = [
  { label: 'weekly_sales_report, last week', name: 'weekly_sales_report', arguments: { week: 'last_week' } },
  { label: 'sales_trend_report, 12 weeks', name: 'sales_trend_report', arguments: { weeks: 12 } },
];

async function serve(orders: number): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), 'querygate-bench-reports-'));
  await chmod(dir, 0o755);
  const database = await startEmbedded({ dataDir: dir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger);
  const started = performance.now();
  // Orders up to yesterday, so that last week is whole and full of them.
  await seedDatabase(database.adminUrl, { orders, until: yesterdayUtc(), replace: false }, logger);
  process.stderr.write(`seeded ${orders} orders in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  const admin = new pg.Client({ connectionString: database.adminUrl });
  await admin.connect();
  await admin.query('checkpoint');
  await admin.end();
  const client = await connectCli('bench-reports', {
    DATABASE_URL: database.readerUrl,
    QUERYGATE_RATE_LIMIT: '100000000',
    QUERYGATE_STATEMENT_TIMEOUT_MS: '120000',
  });
  return { orders, database, client, dir };
}

const p50 = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
};
const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main(): Promise<void> {
  const served: Served[] = [];
  for (const orders of SIZES) served.push(await serve(orders));
  try {
    const latencies = new Map<string, number[]>();
    const call = async (s: Served, report: (typeof REPORTS)[number]): Promise<void> => {
      const started = performance.now();
      const result = await s.client.callTool({ name: report.name, arguments: report.arguments });
      const ms = performance.now() - started;
      if (result.isError) throw new Error(`${report.name} failed on ${s.orders} orders: ${JSON.stringify(result)}`);
      const key = `${report.label}|${s.orders}`;
      latencies.set(key, [...(latencies.get(key) ?? []), ms]);
    };
    // A warm-up call of each, then rounds that alternate which size goes first.
    for (const s of served) for (const report of REPORTS) await call(s, report);
    latencies.clear();
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? served : [...served].reverse();
      for (const report of REPORTS) {
        for (const s of order) for (let k = 0; k < CALLS; k++) await call(s, report);
      }
    }
    const lines = [
      `| report | ${SIZES.map((n) => `p50 at ${fmt(n)} orders`).join(' | ')} | ratio | calls each |`,
      `| --- | ${SIZES.map(() => '---').join(' | ')} | --- | --- |`,
    ];
    for (const report of REPORTS) {
      const [small, large] = SIZES.map((n) => p50(latencies.get(`${report.label}|${n}`)!));
      lines.push(
        `| ${report.label} | ${fmt(small!, 1)} ms | ${fmt(large!, 1)} ms | ${fmt(large! / small!, 2)}x | ${CALLS * ROUNDS} |`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const s of served) {
      await s.client.close();
      await s.database.stop();
      await rm(s.dir, { recursive: true, force: true });
    }
  }
}

await main();
