/**
 * `querygate new-metric <name> [--pack <dir>]`: writes a metric's declaration and its measure into
 * `<dir>/metrics/<name in kebab-case>.ts`, and its test into `<dir>/test/metric-<name>.test.ts`. A pack's
 * metrics model is TypeScript that no tool can edit safely, so the new file says, in comments, the
 * three lines to add to the model: the pack's one, or, of a pack with several, the one `--model`
 * names by its tool (the test calls that tool). The declaration's description starts with TODO,
 * and the engine refuses a model holding one ("scaffolded but not filled in"), so a forgotten scaffold
 * is never served; the test fails until its expected figure is written, saying so. Names no table.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ConfigError } from '../lib/errors.js';
import { CYCLIC_TIMES, TIME_GRAINS } from '../metrics/declarations.js';
import { METRICS_TOOL } from '../metrics/tool.js';
import { findEngineRoot, importPath } from './query.js';

/** A metric's name: snake_case words, as arguments and answers name it. */
const METRIC_NAME = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

export interface MetricScaffoldOptions {
  /** The metric's name, snake_case: `cancelled_orders`. */
  readonly name: string;
  /** The pack's folder: the one holding pack/ and queries/ (`.` for the sales pack). */
  readonly packDir: string;
  /** Where querygate's sources are (src/, test/support/); found from this module when omitted. */
  readonly engineRoot?: string;
  /** The model to add to, by the tool it derives (`query_metrics`): required of a pack with several. */
  readonly model?: string;
}

/** A metrics model a pack declares: the file, the constant and the tool it derives. */
interface DeclaredModel {
  readonly file: string;
  readonly constant: string;
  readonly tool: string;
}

/**
 * The metrics models of a pack, read from its pack/ folder: every `export const <name>: MetricsModel`,
 * with the toolName written in its declaration (query_metrics when it names none). The model is
 * TypeScript; this reads its text, as a person would, and names what it finds.
 */
function modelsOf(packDir: string): DeclaredModel[] {
  const folder = join(packDir, 'pack');
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .flatMap((f) => {
      const text = readFileSync(join(folder, f), 'utf8');
      const starts = [...text.matchAll(/export const (\w+): MetricsModel\b/g)];
      return starts.map((m, i) => {
        const body = text.slice(m.index, starts[i + 1]?.index ?? text.length);
        const tool = /\btoolName:\s*'([a-z0-9_]+)'/.exec(body)?.[1] ?? METRICS_TOOL;
        return { file: join(folder, f), constant: m[1]!, tool };
      });
    });
}

/** The model the metric is added to: the pack's one, or the one `--model` names. */
function chosenModel(packDir: string, asked: string | undefined): DeclaredModel | undefined {
  const models = modelsOf(packDir);
  const listed = models.map((m) => `${m.tool} (${m.constant} in ${relative(process.cwd(), m.file)})`).join(', ');
  if (asked !== undefined) {
    const found = models.find((m) => m.tool === asked);
    if (found === undefined) {
      throw new ConfigError(
        `new-metric: --model ${asked} is no metrics model of the pack; its models are ${listed || 'none'}`,
      );
    }
    return found;
  }
  if (models.length > 1) {
    throw new ConfigError(
      `new-metric: the pack has ${models.length} metrics models: ${listed}; say which with --model <tool>`,
    );
  }
  return models[0];
}

export interface MetricScaffolded {
  readonly declarationFile: string;
  readonly testFile: string;
  /** The names the file exports: the declaration (`cancelledOrders`) and its measure (`cancelledOrdersMeasure`). */
  readonly exportName: string;
  readonly measureName: string;
  /** The tool the pack's model derives (its toolName, else query_metrics), which the test calls. */
  readonly tool: string;
  /** What was written and what to do next, for the terminal. */
  readonly report: string;
}

export function scaffoldMetric(options: MetricScaffoldOptions): MetricScaffolded {
  const { name } = options;
  if (!METRIC_NAME.test(name)) {
    throw new ConfigError(
      `new-metric: "${name}" is not a metric name: it must be snake_case, such as cancelled_orders (lower-case letters and digits, words joined by _)`,
    );
  }
  if ([...TIME_GRAINS, ...CYCLIC_TIMES, 'currency'].includes(name as never)) {
    throw new ConfigError(`new-metric: "${name}" is a dimension's reserved name; pick another`);
  }
  const engineRoot = resolve(options.engineRoot ?? findEngineRoot('new-metric'));
  const packDir = resolve(options.packDir);
  if (!existsSync(join(packDir, 'pack', 'index.ts'))) {
    throw new ConfigError(
      `new-metric: ${packDir} is not a pack folder: it has no pack/index.ts; give the folder with --pack`,
    );
  }
  const kebab = name.replaceAll('_', '-');
  const exportName = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const measureName = `${exportName}Measure`;
  const declarationFile = join(packDir, 'metrics', `${kebab}.ts`);
  const testFile = join(packDir, 'test', `metric-${kebab}.test.ts`);
  for (const file of [declarationFile, testFile]) {
    if (existsSync(file)) throw new ConfigError(`new-metric: ${file} exists; pick another name or remove it`);
  }
  const model = chosenModel(packDir, options.model);
  const modelFile = model?.file ?? join(packDir, 'pack', 'metrics.ts');
  const tool = model?.tool ?? METRICS_TOOL;

  const src = importPath(dirname(declarationFile), join(engineRoot, 'src'));
  const shown = (file: string): string => relative(process.cwd(), file);
  mkdirSync(dirname(declarationFile), { recursive: true });
  const modelAt = `${relative(packDir, modelFile)}${model ? ` (${model.constant}, served as ${tool})` : ''}`;
  writeFileSync(declarationFile, declarationSource(name, exportName, measureName, kebab, src, modelAt));
  mkdirSync(dirname(testFile), { recursive: true });
  const support = importPath(dirname(testFile), join(engineRoot, 'test', 'support'));
  const queries = importPath(dirname(testFile), join(packDir, 'queries', 'index.js'));
  writeFileSync(testFile, testSource(name, tool, support, queries, shown(testFile)));

  const report = [
    'Created:',
    `  ${shown(declarationFile)}  the declaration and its measure: fill in every TODO`,
    `  ${shown(testFile)}  its test: compute the expected figure independently`,
    '',
    'Next:',
    model === undefined
      ? `  1. The pack has no ${shown(modelFile)}: write one exporting a MetricsModel (see examples/support-desk/pack/metrics.ts) and serve it with metricsTemplate in queries/.`
      : `  1. In ${shown(modelFile)}, to the model ${model.constant} (served as ${tool}), as the comments of the new file say:`,
    `       import { ${exportName}, ${measureName} } from '../metrics/${kebab}.js';`,
    `       metrics: [..., ${exportName}]`,
    `       measures: { ..., ${name}: ${measureName} }   (of the last source, the base views; and of any other that can compute it)`,
    '  2. Run the contract suite and update the snapshot: npx vitest run test/contract.test.ts; npm run contract:update',
    `  3. Fill in expectedTotals() in the test, then: npx vitest run ${shown(testFile)}`,
  ].join('\n');
  return { declarationFile, testFile, exportName, measureName, tool, report };
}

