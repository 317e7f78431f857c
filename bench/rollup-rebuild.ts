/**
 * The declared rollups' rebuilds at scale (every rollup of the sales pack), as the admin: the whole
 * rebuild (`<name>_rebuild()`) against the rebuild of one month (`<name>_rebuild_range(from, before)`),
 * for each of the last three whole months, on 2,000,000 orders. Each rebuild runs in a transaction that
 * is rolled back, so every round starts from the same rows; the whole and the months alternate in
 * order round by round. The ratio is a month's p50 over the whole rebuild's p50 of the same run. A
 * derived fact (order_categories) has no time key and no range rebuild: its rebuild mends what differs,
 * and on an exact table it reads every item and writes nothing.
 *
 *   npm run bench:rollup-rebuild -- [--orders 2000000] [--rounds 3] [--only category_days,order_categories]
 *
 * With ADMIN_DATABASE_URL set, it times that database's rollups instead of seeding one.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SALES_ROLLUPS } from '../pack/rollups.js';
import { rollupNames } from '../src/db/rollups/index.js';
import { withSeededReader } from './seeded-reader.js';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '2000000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const ONLY = values.only?.split(',');
const ROLLUPS = SALES_ROLLUPS.filter((d) => ONLY === undefined || ONLY.includes(d.name));

const p50 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The first midnight of each of the three whole months before the newest order's. */
async function lastMonths(admin: pg.Client): Promise<{ label: string; from: string; before: string }[]> {
  const { rows } = await admin.query<{ from: string; before: string }>(
    `select to_char(m, 'YYYY-MM-DD') as "from", to_char(m + interval '1 month', 'YYYY-MM-DD') as "before"
       from (select date_trunc('month', max(ordered_at) at time zone 'UTC') as newest from sales.orders) n,
            generate_series(n.newest - interval '3 months', n.newest - interval '1 month', interval '1 month') m
      order by m`,
  );
  return rows.map((r) => ({ label: r.from.slice(0, 7), ...r }));
}

async function timed(admin: pg.Client, statement: string, values: unknown[] = []): Promise<number> {
  await admin.query('begin');
  try {
    const t0 = performance.now();
    await admin.query(statement, values);
    return performance.now() - t0;
  } finally {
    await admin.query('rollback');
  }
}

async function bench(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const months = await lastMonths(admin);
    const lines = [
      '| rollup | whole rebuild p50 | month | month p50 | month / whole |',
      '| --- | --- | --- | --- | --- |',
    ];
    for (const d of ROLLUPS) {
      const names = rollupNames(d);
      const whole: number[] = [];
      const month = new Map<string, number[]>();
      // A derived fact: the whole mend alone.
      const ranges = d.derived === undefined ? months : [];
      for (let round = 0; round < ROUNDS; round++) {
        const runWhole = async (): Promise<void> => void whole.push(await timed(admin, `select ${names.rebuild}()`));
        const runMonths = async (): Promise<void> => {
          for (const m of ranges) {
            const ms = await timed(admin, `select ${names.rebuildRange}($1, $2)`, [m.from, m.before]);
            month.set(m.label, [...(month.get(m.label) ?? []), ms]);
          }
        };
        if (round % 2 === 0) {
          await runWhole();
          await runMonths();
        } else {
          await runMonths();
          await runWhole();
        }
      }
      if (ranges.length === 0) lines.push(`| ${d.name} | ${fmt(p50(whole))} ms | (none) | | |`);
      for (const m of ranges) {
        const a = p50(whole);
        const b = p50(month.get(m.label)!);
        lines.push(`| ${d.name} | ${fmt(a)} ms | ${m.label} | ${fmt(b)} ms | ${fmt(b / a, 2)}x |`);
      }
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await admin.end();
  }
}

const given = process.env.ADMIN_DATABASE_URL;
if (given) await bench(given);
else await withSeededReader(Number(values.orders), (_pool, _until, _reader, adminUrl) => bench(adminUrl));
