/**
 * `querygate new-query`: the scaffold, written into a temporary copy of the sales pack's layout, type-checks
 * and is prettier-clean as written; the registry refuses it with a "not filled in" message until its query
 * is written; filled in (as a test would), it type-checks, registers and answers through a real client.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import prettier from 'prettier';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry, type AnyTemplate } from '../src/registry/index.js';
import { scaffoldQuery, type Scaffolded } from '../src/scaffold.js';
import { CLI } from './support/cli.js';
import { startHarness, structured } from './support/harness.js';

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
      "import { ConfigError } from '../src/errors.js';\n",
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
    // global-setup.ts declares what the harness injects (the database URLs).
    const files = [
      scaffolded.templateFile,
      scaffolded.testFile,
      filledFile,
      join(copy, 'test/support/global-setup.ts'),
    ];
    writeFileSync(
      join(copy, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.json'),
        compilerOptions: { noEmit: true, rootDir: '/' },
        files,
        include: [],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', copy], {
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
    const options = await prettier.resolveConfig(join(ROOT, 'package.json'));
    for (const file of [scaffolded.templateFile, scaffolded.testFile]) {
      expect(await prettier.check(readFileSync(file, 'utf8'), { ...options, filepath: file }), file).toBe(true);
    }
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
