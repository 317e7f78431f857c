/**
 * Protected counts at scale: distinct customers by product and by category over 90 days, on 2,000,000
 * orders, with `customers` as the sales pack declares it (exact) and declared protected (the cell-key
 * rule, src/lib/protected-counts.ts), here only. Each call is the statement query_metrics compiles for
 * it, run as the reader through a pg pool; the two variants interleaved in rounds. The ratio is the
 * protected p50 over the exact p50 of the same run (target: at most 3x).
 *
 *   npm run bench:protected -- [--orders 2000000] [--calls 5] [--rounds 4]
 */
import { salesMetrics } from '../pack/metrics.js';
import { PERSONAL_COLUMNS } from '../pack/schema.js';
import { createCompiler } from '../src/db/connect.js';
import { metricsTemplate } from '../src/metrics/tool.js';
import { builderContext, type AnyTemplate } from '../src/registry/types.js';
import { timingArguments, withSeededReader } from './seeded-reader.js';

const { orders: ORDERS, calls: CALLS, rounds: ROUNDS } = timingArguments();

const exact = metricsTemplate(salesMetrics, PERSONAL_COLUMNS) as unknown as AnyTemplate;
const guarded = metricsTemplate(
  {
    ...salesMetrics,
    metrics: salesMetrics.metrics.map((m) => (m.name === 'customers' ? { ...m, protected: true } : m)),
  },
  PERSONAL_COLUMNS,
) as unknown as AnyTemplate;
const VARIANTS = [
  { label: 'exact', template: exact },
  { label: 'protected', template: guarded },
];

const p50 = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** The table of p50s so far, one row a workload. */
function table(workloads: readonly { label: string }[], latencies: ReadonlyMap<string, number[]>): string[] {
  const lines = ['| workload | exact p50 | protected p50 | ratio | calls each |', '| --- | --- | --- | --- | --- |'];
  for (const w of workloads) {
    const [a, b] = VARIANTS.map((v) => p50(latencies.get(`${w.label}|${v.label}`) ?? [NaN]));
    const calls = latencies.get(`${w.label}|exact`)?.length ?? 0;
    lines.push(`| ${w.label} | ${fmt(a!, 1)} ms | ${fmt(b!, 1)} ms | ${fmt(b! / a!, 2)}x | ${calls} |`);
  }
  return lines;
}

async function main(): Promise<void> {
  await withSeededReader(ORDERS, async (pool, until) => {
    const start = new Date(Date.parse(`${until}T00:00:00Z`) - 89 * 86_400_000).toISOString().slice(0, 10);
    const workloads = ['product', 'category'].map((d) => ({
      label: `customers by ${d}, 90 days`,
      args: { metrics: ['customers'], group_by: [d], start_date: start, end_date: until, limit: 100 },
    }));
    const latencies = new Map<string, number[]>();
    const run = async (label: string, template: AnyTemplate, args: Record<string, unknown>): Promise<void> => {
      const ctx = builderContext(template, { timeZone: 'UTC' }, 5, 'bench-seed');
      const { sql, parameters } = template.query(createCompiler(), args, ctx).limit(101).compile();
      const t0 = performance.now();
      await pool.query(sql, parameters as unknown[]);
      latencies.set(label, [...(latencies.get(label) ?? []), performance.now() - t0]);
    };
    for (const w of workloads) for (const v of VARIANTS) await run('warm-up', v.template, w.args);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
      for (const w of workloads) {
        for (const v of order) for (let k = 0; k < CALLS; k++) await run(`${w.label}|${v.label}`, v.template, w.args);
      }
      process.stderr.write(`after round ${round + 1}:\n${table(workloads, latencies).join('\n')}\n`);
    }
    process.stdout.write(`${table(workloads, latencies).join('\n')}\n`);
  });
}

await main();
