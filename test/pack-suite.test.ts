/**
 * A user's pack is part of `npm test` with no edit outside its folder: a small pack is written in a
 * temporary folder outside the repository the way docs/your-own-database.md says (its migration, its
 * seed, one query), its test is scaffolded with the CLI and filled in, and vitest, with QUERYGATE_PACKS
 * naming the pack, finds the pack's tests, seeds its test data and passes them; a scaffolded test left
 * as written fails, saying what to fill; and the repository's working tree is as it was.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packFolder, packTestGlobs, servedPackSpecs } from './support/pack-suites.js';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/src/cli.js');
let folder: string;

function write(file: string, text: string): void {
  mkdirSync(join(folder, file, '..'), { recursive: true });
  writeFileSync(join(folder, file), text);
}

function gitStatus(): string {
  return spawnSync('git', ['status', '--porcelain'], { cwd: ROOT, encoding: 'utf8' }).stdout;
}

/** The pack of the doc's step 1, over a table the pack does not own (so its seed creates it for the tests). */
function writePack(): void {
  const src = relative(join(folder, 'pack'), join(ROOT, 'src'));
  write(
    'pack/schema.ts',
    `import type { NotPersonalColumns, PersonalColumns } from '${src}/pack.js';
export interface TinyDatabase {
  'tiny_reporting.events': { id: number; happened_at: Date; kind: string };
}
export const PERSONAL_COLUMNS: PersonalColumns<TinyDatabase> = {};
export const NOT_PERSONAL_COLUMNS: NotPersonalColumns<TinyDatabase> = [
  'tiny_reporting.events.id',
  'tiny_reporting.events.happened_at',
  'tiny_reporting.events.kind',
];
`,
  );
  write(
    'pack/kit.ts',
    `import { templateKit } from '${src}/pack.js';
import { PERSONAL_COLUMNS, type TinyDatabase } from './schema.js';
export const defineTemplate = templateKit<TinyDatabase>(PERSONAL_COLUMNS);
`,
  );
  write(
    'migrations/index.ts',
    `import { sql, type Kysely, type Migration } from 'kysely';
export function migrations({ readerRole }: { readonly readerRole: string }): Record<string, Migration> {
  const reader = sql.id(readerRole);
  return {
    '0001-reader-views': {
      async up(db: Kysely<unknown>): Promise<void> {
        await sql\`create schema tiny_reporting\`.execute(db);
        await sql\`create view tiny_reporting.events as select id, happened_at, kind from tiny.events\`.execute(db);
        await sql\`revoke all on schema tiny_reporting from public\`.execute(db);
        await sql\`revoke all on all tables in schema tiny_reporting from public\`.execute(db);
        await sql\`grant usage on schema tiny_reporting to \${reader}\`.execute(db);
        await sql\`grant select (id, happened_at, kind) on tiny_reporting.events to \${reader}\`.execute(db);
      },
    },
  };
}
`,
  );
  write(
    'pack/seed.ts',
    `import pg from 'pg';
import type { PackSeed } from '${src}/pack.js';
async function withAdmin<T>(adminUrl: string, task: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    return await task(admin);
  } finally {
    await admin.end();
  }
}
export const seed: PackSeed = {
  unit: 'events',
  defaultCount: 1000,
  testCount: 300,
  createTables: (adminUrl) =>
    withAdmin(adminUrl, async (admin) => {
      await admin.query('create schema if not exists tiny');
      await admin.query(
        'create table if not exists tiny.events (id serial primary key, happened_at timestamptz not null, kind text not null)',
      );
    }),
  isEmpty: (admin) => admin.query('select not exists (select 1 from tiny.events) as e').then((r) => r.rows[0].e),
  run: (adminUrl, request) =>
    withAdmin(adminUrl, async (admin) => {
      if (request.replace) await admin.query('truncate tiny.events');
      const count = request.count ?? 1000;
      await admin.query(
        \`insert into tiny.events (happened_at, kind)
         select ($1::date - (g % 60)) + make_interval(hours => g % 24), (array['alpha', 'beta', 'gamma'])[1 + g % 3]
         from generate_series(0, $2 - 1) as g\`,
        [request.until, count],
      );
      return { events: count };
    }),
};
`,
  );
  write(
    'pack/index.ts',
    `import { definePack } from '${src}/pack.js';
import { migrations } from '../migrations/index.js';
import { templates } from '../queries/index.js';
import { NOT_PERSONAL_COLUMNS, PERSONAL_COLUMNS } from './schema.js';
import { seed } from './seed.js';
export default definePack({
  name: 'tiny_events',
  subject: 'tiny events',
  instructions: 'Events by kind.',
  readerSchemas: ['tiny_reporting'],
  personalColumns: PERSONAL_COLUMNS,
  notPersonalColumns: NOT_PERSONAL_COLUMNS,
  templates,
  migrations,
  seed,
  maxPlanCost: 10_000,
});
`,
  );
  write(
    'queries/index.ts',
    `import { queryEventCount } from './query-event-count.js';
export const templates = [queryEventCount];
`,
  );
}

