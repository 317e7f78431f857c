/**
 * `querygate new-pack <name> [--pack <dir>]`: writes a pack that is served and tested as written, in
 * `examples/<name>/` (where `npm test` finds it with no setting): a view over one table of events and
 * its grants (a migration), the classification of every column the reader can read, its high-water
 * mark, one declared metric served as the pack's metrics tool, a seed that makes the table and its
 * test data in the test database only, and a test that holds the tool to figures computed through
 * the admin connection in two zones. The author then points the view at their own tables and grows
 * the declarations. Names no table of its own: every name it writes is the new pack's.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ConfigError } from '../lib/errors.js';
import { findEngineRoot, importPath } from './query.js';

export interface PackScaffoldOptions {
  /** The pack's name, snake_case: `billing`. Its tool is `query_<name>`, its views `<name>_reporting`. */
  readonly name: string;
  /** Where to write it: `examples/<name with dashes>` unless given. */
  readonly packDir?: string;
  /** Where querygate's sources are; found from this module when omitted. */
  readonly engineRoot?: string;
}

/** The starter table: one of events (an account's signups, logins and upgrades). */
const STARTER_FACT = 'event';

/** Where the pack's files import each other from, outside their own folder. */
const FROM = {
  migrations: '../migrations/index.js',
  queries: '../queries/index.js',
  metrics: '../pack/metrics.js',
  schema: '../pack/schema.js',
  pack: '../pack/index.js',
};

/**
 * Names a pack may not take: the shipped packs' names and schemas (a pack's name is its schemas',
 * `<name>` and `<name>_reporting`), and PostgreSQL's own.
 */
const TAKEN = ['sales', 'reporting', 'support_desk', 'support', 'billing', 'querygate', 'public', 'information_schema'];
/** PostgreSQL's reserved key words (and those no schema may be named): the scaffold's SQL names the schemas bare. */
const RESERVED = new Set(
  (
    'all analyse analyze and any array as asc asymmetric authorization binary both case cast check collate collation ' +
    'column concurrently constraint create cross current_catalog current_date current_role current_schema current_time ' +
    'current_timestamp current_user default deferrable desc distinct do else end except false fetch for foreign freeze ' +
    'from full grant group having ilike in initially inner intersect into is isnull join lateral leading left like limit ' +
    'localtime localtimestamp natural not notnull null offset on only or order outer overlaps placing primary references ' +
    'returning right select session_user similar some symmetric system_user table tablesample then to trailing true ' +
    'union unique user using variadic verbose when where window with'
  ).split(' '),
);

export function scaffoldPack(options: PackScaffoldOptions): { readonly folder: string; readonly report: string } {
  const { name } = options;
  if (!/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(name) || name.length > 40) {
    throw new ConfigError(
      `new-pack: "${name}" is not a pack name: it must be snake_case, at most 40 characters, such as billing (it names the pack, its schemas and its tool)`,
    );
  }
  if (TAKEN.includes(name) || name.startsWith('pg_') || RESERVED.has(name)) {
    throw new ConfigError(
      `new-pack: "${name}" is taken: a shipped pack or schema (${TAKEN.join(', ')}), pg_*, or a key word of SQL; pick another name`,
    );
  }
  const engineRoot = resolve(options.engineRoot ?? findEngineRoot('new-pack'));
  const kebab = name.replaceAll('_', '-');
  const folder = resolve(options.packDir ?? join(engineRoot, 'examples', kebab));
  if (existsSync(folder)) throw new ConfigError(`new-pack: ${folder} exists; pick another name or remove it`);
  const words = name.replaceAll('_', ' ');
  const camel = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const pascal = camel[0]!.toUpperCase() + camel.slice(1);
  const files = packFiles({
    name,
    words,
    camel,
    pascal,
    raw: name,
    views: `${name}_reporting`,
    tool: `query_${name}`,
    facts: `${STARTER_FACT}s`,
    src: (from: string) => importPath(join(folder, from), join(engineRoot, 'src')),
    support: importPath(join(folder, 'test'), join(engineRoot, 'test', 'support')),
  });
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(join(folder, file, '..'), { recursive: true });
    writeFileSync(join(folder, file), text);
  }
  const shown = relative(process.cwd(), folder) || '.';
  const report = [
    `Created the pack ${name} in ${shown}:`,
    ...Object.keys(files).map((f) => `  ${join(shown, f)}`),
    '',
    'It is served and tested as written, over a table of events its seed makes in the test database:',
    `  npx vitest run ${join(shown, 'test')}      (npm test runs it too: every pack under examples/ is in the suite)`,
    '',
    'Next:',
    `  1. Point the view in ${join(shown, 'migrations/0001-reader-views.ts')} at your own tables, classify every`,
    `     column it shows in ${join(shown, 'pack/schema.ts')}, and make the same tables in pack/seed.ts's createTables.`,
    `  2. Declare your metrics in ${join(shown, 'pack/metrics.ts')}, or scaffold one:`,
    `       npx querygate new-metric <name> --pack ${shown}`,
    `  3. Serve it: npm run build && QUERYGATE_PACKS=sales,$PWD/dist/${relative(engineRoot, folder)}/pack/index.js npm start`,
  ].join('\n');
  return { folder, report };
}

