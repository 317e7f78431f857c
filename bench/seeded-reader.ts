/**
 * An embedded cluster seeded with the demo orders up to yesterday, and a pool of one reader
 * connection without a statement timeout (on a loaded machine a call may take longer than the
 * server's 5 s, and a bench's figure is a ratio of the same run), for benches that time statements.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { salesPack } from '../pack/index.js';
import { seedDatabase } from '../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { startEmbedded } from '../src/db/embedded.js';
import { yesterdayUtc } from '../src/lib/date-range.js';
import { createLogger } from '../src/lib/logger.js';

/** Runs `use` with the pool and the seed's last day, then stops the cluster and removes its folder. */
export async function withSeededReader(
  orders: number,
  use: (pool: pg.Pool, until: string, readerUrl: string, adminUrl: string) => Promise<void>,
): Promise<void> {
  const logger = createLogger('warn');
  const dir = await mkdtemp(join(tmpdir(), 'querygate-bench-'));
  await chmod(dir, 0o755);
  const database = await startEmbedded({ dataDir: dir, readerRole: DEFAULT_READER_ROLE, packs: [salesPack] }, logger);
  const pool = new pg.Pool({ connectionString: database.readerUrl, max: 1, options: '-c statement_timeout=0' });
  // A connection the server ends while idle must not end the run before the table is written.
  pool.on('error', (err) => process.stderr.write(`idle connection ended: ${err.message}\n`));
  try {
    const started = performance.now();
    const until = yesterdayUtc();
    await seedDatabase(database.adminUrl, { orders, until, replace: false }, logger);
    process.stderr.write(`seeded ${orders} orders in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    await use(pool, until, database.readerUrl, database.adminUrl);
  } finally {
    await pool.end();
    await database.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The arguments of a bench that times statements: `--orders` (2,000,000), `--calls` a round (5), `--rounds` (4). */
export function timingArguments(): { orders: number; calls: number; rounds: number } {
  const { values } = parseArgs({
    options: {
      orders: { type: 'string', default: '2000000' },
      calls: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '4' },
    },
  });
  return { orders: Number(values.orders), calls: Number(values.calls), rounds: Number(values.rounds) };
}
