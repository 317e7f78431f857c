/**
 * Issue 31: a pack author's mistakes in the metrics layer's declarations are refused at start-up,
 * each in one line that names the declaration, the field and the fix, and nothing is served. Each
 * mistake is the shipped sales pack with one declaration changed, as an author would ship it, loaded
 * by the built CLI through QUERYGATE_PACKS: `serve` exits 2 with that line alone, and `doctor` says it too.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../support/cli.js';

interface Mistake {
  readonly name: string;
  /** A JavaScript expression of the sales model (`model`) with the mistake in it. */
  readonly model?: string;
  /** The pack's other declarations with the mistake in them, spread into it (an expression of `sales`). */
  readonly pack?: string;
  /** The whole line serve prints after `querygate: ` (after the pack's name where the pack cannot load). */
  readonly message: string;
  /** Refused when the pack loads (the model alone is wrong), else when serve first asks the database. */
  readonly when: 'load' | 'database';
}

/** The sales model with its base source `orders` reading other rows. */
const ordersReading = (rows: string): string =>
  `({ ...model, sources: model.sources.map((s) => (s.name === 'orders' ? { ...s, rows: ${rows} } : s)) })`;

const MISTAKES: readonly Mistake[] = [
  {
    name: "a metric's description left as 'TBD'",
    model: `({ ...model, metrics: model.metrics.map((m) => (m.name === 'refund_rate' ? { ...m, description: 'TBD' } : m)) })`,
    message:
      'metrics of query_metrics: metric refund_rate: description "TBD" is a placeholder; write what the figure counts or sums, and over which rows',
    when: 'load',
  },
  {
    name: "an attribute's description left as a note to self",
    model: `({ ...model, attributes: model.attributes.map((a) => (a.name === 'region' ? { ...a, description: 'TODO: ask sales' } : a)) })`,
    message:
      'metrics of query_metrics: attribute region: description "TODO: ask sales" is a placeholder; write what its values are',
    when: 'load',
  },
  {
    name: 'a distinct count of customers not declared as counting people',
    model: `({ ...model, metrics: model.metrics.map((m) => (m.name === 'customers' ? { ...m, people: undefined } : m)) })`,
    message:
      "metrics of query_metrics: metric customers counts distinct reporting.orders.customer_id on source orders, a person's column, so it counts people: declare people: true (and protected: true where a small group must not be told apart)",
    when: 'load',
  },
  {
    // The billing trial's: grouped by hour of day, every invoice fell at hour 0.
    name: 'a time column that is a date',
    model: ordersReading(
      `(db) => db.selectFrom(db.selectFrom('reporting.orders').select((eb) => ['id', 'customer_id', 'status', 'currency', 'total_amount', eb.cast(eb.ref('ordered_at'), 'date').as('ordered_at')]).as('o'))`,
    ),
    message:
      "metrics of query_metrics: source orders: its time o.ordered_at is a date, not a timestamp with time zone; expose it as a timestamptz in the view the reader reads (a timestamp held in UTC: <column> at time zone 'UTC'); a date has no hour to group by",
    when: 'database',
  },
  {
    // The billing trial's: served, and every call failed with query_failed.
    name: 'a source the reader cannot read',
    model: ordersReading(`(db) => db.selectFrom('sales.orders as o')`),
    message:
      'metrics of query_metrics: source orders: the reader cannot read its rows (permission denied for schema sales); grant the reader SELECT on what the source reads, in a migration of the pack, or read it through a view the reader may read',
    when: 'database',
  },
  {
    // The billing trial's: served from the old table, and check-rollups crashed with a stack trace.
    name: 'a rollup declaration edited with no new migration',
    pack: `({ rollups: sales.rollups.map((r, i) => (i === 0 ? { ...r, measures: r.measures.map((m) => (m.name === 'revenue' ? { ...m, name: 'net_revenue' } : m)) } : r)) })`,
    message:
      'rollup reporting.region_product_days: the reader cannot read its rows (column "net_revenue" does not exist); a changed rollup declaration needs a new migration of the pack that drops the rollup and makes it again (rollupMigration); then run querygate migrate',
    when: 'database',
  },
];

describe('issue 31: a declaration mistake is refused at start-up, in one line with its fix', () => {
  let folder: string;
  const moduleOf = (i: number): string => join(folder, `mistake-${i}.mjs`);

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'querygate-mistakes-'));
    const dist = (path: string): string => JSON.stringify(resolve('dist', path));
    for (const [i, mistake] of MISTAKES.entries()) {
      await writeFile(
        moduleOf(i),
        [
          `import { definePack } from ${dist('src/pack.js')};`,
          `import sales from ${dist('pack/index.js')};`,
          `import { salesMetrics as model } from ${dist('pack/metrics.js')};`,
          `import { metricsTemplate } from ${dist('src/metrics/tool.js')};`,
          `const mistaken = metricsTemplate(${mistake.model ?? 'model'}, sales.personalColumns, sales.dataScope);`,
          "const templates = sales.templates.map((t) => (t.name === 'query_metrics' ? mistaken : t));",
          `export default definePack({ ...sales, name: 'mistaken_sales', templates, ...${mistake.pack ?? '{}'} });`,
        ].join('\n'),
      );
    }
  });

  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it.each(MISTAKES.map((m, i) => [m.name, i] as const))(
    '%s',
    async (_name, i) => {
      const mistake = MISTAKES[i]!;
      const env = { DATABASE_URL: inject('readerUrl'), QUERYGATE_PACKS: moduleOf(i) };
      const serve = await runCli(['serve'], { ...env, QUERYGATE_TOKEN_KEY: 'k'.repeat(20) });
      expect(serve.code).toBe(2);
      expect(serve.stdout).toBe('');
      const where = mistake.when === 'load' ? `pack "${moduleOf(i)}": cannot load ${moduleOf(i)}: ` : '';
      expect(serve.stderr.trim().split('\n')).toEqual([`querygate: ${where}${mistake.message}`]);
      // doctor says it too: in one line where the pack cannot load, else as a failed check and its fix.
      const doctor = await runCli(['doctor'], env);
      expect(doctor.code).not.toBe(0);
      const said = `${doctor.stdout}${doctor.stderr}`;
      if (mistake.when === 'load') expect(said).toContain(mistake.message);
      else {
        const cut = mistake.message.indexOf('; ');
        expect(said).toContain(`FAIL  every declared source is readable by the reader, its time a timestamptz`);
        expect(said).toContain(`(${mistake.message.slice(0, cut)})`);
        expect(said).toContain(`fix: ${mistake.message.slice(cut + 2)}`);
      }
      if (mistake.pack?.includes('rollups')) {
        // check-rollups answers it in one line too, with the same fix, and no stack trace.
        const check = await runCli(['check-rollups'], {
          ADMIN_DATABASE_URL: inject('adminUrl'),
          QUERYGATE_PACKS: moduleOf(i),
          QUERYGATE_LOG_LEVEL: 'error',
        });
        expect(check.code).toBe(1);
        expect(check.stderr).toBe('');
        expect(check.stdout).toContain(
          'FAIL  sales.region_product_days: its declaration does not match its table (column "net_revenue" does not exist); fix: a changed rollup declaration needs a new migration',
        );
      }
    },
    60_000,
  );
});