interface Names {
  readonly name: string;
  readonly words: string;
  readonly camel: string;
  readonly pascal: string;
  /** The schema of the tables (made by the seed, in the test database only). */
  readonly raw: string;
  /** The schema of the views the reader reads. */
  readonly views: string;
  readonly tool: string;
  /** The starter fact table's name (its rows, plural): the author renames or replaces it. */
  readonly facts: string;
  /** The import path of the engine's src/ from a folder of the pack. */
  readonly src: (from: string) => string;
  readonly support: string;
}

function packFiles(n: Names): Record<string, string> {
  const db = `${n.pascal}Database`;
  return {
    'pack/index.ts': `/**
 * The ${n.words} pack, scaffolded by \`querygate new-pack ${n.name}\`: what the reader may see of the
 * database (migrations/), what each column is (pack/schema.ts), the metrics (pack/metrics.ts) and the
 * tools (queries/). Serve it by its compiled path: QUERYGATE_PACKS=sales,/abs/path/dist/<this folder>/pack/index.js.
 */
import { definePack } from '${n.src('pack')}/pack.js';
import { migrations } from '${FROM.migrations}';
import { templates } from '${FROM.queries}';
import { NOT_PERSONAL_COLUMNS, PERSONAL_COLUMNS } from './schema.js';
import { seed } from './seed.js';

export const ${n.camel}Pack = definePack({
  name: '${n.name}',
  subject: '${n.words}',
  instructions:
    'The ${n.words} tools take start_date and end_date (YYYY-MM-DD, inclusive), or a period such as last_week. ${n.tool} gives declared metrics by time and by their attributes (its metrics: querygate://catalog).',
  readerSchemas: ['${n.views}'],
  personalColumns: PERSONAL_COLUMNS,
  notPersonalColumns: NOT_PERSONAL_COLUMNS,
  templates,
  migrations,
  seed,
  // The highest EXPLAIN cost a tool's widest call may have (doctor prints each): set it above them,
  // with room for the data to grow, so that a plan that scans everything is refused.
  maxPlanCost: 10_000,
});

export default ${n.camel}Pack;
`,
    'pack/schema.ts': `/**
 * The relations the reader can see (the views of ${n.views}, migrations/0001-reader-views.ts), their
 * types, and what each column is. Once the views read your own tables, generate the types from them:
 * \`npm run codegen -- <this folder>\` writes pack/schema.generated.ts; then export its DB here.
 */
import type { HighWaterMark, NotPersonalColumns, PersonalColumns } from '${n.src('pack')}/pack.js';

export interface ${db} {
  '${n.views}.${n.facts}': { id: number; account_id: number; occurred_at: Date; kind: string };
}

/**
 * Every column that must never leave raw: ids (they leave as tokens), names, emails, phones. Ids and
 * initials are personal: an id joins a row to a person, initials narrow a person down.
 */
export const PERSONAL_COLUMNS: PersonalColumns<${db}> = {
  '${n.views}.${n.facts}.id': { kind: 'internal_id', entity: 'event' },
  '${n.views}.${n.facts}.account_id': { kind: 'internal_id', entity: 'account' },
};

/** Every other column the reader can read. A readable column in neither list stops the server. */
export const NOT_PERSONAL_COLUMNS: NotPersonalColumns<${db}> = [
  '${n.views}.${n.facts}.occurred_at',
  '${n.views}.${n.facts}.kind',
];

/** How far the data reach: the newest event (an index on occurred_at makes it one probe). */
export const DATA_THROUGH: HighWaterMark<${db}> = (db) =>
  db.selectFrom('${n.views}.${n.facts}').select((eb) => eb.fn.max('occurred_at').as('data_through'));
`,
    'pack/kit.ts': `/** The helper hand-written templates are defined with (querygate new-query): bound to the views and their classification. */
import { templateKit } from '${n.src('pack')}/pack.js';
import { DATA_THROUGH, PERSONAL_COLUMNS, type ${db} } from './schema.js';

export const defineTemplate = templateKit<${db}>(PERSONAL_COLUMNS, [], DATA_THROUGH);
`,
    'pack/metrics.ts': `/**
 * The ${n.words} metrics, served as one tool, ${n.tool} (src/metrics/): each metric says how it is
 * measured on each source, each attribute what its values are. docs/your-own-database.md lists every
 * rule a model follows; the pack is refused at start-up, in one line with the fix, where one is broken.
 */
import type { MetricsModel } from '${n.src('pack')}/metrics/declarations.js';
import { DATA_THROUGH } from './schema.js';

export const EVENT_KINDS = ['signup', 'login', 'upgrade'] as const;

export const ${n.camel}Metrics: MetricsModel = {
  toolName: '${n.tool}',
  subject: '${n.words}',
  dataThrough: DATA_THROUGH,
  metrics: [{ name: '${n.facts}', unit: 'count', description: 'Events that happened, of every kind.' }],
  attributes: [
    {
      name: 'kind',
      values: EVENT_KINDS,
      description: 'What happened: signup, login or upgrade.',
    },
  ],
  sources: [
    {
      name: '${n.facts}',
      rows: (db) => db.selectFrom('${n.views}.${n.facts} as e'),
      reads: ['${n.views}.${n.facts}'],
      time: 'e.occurred_at',
      attributes: { kind: 'e.kind' },
      measures: { ${n.facts}: { aggregate: 'count' } },
    },
  ],
  questions: [
    {
      question: 'Events by kind last month',
      arguments: { metrics: ['${n.facts}'], group_by: ['kind'], period: 'last_month' },
    },
  ],
};
`,
    'pack/seed.ts': `/**
 * The pack's test data: \`npm test\` makes the table the views read (createTables, in the test database
 * only) and fills it (run), deterministically, up to the suite's last day. \`querygate seed\` runs it too.
 * It writes as the admin; nothing the reader runs imports it.
 */
import { withAdmin } from '${n.src('pack')}/db/connect.js';
import type { PackSeed } from '${n.src('pack')}/pack.js';
import { EVENT_KINDS } from './metrics.js';

export const seed: PackSeed = {
  unit: '${n.facts}',
  defaultCount: 5000,
  testCount: 2000,
  createTables: (adminUrl) =>
    withAdmin(adminUrl, async (admin) => {
      await admin.query('create schema if not exists ${n.raw}');
      await admin.query(
        \`create table if not exists ${n.raw}.${n.facts} (
           id bigint generated always as identity primary key,
           account_id integer not null,
           occurred_at timestamptz not null,
           kind text not null)\`,
      );
      await admin.query('create index if not exists events_occurred_at on ${n.raw}.${n.facts} (occurred_at)');
    }),
  isEmpty: async (admin) => {
    const { rows } = await admin.query<{ empty: boolean }>(
      'select not exists (select 1 from ${n.raw}.${n.facts}) as empty',
    );
    return rows[0]!.empty;
  },
  run: (adminUrl, request) =>
    withAdmin(adminUrl, async (admin) => {
      const count = request.count ?? 5000;
      if (request.replace) await admin.query('truncate ${n.raw}.${n.facts} restart identity');
      // Spread over the 120 days up to the last day (UTC), minute by minute, on 60 accounts.
      await admin.query(
        \`insert into ${n.raw}.${n.facts} (account_id, occurred_at, kind)
         select 1 + (g * 7) % 60,
                (($1::date + 1)::timestamp at time zone 'UTC') - make_interval(mins => 1 + (g * 7919) % 172800),
                ($3::text[])[1 + (g * 31) % 3]
           from generate_series(0, $2::int - 1) as g\`,
        [request.until, count, [...EVENT_KINDS]],
      );
      return { ${n.facts}: count };
    }),
};
`,
    'migrations/index.ts': `/** The ${n.words} pack's migrations in order. Names sort in the order they must run. */
import type { Migration } from 'kysely';
import { readerViews } from './0001-reader-views.js';

export function migrations(options: { readonly readerRole: string }): Record<string, Migration> {
  return { '0001-reader-views': readerViews(options.readerRole) };
}
`,
    'migrations/0001-reader-views.ts': `/**
 * ${n.views}: the only relations of this pack the reader may see, and its rights on them: USAGE on
 * the schema and SELECT on the columns the tools read, nothing in your own schemas. A view shows
 * only what a tool needs, personal columns masked at the source (src/db/mask-sql.ts builds masks).
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function readerViews(role: string): Migration {
  const reader = sql.id(role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await sql\`create schema ${n.views}\`.execute(db);
      await sql\`
        create view ${n.views}.${n.facts} as
        select id, account_id, occurred_at, kind from ${n.raw}.${n.facts}\`.execute(db);
      await sql\`revoke all on schema ${n.views} from public\`.execute(db);
      await sql\`revoke all on all tables in schema ${n.views} from public\`.execute(db);
      await sql\`grant usage on schema ${n.views} to \${reader}\`.execute(db);
      await sql\`
        grant select (id, account_id, occurred_at, kind)
           on ${n.views}.${n.facts} to \${reader}\`.execute(db);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await sql\`drop schema ${n.views} cascade\`.execute(db);
    },
  };
}
`,
    'queries/index.ts': `/** Every tool of the ${n.words} pack, in one explicit list; the registry checks the whole list at start-up. */
import type { AnyTemplate } from '${n.src('queries')}/registry/index.js';
import { ${n.camel}Query } from './${n.name.replaceAll('_', '-')}-metrics.js';

export const templates: readonly AnyTemplate[] = [${n.camel}Query];
`,
    [`queries/${n.name.replaceAll('_', '-')}-metrics.ts`]: `/**
 * ${n.tool}: any declared ${n.words} metric in one call, by time and by attribute ("${n.facts} by kind
 * last month"), compiled by src/metrics/ from pack/metrics.ts.
 */
import { metricsTemplate } from '${n.src('queries')}/metrics/tool.js';
import { ${n.camel}Metrics } from '${FROM.metrics}';
import { PERSONAL_COLUMNS } from '${FROM.schema}';

export const ${n.camel}Query = metricsTemplate(${n.camel}Metrics, PERSONAL_COLUMNS);
`,
    [`test/${n.name.replaceAll('_', '-')}-metrics.test.ts`]: `/**
 * ${n.tool} through a real MCP client, held to figures computed here from the table the views read,
 * through the admin connection: each event's local day in UTC and in Europe/Berlin (whose clocks go
 * forward on 2025-03-30), counted in plain JavaScript.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '${n.support}/harness.js';
import { readerUrlFor } from '${n.support}/packs.js';
import { ${n.camel}Pack } from '${FROM.pack}';

const TOOL = '${n.tool}';
const ZONES = ['UTC', 'Europe/Berlin'] as const;
const RANGE = { start_date: '2025-03-15', end_date: '2025-04-13' };

let admin: pg.Client;
let ${n.facts}: { kind: string; day: Record<string, string> }[];
const harnesses = new Map<string, Harness>();

beforeAll(async () => {
  admin = await connectAdmin();
  const { rows } = await admin.query<{ kind: string; utc: string; berlin: string }>(
    \`select kind, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD') as utc,
            to_char(occurred_at at time zone 'Europe/Berlin', 'YYYY-MM-DD') as berlin
       from ${n.raw}.${n.facts}\`,
  );
  ${n.facts} = rows.map((r) => ({ kind: r.kind, day: { UTC: r.utc, 'Europe/Berlin': r.berlin } }));
  for (const timeZone of ZONES) {
    harnesses.set(
      timeZone,
      await startHarness({
        readerUrl: readerUrlFor(${n.camel}Pack),
        templates: ${n.camel}Pack.templates,
        timeZone,
      }),
    );
  }
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
  await admin.end();
});

describe.each(ZONES)(\`\${TOOL} in %s\`, (timeZone) => {
  it('counts the ${n.facts} of each kind in the range, biggest first, with the exact total', async () => {
    const inRange = ${n.facts}.filter((e) => e.day[timeZone]! >= RANGE.start_date && e.day[timeZone]! <= RANGE.end_date);
    const counts = new Map<string, number>();
    for (const e of inRange) counts.set(e.kind, (counts.get(e.kind) ?? 0) + 1);
    const expected = [...counts]
      .map(([kind, n]) => ({ kind, ${n.facts}: n }))
      .sort((a, b) => b.${n.facts} - a.${n.facts} || a.kind.localeCompare(b.kind));
    const result = await harnesses.get(timeZone)!.call(TOOL, { ...RANGE, metrics: ['${n.facts}'], group_by: ['kind'] });
    if (result.isError) throw new Error(textOf(result));
    const out = structured<{ rows: Record<string, unknown>[]; totals: Record<string, unknown>[] }>(result);
    expect(out.rows).toEqual(expected);
    expect(out.totals).toEqual([{ ${n.facts}: inRange.length }]);
    expect(inRange.length).toBeGreaterThan(100);
  });
});
`,
  };
}