/** The scaffolded template with its TODOs filled in: events per kind over the range. */
function fillTemplate(scaffolded: string, src: string): string {
  return scaffolded
    .replace(
      "import { z } from 'zod';",
      `import { z } from 'zod';\nimport { endOfRange, startOfDay } from '${src}/db/range-sql.js';`,
    )
    .replace(
      'checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields }',
      'checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange }',
    )
    .replace('  todo: z.number(),', '  kind: z.string(),\n  event_count: z.number(),')
    .replace(
      "    todo: { type: 'integer', source: 'computed', treatment: 'plain' },",
      "    kind: { type: 'text', source: 'tiny_reporting.events.kind', treatment: 'plain' },\n" +
        "    event_count: { type: 'integer', source: 'computed', treatment: 'plain' },",
    )
    .replace("'TODO What this tool answers", "'How many events of each kind happened")
    .replace('"TODO"', '"how many alpha events were there in June"')
    .replace(
      / {2}query: \(\) => \{\n[^]*?\n {2}\},\n/,
      `  query: (db, args, ctx) =>
    db
      .selectFrom('tiny_reporting.events as e')
      .where('e.happened_at', '>=', startOfDay(resolveRange(args).startDate, ctx.timeZone))
      .where('e.happened_at', '<', endOfRange(resolveRange(args), ctx.timeZone))
      .select((eb) => ['e.kind', eb.fn.countAll().as('event_count')])
      .groupBy('e.kind')
      .orderBy('e.kind'),
`,
    )
    .replace(
      "examples: [{ start_date: '2025-03-01', end_date: '2025-03-31'",
      "examples: [{ start_date: '2025-06-01', end_date: '2025-06-30'",
    );
}

