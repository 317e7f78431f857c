/**
 * `querygate new-query <name> [--pack <dir>]`: writes a template file into a pack's queries/ and its
 * end-to-end test into the pack's test/ (where `npm test` finds it), with comments that say what to
 * fill in. The template type-checks as written, and the registry refuses it with a "not filled in"
 * message until its query() is written, so a forgotten scaffold can never be served; the test fails
 * until its expectedRows() is written, saying so. Names no table: what a template reads is the pack's.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../lib/errors.js';
import { TOOL_NAME } from '../registry/types.js';

/** Where a pack's templates find its defineTemplate, from queries/. */
const PACK_KIT = '../pack/kit.js';

export interface ScaffoldOptions {
  /** The tool name, snake_case verb_noun: `query_widget_count`. */
  readonly name: string;
  /** The pack's folder: the one holding pack/kit.ts and queries/ (`.` for the sales pack). */
  readonly packDir: string;
  /** Where querygate's sources are (src/, test/support/); found from this module when omitted. */
  readonly engineRoot?: string;
}

export interface Scaffolded {
  readonly templateFile: string;
  readonly testFile: string;
  /** The name the template is exported as: `queryWidgetCount`. */
  readonly exportName: string;
  /** What was written and what to do next, for the terminal. */
  readonly report: string;
}

/** The verbs a new tool's name may start with: what a model does with it, read-only. */
const TOOL_VERBS = ['query', 'list', 'get', 'find', 'search', 'count', 'compare', 'summarize', 'explain', 'describe'];

export function scaffoldQuery(options: ScaffoldOptions): Scaffolded {
  const { name } = options;
  if (!TOOL_NAME.test(name)) {
    throw new ConfigError(
      `new-query: "${name}" is not a tool name: it must be snake_case verb_noun, such as query_widget_count (lower-case letters and digits, words joined by _)`,
    );
  }
  const verb = name.slice(0, name.indexOf('_'));
  if (!TOOL_VERBS.includes(verb)) {
    throw new ConfigError(
      `new-query: "${name}" does not start with a verb: it must be verb_noun, such as query_${name} (verbs: ${TOOL_VERBS.join(', ')})`,
    );
  }
  const engineRoot = resolve(options.engineRoot ?? findEngineRoot());
  const packDir = resolve(options.packDir);
  if (!existsSync(join(packDir, 'pack', 'kit.ts'))) {
    throw new ConfigError(
      `new-query: ${packDir} is not a pack folder: it has no pack/kit.ts (the pack's defineTemplate); give the folder with --pack`,
    );
  }
  const kebab = name.replaceAll('_', '-');
  const exportName = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const templateFile = join(packDir, 'queries', `${kebab}.ts`);
  // In the pack's own folder, so a pack's tests travel with it and `npm test` runs them from there.
  const testFile = join(packDir, 'test', `${kebab}.test.ts`);
  for (const file of [templateFile, testFile]) {
    if (existsSync(file)) throw new ConfigError(`new-query: ${file} exists; pick another name or remove it`);
  }
  const src = importPath(dirname(templateFile), join(engineRoot, 'src'));
  const relativeFile = relative(process.cwd(), templateFile);
  mkdirSync(dirname(templateFile), { recursive: true });
  writeFileSync(templateFile, templateSource(name, exportName, src, relativeFile));
  mkdirSync(dirname(testFile), { recursive: true });
  const fromTest = importPath(dirname(testFile), join(packDir, 'queries', `${kebab}.js`));
  const support = importPath(dirname(testFile), join(engineRoot, 'test', 'support'));
  writeFileSync(testFile, testSource(name, exportName, fromTest, support, relative(process.cwd(), testFile)));

  const index = relative(process.cwd(), join(packDir, 'queries', 'index.ts'));
  const report = [
    'Created:',
    `  ${relativeFile}  the template: fill in every TODO`,
    `  ${relative(process.cwd(), testFile)}  its end-to-end test: compute the expected rows independently`,
    '',
    'Next:',
    '  1. Fill in the template: the question, an example input, the SQL it generates, the columns with their',
    '     treatments, the input from the shared argument types, and query(). Until query() is written the',
    '     registry refuses the template, saying so.',
    `  2. Add it to the list in ${index}:`,
    `       import { ${exportName} } from './${kebab}.js';`,
    '  3. Run the contract suite: npx vitest run test/contract.test.ts',
    `  4. Fill in expectedRows() in the test, then: npx vitest run ${relative(process.cwd(), testFile)}`,
    '     (npm test runs it too, once the pack is named in QUERYGATE_PACKS or the configuration file)',
  ].join('\n');
  return { templateFile, testFile, exportName, report };
}

/** The folder above this module that holds querygate's TypeScript sources (from src/ or dist/src/). */
export function findEngineRoot(command = 'new-query'): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'src', 'lib', 'date-range.ts'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new ConfigError(
        `${command}: querygate's TypeScript sources are not here; packs are written in a clone of querygate`,
      );
    }
    dir = parent;
  }
}

/** An ES import path from one folder to a file or folder: relative, with forward slashes. */
export function importPath(from: string, to: string): string {
  const path = relative(from, to).split(sep).join('/');
  return path.startsWith('.') ? path : `./${path}`;
}

