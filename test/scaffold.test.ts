/**
 * `querygate new-query` and `querygate new-metric`: the scaffold, written into a temporary copy of the sales pack's layout, type-checks
 * and is prettier-clean as written; the registry refuses it with a "not filled in" message until its query
 * is written; filled in (as a test would), it type-checks, registers and answers through a real client.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import prettier from 'prettier';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_SCOPE, PERSONAL_COLUMNS } from '../pack/schema.js';
import type { MetricDeclaration, MetricsModel } from '../src/metrics/declarations.js';
import { metricsTemplate } from '../src/metrics/tool.js';
import { createRegistry, type AnyTemplate } from '../src/registry/index.js';
import { scaffoldMetric, type MetricScaffolded } from '../src/scaffold/metric.js';
import { scaffoldQuery, type Scaffolded } from '../src/scaffold/query.js';
import { CLI } from './support/cli.js';
import { connectAdmin, startHarness, structured } from './support/harness.js';

const ROOT = resolve(import.meta.dirname, '..');
let copy: string;
let scaffolded: Scaffolded;
let filledFile: string;

/** The generated template with its TODOs filled in over the sales pack's views. */
function fillIn(source: string): string {
  const filled = source
    .replaceAll('query_widget_count', 'query_status_count')
    .replaceAll('queryWidgetCount', 'queryStatusCount')
    .replace(
      "import { ConfigError } from '../src/lib/errors.js';\n",
      "import { startOfDay } from '../src/db/range-sql.js';\n",
    )
    .replace(
      '{ checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields }',
      '{ checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange }',
    )
    .replace('  todo: z.number(),', '  status: z.string(),\n  order_count: z.number(),')
    .replace(
      "    todo: { type: 'integer', source: 'computed', treatment: 'plain' },",
      "    status: { type: 'text', source: 'reporting.orders.status', treatment: 'plain' },\n" +
        "    order_count: { type: 'integer', source: 'computed', treatment: 'plain' },",
    )
    .replace(
      / {2}query: \(\) => \{\n[^]*?\n {2}\},\n/,
      `  query: (db, args, ctx) =>
    db
      .selectFrom('reporting.orders as o')
      .where('o.ordered_at', '>=', startOfDay(resolveRange(args).startDate, ctx.timeZone))
      .where('o.ordered_at', '<', startOfDay(resolveRange(args).endExclusive, ctx.timeZone))
      .select((eb) => ['o.status', eb.fn.countAll().as('order_count')])
      .groupBy('o.status')
      .orderBy('o.status'),
`,
    );
  expect(filled).not.toContain('ConfigError');
  expect(filled).toContain("source: 'reporting.orders.status'");
  return filled;
}

/** Type-checks files with the repository's settings (tsc), and holds the scaffolded ones to prettier. */
async function expectCleanSources(config: string, files: string[], scaffolds: string[]): Promise<void> {
  // global-setup.ts declares what the harness injects (the database URLs).
  writeFileSync(
    join(copy, config),
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: { noEmit: true, rootDir: '/' },
      files: [...files, join(copy, 'test/support/global-setup.ts')],
      include: [],
    }),
  );
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(copy, config)], {
    encoding: 'utf8',
  });
  expect(tsc.stdout + tsc.stderr).toBe('');
  expect(tsc.status).toBe(0);
  const options = await prettier.resolveConfig(join(ROOT, 'package.json'));
  for (const file of scaffolds) {
    expect(await prettier.check(readFileSync(file, 'utf8'), { ...options, filepath: file }), file).toBe(true);
  }
}