function declarationSource(
  name: string,
  exportName: string,
  measureName: string,
  kebab: string,
  src: string,
  modelAt: string,
): string {
  return `/**
 * The metric ${name}: TODO what it counts or adds up, in one line.
 *
 * Add it to the pack's metrics model, ${modelAt} (a MetricsModel; see src/metrics/declarations.ts):
 *   1. import { ${exportName}, ${measureName} } from '../metrics/${kebab}.js';
 *   2. put ${exportName} in its \`metrics\` list;
 *   3. put \`${name}: ${measureName}\` in the \`measures\` of its last source (the base views), and of any
 *      other source (a rollup) whose rows can compute it; a source without it never serves a call that asks
 *      for it. Until its description is written, the engine refuses the model, saying so.
 */
import type { Measure, MetricDeclaration } from '${src}/metrics/declarations.js';

export const ${exportName}: MetricDeclaration = {
  name: '${name}',
  // 'count', 'money' (summed per currency, never across two: the source names its currency column),
  // 'number' (any other sum, such as hours) or 'ratio' (with ratio: [numerator, denominator], two other
  // metrics of the model, computed from their sums over the same rows).
  unit: 'count',
  // For a model choosing a metric: what it means, which rows it leaves out, when to use it.
  description: 'TODO What ${name} means and which rows it counts.',
  // people: true, for a count of distinct people; protected: true as well when the pack protects them.
};

/**
 * How the base views compute it, over the source's aliases ("t.status"): the aggregate, what it adds
 * up or counts distinct (a column, or an expression of the row), and which rows it counts. Where the
 * source joins several rows per counted thing (items of an order), count the thing's own id distinct.
 */
export const ${measureName}: Measure = {
  aggregate: 'count',
  // of: 't.amount',
  // rows: (eb) => eb(eb.ref('t.status'), '=', 'cancelled'),
};
`;
}

function testSource(name: string, tool: string, support: string, queries: string, file: string): string {
  return `/**
 * The metric ${name} through ${tool}, through a real MCP client, against the figure computed
 * independently through the admin connection. The contract suite checks the tool's rules; this test
 * checks the metric's figure.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, textOf, type Harness } from '${support}/harness.js';
import { testTarget } from '${support}/target.js';
import { templates } from '${queries}';

// The test database, seeded with the pack's own seed (npm test); or, with QUERYGATE_PACKS, DATABASE_URL
// and ADMIN_DATABASE_URL set, yours.
const target = await testTarget();
const TOOL = '${tool}';
/** A call over days the seed holds, in the harness's reporting time zone (UTC). */
const ARGS = { metrics: ['${name}'], start_date: '2025-03-01', end_date: '2025-03-31' };
let harness: Harness;
let admin: pg.Client;

beforeAll(async () => {
  harness = await startHarness({ readerUrl: target.readerUrlOf(TOOL), templates });
  admin = await target.connectAdmin();
});
afterAll(async () => {
  await harness?.close();
  await admin?.end();
});

/**
 * TODO The totals ARGS should return, computed from the raw tables through the admin connection, never
 * with the tool's own SQL: [{ ${name}: n }] for a count, one { currency, ${name} } per currency for money, e.g.
 *   (await admin.query("select count(*)::int as n from <schema>.<table> where <ts> >= '2025-03-01' and <ts> < '2025-04-01'")).rows
 */
async function expectedTotals(): Promise<Record<string, unknown>[]> {
  throw new Error(
    'scaffolded test not filled in: write expectedTotals() in ${file}, computing ${name} independently through the admin connection',
  );
}

describe('${name}', () => {
  it('totals over ARGS are the figure computed independently', async () => {
    const expected = await expectedTotals();
    const answer = await harness.call(TOOL, ARGS);
    expect(answer.isError, textOf(answer)).toBeFalsy();
    expect(structured<{ totals: Record<string, unknown>[] }>(answer).totals).toEqual(expected);
  });
});
`;
}