function templateSource(name: string, exportName: string, src: string, file: string): string {
  return `/**
 * TODO The business question this tool answers, in one line ("How many widgets were sold per day?").
 *
 * Example input: { "start_date": "2025-03-01", "end_date": "2025-03-31", "limit": 20 }
 *
 * SQL (TODO what the builder compiles to, with $n for each bound value):
 *   select ... from "<schema>"."<view>" as "t"
 *   where "t"."<timestamp column>" >= $1 and "t"."<timestamp column>" < $2
 *   group by ... order by ... limit $3
 */
import { z } from 'zod';
import { defineTemplate } from '${PACK_KIT}';
import { ConfigError } from '${src}/lib/errors.js';
import { rowLimit } from '${src}/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields } from '${src}/lib/date-range.js';
import { echoRange, rangeEcho, rowsEnvelope } from '${src}/lib/result-shape.js';

// The input, from the shared argument types only, so every tool words its rules the same way:
// dateRangeFields with checkDateRange (at most 90 days), oneOf([...], 'what it chooses') for a closed
// set (src/lib/arguments.ts), rowLimit(default) for a number of rows. z.strictObject refuses
// unknown arguments.
const input = z
  .strictObject({
    ...dateRangeFields,
    limit: rowLimit(20),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

// One row of the answer: every field, with a description a model reads. TODO replace todo, e.g.
//   day: z.string().describe('The day, YYYY-MM-DD'),
//   widget_count: count.describe('Widgets sold that day'),   (count, money: src/lib/result-shape.ts)
const row = z.object({
  todo: z.number(),
});

const output = z.object({
  ...rangeEcho,
  ...rowsEnvelope(row),
});

export const ${exportName} = defineTemplate({
  name: '${name}',
  title: 'TODO A short title',
  // For a model choosing a tool: what it answers, when to use it ("Use it for ..."), what it leaves
  // out, its limits. At least 120 characters: the contract suite checks.
  description: [
    'TODO What this tool answers between start_date and end_date (both inclusive, at most 90 days).',
    'Use it for questions like "TODO".',
    'limit is 1..100 (default 20).',
  ].join(' '),
  input,
  // Argument sets a model would send. The first is shown in the description; the registry compiles
  // every combination of enum and optional arguments, with the dates and numbers given here.
  examples: [{ start_date: '2025-03-01', end_date: '2025-03-31', limit: 20 }],
  output,
  // Every column the query selects, by its alias, with its type (text, integer, number, money, date,
  // timestamp), its source (the "schema.view.column" it is computed from, a list of them, or 'computed'
  // when no personal column is among them) and its treatment: 'plain' for a column no personal column
  // is behind (one of the pack's NOT_PERSONAL_COLUMNS, or computed from them); for one of the pack's
  // PERSONAL_COLUMNS its mask (mask_email, mask_phone, initials, token) or 'drop'. A column the reader
  // reads that is in neither list stops the server: classify every column of a view you add; { bucket: [...] } for an amount returned as a range. A count of people
  // a pack protects is a metric declared protected (src/metrics/declarations.ts), not a template column.
  columns: {
    todo: { type: 'integer', source: 'computed', treatment: 'plain' },
  },
  rowLimit: (args) => args.limit,
  // TODO The Kysely query, without LIMIT (the registry adds it), every value a bind parameter:
  //   db.selectFrom('<schema>.<view> as t')
  //     .where('t.<timestamp column>', '>=', startOfDay(range.startDate, ctx.timeZone))
  //     .where('t.<timestamp column>', '<', endOfRange(range, ctx.timeZone))
  //     .select([...]).groupBy([...]).orderBy(...)
  // with range = resolveRange(args) (src/lib/date-range.ts), startOfDay and endOfRange from src/db/range-sql.ts.
  query: () => {
    throw new ConfigError(
      'template ${name} is scaffolded but not filled in: write its query(), columns and output in ${file}',
    );
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    rows: rows as z.infer<typeof row>[],
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
`;
}

function testSource(name: string, exportName: string, template: string, support: string, file: string): string {
  return `/**
 * ${name} end to end, through a real MCP client, against rows computed independently through the admin
 * connection. The contract suite (test/contract.test.ts) checks its rules once it is in its pack's
 * queries/index.ts; this test checks its answers.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ${exportName} } from '${template}';
import { startHarness, structured, type Harness } from '${support}/harness.js';
import { testTarget } from '${support}/target.js';

// The test database, seeded with the pack's own seed (npm test); or, with QUERYGATE_PACKS, DATABASE_URL
// and ADMIN_DATABASE_URL set, yours.
const target = await testTarget();
let harness: Harness;
let admin: pg.Client;

beforeAll(async () => {
  harness = await startHarness({ readerUrl: target.readerUrlOf('${name}'), templates: [${exportName}] });
  admin = await target.connectAdmin();
});
afterAll(async () => {
  await harness?.close();
  await admin?.end();
});

/**
 * TODO The rows the example should return, computed from the raw tables through the admin connection
 * (or by arithmetic on the seeded rows), never with the template's own SQL, e.g.
 *   (await admin.query('select ... from <schema>.<table> where <ts> >= $1 and <ts> < $2 group by ...', [...])).rows
 */
async function expectedRows(_args: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  throw new Error(
    'scaffolded test not filled in: write expectedRows() in ${file}, computing the rows independently through the admin connection',
  );
}

describe('${name}', () => {
  it('answers each example with the rows computed independently', async () => {
    for (const args of ${exportName}.examples) {
      const answer = await harness.call('${name}', args);
      const result = structured<{ rows: Record<string, unknown>[] }>(answer);
      expect(result.rows).toEqual(await expectedRows(args));
    }
  });
});
`;
}