beforeAll(() => {
  // The sales pack's layout: pack/ and queries/ beside querygate's src/ and test/support/.
  copy = mkdtempSync(join(tmpdir(), 'querygate-scaffold-'));
  cpSync(join(ROOT, 'pack'), join(copy, 'pack'), { recursive: true });
  cpSync(join(ROOT, 'queries'), join(copy, 'queries'), { recursive: true });
  cpSync(join(ROOT, 'reports'), join(copy, 'reports'), { recursive: true });
  for (const linked of ['src', 'migrations', 'examples', 'node_modules'])
    symlinkSync(join(ROOT, linked), join(copy, linked));
  writeFileSync(join(copy, 'package.json'), JSON.stringify({ type: 'module' })); // TypeScript reads it as ESM
  mkdirSync(join(copy, 'test'));
  symlinkSync(join(ROOT, 'test', 'support'), join(copy, 'test', 'support'));
  scaffolded = scaffoldQuery({ name: 'query_widget_count', packDir: copy, engineRoot: copy });
  filledFile = join(copy, 'queries', 'query-status-count.ts');
  writeFileSync(filledFile, fillIn(readFileSync(scaffolded.templateFile, 'utf8')));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('new-query', () => {
  it('new-query: writes the template into the pack and its test into test/, and says what to do next', () => {
    expect(scaffolded.templateFile).toBe(join(copy, 'queries', 'query-widget-count.ts'));
    expect(scaffolded.testFile).toBe(join(copy, 'test', 'query-widget-count.test.ts'));
    expect(scaffolded.exportName).toBe('queryWidgetCount');
    const template = readFileSync(scaffolded.templateFile, 'utf8');
    expect(template).toContain("import { defineTemplate } from '../pack/kit.js';");
    for (const todo of ['business question', 'Example input:', 'SQL', 'treatment', 'shared argument types']) {
      expect(template).toContain(todo);
    }
    expect(scaffolded.report).toMatch(/Add it to the list in .*queries\/index\.ts/);
    expect(scaffolded.report).toContain("import { queryWidgetCount } from './query-widget-count.js';");
    expect(scaffolded.report).toContain('npx vitest run test/contract.test.ts');
  });

  it('new-query: the scaffold as written and filled in type-check (tsc), and are prettier-clean', async () => {
    const scaffolds = [scaffolded.templateFile, scaffolded.testFile];
    await expectCleanSources('tsconfig.json', [...scaffolds, filledFile], scaffolds);
  }, 120_000);

  it('new-query: the registry refuses the scaffold until its query is written, saying so', async () => {
    const { queryWidgetCount } = (await import(scaffolded.templateFile)) as { queryWidgetCount: AnyTemplate };
    expect(() => createRegistry([queryWidgetCount])).toThrow(
      /^template query_widget_count is scaffolded but not filled in: write its query\(\), columns and output in /,
    );
  });

  it('new-query: filled in, the template registers and answers through a real client', async () => {
    const { queryStatusCount } = (await import(filledFile)) as { queryStatusCount: AnyTemplate };
    const harness = await startHarness({ templates: [queryStatusCount] });
    try {
      const result = structured<{ rows: { status: string; order_count: number }[]; row_count: number }>(
        await harness.call('query_status_count', queryStatusCount.examples[0]),
      );
      expect(result.row_count).toBe(result.rows.length);
      expect(result.rows.length).toBeGreaterThan(0);
    } finally {
      await harness.close();
    }
  });

  it('new-query: refuses an existing file and a name that is not snake_case verb_noun, naming the rule', () => {
    expect(() => scaffoldQuery({ name: 'query_widget_count', packDir: copy, engineRoot: copy })).toThrow(
      /query-widget-count\.ts exists; pick another name or remove it/,
    );
    for (const bad of ['widgetCount', 'query', 'query-widget', 'Query_widget']) {
      expect(() => scaffoldQuery({ name: bad, packDir: copy, engineRoot: copy })).toThrow(
        /is not a tool name: it must be snake_case verb_noun/,
      );
    }
    // The billing trial's: snake_case, but no verb.
    expect(() => scaffoldQuery({ name: 'recent_invoices', packDir: copy, engineRoot: copy })).toThrow(
      'new-query: "recent_invoices" does not start with a verb: it must be verb_noun, such as query_recent_invoices (verbs: query, list,',
    );
    expect(() => scaffoldQuery({ name: 'query_x', packDir: join(copy, 'test'), engineRoot: copy })).toThrow(
      /is not a pack folder: it has no pack\/kit\.ts/,
    );
  });

  it('new-query: the CLI refuses a bad name with one line and exit code 2', () => {
    const run = spawnSync(process.execPath, [CLI, 'new-query', 'widgetCount', '--pack', copy], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^querygate: new-query: "widgetCount" is not a tool name: it must be snake_case/);
  });
});

describe('new-metric', () => {
  let metric: MetricScaffolded;
  let filledDeclaration: string;
  let filledModel: string;

  beforeAll(() => {
    metric = scaffoldMetric({ name: 'cancelled_orders', packDir: copy, engineRoot: copy });
    // Filled in as its comments say: the measure over the order items' own aliases, and the three lines
    // the report gives added to a copy of the pack's metrics.ts.
    filledDeclaration = join(copy, 'metrics', 'cancelled-orders-filled.ts');
    writeFileSync(
      filledDeclaration,
      readFileSync(metric.declarationFile, 'utf8')
        .replace(/description: 'TODO [^']*'/, "description: 'Orders cancelled.'")
        .replace(
          /aggregate: 'count',\n {2}\/\/ of: 't.amount',\n {2}\/\/ rows: \(eb\) => eb\(eb.ref\('t.status'\), '=', 'cancelled'\),/,
          "aggregate: 'count_distinct',\n  of: 'o.id',\n  rows: (eb) => eb(eb.ref('o.status'), '=', 'cancelled'),",
        ),
    );
    const model = readFileSync(join(copy, 'pack', 'metrics.ts'), 'utf8');
    const lastMeasures = model.lastIndexOf('measures: {') + 'measures: {'.length;
    filledModel = join(copy, 'pack', 'metrics-filled.ts');
    writeFileSync(
      filledModel,
      (model.slice(0, lastMeasures) + '\n        cancelled_orders: cancelledOrdersMeasure,' + model.slice(lastMeasures))
        .replace(
          "import { ORDER_STATUSES, NON_REVENUE_STATUSES } from './statuses.js';",
          "import { ORDER_STATUSES, NON_REVENUE_STATUSES } from './statuses.js';\n" +
            "import { cancelledOrders, cancelledOrdersMeasure } from '../metrics/cancelled-orders-filled.js';",
        )
        .replace('  metrics: [\n', '  metrics: [\n    cancelledOrders,\n'),
    );
  });

  it('new-metric: writes the declaration into metrics/ and its test into test/, and says where to add them', () => {
    expect(metric.declarationFile).toBe(join(copy, 'metrics', 'cancelled-orders.ts'));
    expect(metric.testFile).toBe(join(copy, 'test', 'metric-cancelled-orders.test.ts'));
    expect([metric.exportName, metric.measureName, metric.tool]).toEqual([
      'cancelledOrders',
      'cancelledOrdersMeasure',
      'query_metrics',
    ]);
    const declaration = readFileSync(metric.declarationFile, 'utf8');
    expect(declaration).toContain("import type { Measure, MetricDeclaration } from '../src/metrics/declarations.js';");
    expect(declaration).toContain('export const cancelledOrders: MetricDeclaration = {');
    expect(declaration).toContain('export const cancelledOrdersMeasure: Measure = {');
    expect(declaration).toContain(
      "import { cancelledOrders, cancelledOrdersMeasure } from '../metrics/cancelled-orders.js';",
    );
    expect(metric.report).toContain('cancelled_orders: cancelledOrdersMeasure');
    expect(metric.report).toMatch(
      /In .*pack\/metrics\.ts, to the model salesMetrics \(served as query_metrics\), as the comments of the new file say/,
    );
    expect(declaration).toContain(
      "Add it to the pack's metrics model, pack/metrics.ts (salesMetrics, served as query_metrics)",
    );
    const test = readFileSync(metric.testFile, 'utf8');
    expect(test).toContain("const TOOL = 'query_metrics';");
    expect(test).toMatch(/throw new Error\(\n\s+'scaffolded test not filled in: write expectedTotals\(\) in /);
  });

  it('new-metric: of a pack with two models, asks which, and adds to the one --model names', () => {
    const two = mkdtempSync(join(tmpdir(), 'querygate-scaffold-two-'));
    try {
      cpSync(join(ROOT, 'examples', 'support-desk', 'pack'), join(two, 'pack'), { recursive: true });
      // A second model in a file of its own, as a pack over a second fact table would declare it.
      writeFileSync(
        join(two, 'pack', 'usage.ts'),
        "export const usageMetrics: MetricsModel = {\n  toolName: 'query_usage',\n  subject: 'usage',\n};\n",
      );
      expect(() => scaffoldMetric({ name: 'urgent_tickets', packDir: two, engineRoot: ROOT })).toThrow(
        /^new-metric: the pack has 2 metrics models: query_ticket_metrics \(supportMetrics in .*pack\/metrics\.ts\), query_usage \(usageMetrics in .*pack\/usage\.ts\); say which with --model <tool>$/,
      );
      expect(() =>
        scaffoldMetric({ name: 'urgent_tickets', packDir: two, engineRoot: ROOT, model: 'query_sales' }),
      ).toThrow(
        /^new-metric: --model query_sales is no metrics model of the pack; its models are query_ticket_metrics/,
      );
      const scaffolded = scaffoldMetric({ name: 'active_seats', packDir: two, engineRoot: ROOT, model: 'query_usage' });
      expect(scaffolded.tool).toBe('query_usage');
      expect(scaffolded.report).toMatch(/In .*pack\/usage\.ts, to the model usageMetrics \(served as query_usage\)/);
      expect(readFileSync(scaffolded.testFile, 'utf8')).toContain("const TOOL = 'query_usage';");
    } finally {
      rmSync(two, { recursive: true, force: true });
    }
  });

  it("new-metric: calls the pack's own tool, named by its model's toolName", () => {
    const desk = mkdtempSync(join(tmpdir(), 'querygate-scaffold-desk-'));
    try {
      cpSync(join(ROOT, 'examples', 'support-desk', 'pack'), join(desk, 'pack'), { recursive: true });
      const scaffolded = scaffoldMetric({ name: 'urgent_tickets', packDir: desk, engineRoot: ROOT });
      expect(scaffolded.tool).toBe('query_ticket_metrics');
      expect(readFileSync(scaffolded.testFile, 'utf8')).toContain("const TOOL = 'query_ticket_metrics';");
    } finally {
      rmSync(desk, { recursive: true, force: true });
    }
  });

  it('new-metric: the scaffold as written and filled in type-check (tsc), and are prettier-clean', async () => {
    const scaffolds = [metric.declarationFile, metric.testFile];
    await expectCleanSources('tsconfig.metric.json', [...scaffolds, filledDeclaration, filledModel], scaffolds);
  }, 120_000);

  it('new-metric: the engine refuses a model holding the declaration as written, saying so', async () => {
    const { cancelledOrders } = (await import(metric.declarationFile)) as { cancelledOrders: MetricDeclaration };
    const { salesMetrics } = (await import(join(ROOT, 'pack', 'metrics.ts'))) as { salesMetrics: MetricsModel };
    expect(() =>
      metricsTemplate({ ...salesMetrics, metrics: [...salesMetrics.metrics, cancelledOrders] }, PERSONAL_COLUMNS),
    ).toThrow(/metric cancelled_orders is scaffolded but not filled in: write its description/);
  });

  it("new-metric: filled in, the metric answers through a real client with the raw rows' figure", async () => {
    const { salesMetrics } = (await import(filledModel)) as { salesMetrics: MetricsModel };
    const harness = await startHarness({ templates: [metricsTemplate(salesMetrics, PERSONAL_COLUMNS, DATA_SCOPE)] });
    const admin = await connectAdmin();
    try {
      const { rows } = await admin.query<{ n: number }>(
        `select count(*)::int as n from sales.orders
          where status = 'cancelled' and ordered_at >= '2025-03-01 00:00+00' and ordered_at < '2025-04-01 00:00+00'`,
      );
      const answer = structured<{ totals: Record<string, unknown>[] }>(
        await harness.call('query_metrics', {
          metrics: ['cancelled_orders', 'orders'],
          start_date: '2025-03-01',
          end_date: '2025-03-31',
        }),
      );
      expect(answer.totals[0]!.cancelled_orders).toBe(rows[0]!.n);
      expect(rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await harness.close();
      await admin.end();
    }
  });

  it('new-metric: refuses an existing file, a name that is not snake_case and a folder that is no pack', () => {
    expect(() => scaffoldMetric({ name: 'cancelled_orders', packDir: copy, engineRoot: copy })).toThrow(
      /cancelled-orders\.ts exists; pick another name or remove it/,
    );
    for (const bad of ['cancelledOrders', 'cancelled-orders', 'Cancelled', 'cancelled__orders', '_x', 'x_']) {
      expect(() => scaffoldMetric({ name: bad, packDir: copy, engineRoot: copy })).toThrow(
        /is not a metric name: it must be snake_case/,
      );
    }
    expect(() => scaffoldMetric({ name: 'weekday', packDir: copy, engineRoot: copy })).toThrow(/reserved name/);
    expect(() => scaffoldMetric({ name: 'x', packDir: join(copy, 'test'), engineRoot: copy })).toThrow(
      /is not a pack folder: it has no pack\/index\.ts/,
    );
  });

  it('new-metric: the CLI refuses a bad name with one line and exit code 2', () => {
    const run = spawnSync(process.execPath, [CLI, 'new-metric', 'cancelledOrders', '--pack', copy], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^querygate: new-metric: "cancelledOrders" is not a metric name: it must be snake_case/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});