/** The scaffolded test with expectedRows() written: the same figures straight from the table. */
function fillTest(scaffolded: string): string {
  return scaffolded.replace(
    /async function expectedRows\(_args[^]*?\n\}\n/,
    `async function expectedRows(args: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const { rows } = await admin.query(
    "select kind, count(*)::int as event_count from tiny.events where happened_at >= $1::date and happened_at < $2::date + 1 group by kind order by kind",
    [args.start_date, args.end_date],
  );
  return rows;
}
`,
  );
}

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'querygate-own-pack-'));
  symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules')); // its kysely, pg and zod
  writePack();
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('a pack of your own in npm test', () => {
  it('runs its seeded, scaffolded and filled tests; an unfilled scaffold fails saying so; the repo is untouched', () => {
    const before = gitStatus();
    const scaffold = spawnSync(process.execPath, [CLI, 'new-query', 'query_event_count', '--pack', folder], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(scaffold.stderr).toBe('');
    expect(scaffold.status).toBe(0);
    const templateFile = join(folder, 'queries/query-event-count.ts');
    const testFile = join(folder, 'test/query-event-count.test.ts');
    const src = relative(join(folder, 'queries'), join(ROOT, 'src'));
    const filledTemplate = fillTemplate(readFileSync(templateFile, 'utf8'), src);
    expect(filledTemplate).not.toContain('not filled in');
    writeFileSync(templateFile, filledTemplate);
    const scaffoldedTest = readFileSync(testFile, 'utf8');
    writeFileSync(join(folder, 'test/unfilled.test.ts'), scaffoldedTest); // left as the CLI wrote it
    const filledTest = fillTest(scaffoldedTest);
    expect(filledTest).not.toContain('not filled in');
    writeFileSync(testFile, filledTest);

    // A run of its own: its own test database, seeded with the shipped packs and this one.
    const env: NodeJS.ProcessEnv = { ...process.env, QUERYGATE_PACKS: join(folder, 'pack/index.ts') };
    for (const name of Object.keys(env)) if (name.startsWith('VITEST')) delete env[name];
    for (const name of ['DATABASE_URL', 'TEST_DATABASE_URL', 'QUERYGATE_CONFIG']) delete env[name];
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', join(folder, 'test'), '--reporter=json'],
      { cwd: ROOT, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const report = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as {
      testResults: {
        name: string;
        status: string;
        message?: string;
        assertionResults: { failureMessages: string[] }[];
      }[];
    };
    const byFile = new Map(report.testResults.map((r) => [relative(folder, r.name), r]));
    expect([...byFile.keys()].sort(), run.stderr).toEqual(['test/query-event-count.test.ts', 'test/unfilled.test.ts']);
    const filled = byFile.get('test/query-event-count.test.ts')!;
    expect(filled.status, JSON.stringify(filled)).toBe('passed');
    const unfilled = byFile.get('test/unfilled.test.ts')!;
    expect(unfilled.status).toBe('failed');
    expect(unfilled.assertionResults.flatMap((a) => a.failureMessages).join('\n')).toMatch(
      /scaffolded test not filled in: write expectedRows\(\) in .*query-event-count\.test\.ts/,
    );
    expect(run.status).toBe(1);
    expect(gitStatus()).toBe(before);
  }, 600_000);
});

describe('pack-suites: which packs the tests serve and where their tests are', () => {
  it('reads QUERYGATE_PACKS, or the configuration file (paths from its folder) in its place', () => {
    const file = join(folder, 'querygate.yaml');
    writeFileSync(file, 'packs:\n  - name: sales\n  - path: pack/index.ts\n');
    expect(servedPackSpecs({ QUERYGATE_PACKS: 'sales,other/pack/index.js' }, '/x')).toEqual([
      'sales',
      '/x/other/pack/index.js',
    ]);
    expect(servedPackSpecs({ QUERYGATE_PACKS: 'ignored/pack/index.js', QUERYGATE_CONFIG: file })).toEqual([
      'sales',
      join(folder, 'pack/index.ts'),
    ]);
  });

  it("adds each named pack's test folder, once, mapping a compiled module back to its sources", () => {
    expect(packFolder(join(ROOT, 'dist/examples/support-desk/pack/index.js'))).toBe(
      join(ROOT, 'examples/support-desk'),
    );
    expect(packFolder(join(folder, 'pack/index.ts'))).toBe(folder);
    mkdirSync(join(folder, 'test'), { recursive: true });
    const shipped = packTestGlobs({});
    // Every pack under examples/, with no setting: the billing pack (new-pack's), the support desk, and any
    // pack a user scaffolds there.
    expect(shipped).toEqual(
      expect.arrayContaining(['examples/billing/test/**/*.test.ts', 'examples/support-desk/test/**/*.test.ts']),
    );
    expect(shipped.every((glob) => /^examples\/[^/]+\/test\/\*\*\/\*\.test\.ts$/.test(glob))).toBe(true);
    const specs = ['sales', join(ROOT, 'dist/examples/support-desk/pack/index.js'), join(folder, 'pack/index.ts')];
    expect(packTestGlobs({ QUERYGATE_PACKS: specs.join(',') })).toEqual([...shipped, `${folder}/test/**/*.test.ts`]);
    // A pack without a test folder adds nothing.
    expect(packTestGlobs({ QUERYGATE_PACKS: join(folder, 'nowhere/pack/index.ts') })).toEqual(shipped);
  });
});
