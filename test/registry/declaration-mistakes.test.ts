/**
 * Issue 31: a pack author's mistakes in the metrics layer's declarations are refused at start-up,
 * each in one line that names the declaration, the field and the fix, and nothing is served. Each
 * mistake is the shipped sales pack with one declaration changed, as an author would ship it, loaded
 * by the built CLI through QUERYGATE_PACKS: `serve` exits 2 with that line alone, and `doctor` says it too.
 */
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DECLARATIONS_CHECK } from '../../src/db/doctor/declared-sources.js';
import { DATE_INPUT_FIX } from '../../src/lib/date-inputs.js';
import { runCli } from '../support/cli.js';

interface Mistake {
  readonly name: string;
  /** A JavaScript expression of the sales model (`model`) with the mistake in it. */
  readonly model?: string;
  /** The pack's other declarations with the mistake in them, spread into it (an expression of `sales`). */
  readonly pack?: string;
  /** A hand-written template added to the pack: the expression of its query() given the order count's `counted`. */
  readonly cohort?: string;
  /** The whole line serve prints after `querygate: ` (after the pack's name where the pack cannot load). */
  readonly message: string;
  /** Refused when the pack loads (the model alone is wrong), else when serve first asks the database. */
  readonly when: 'load' | 'database';
}

/** The sales model with its base source `orders` reading other rows. */
const ordersReading = (rows: string): string =>
  `({ ...model, sources: model.sources.map((s) => (s.name === 'orders' ? { ...s, rows: ${rows} } : s)) })`;

/** The sales model with the product's name, free text, as an attribute declared with `values` (an object's text). */
const withProductName = (values: string): string =>
  `({ ...model, attributes: [...model.attributes, { name: 'product_title', description: "The product's name.", ...${values} }], ` +
  `sources: model.sources.map((s) => (s.name === 'order items' ? { ...s, attributes: { ...s.attributes, product_title: 'p.name' } } : s)) })`;

/**
 * A hand-written template of the order count with a `cohort` text input, whose query() is `query`
 * (an expression of `counted`, the order count's statement, and `args`), pushed onto `templates`.
 */
const cohortTemplate = (dist: (path: string) => string, query: string): string[] => [
  "import { sql } from 'kysely';",
  "import { z } from 'zod';",
  `import { queryOrderCount } from ${dist('queries/query-order-count.js')};`,
  `import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields } from ${dist('src/lib/date-range.js')};`,
  'const input = z',
  "  .strictObject({ ...dateRangeFields, cohort: z.string().min(1).max(20).optional().describe('Only customers who joined since then') })",
  '  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);',
  'templates.push({',
  '  ...queryOrderCount,',
  "  name: 'query_cohort_order_count',",
  '  compare: undefined,',
  '  input,',
  "  examples: [{ start_date: '2025-03-01', end_date: '2025-03-07' }, { start_date: '2025-03-01', end_date: '2025-03-07', cohort: 'first' }],",
  `  query: (db, args, ctx) => { const counted = queryOrderCount.query(db, args, ctx); return args.cohort === undefined ? counted : ${query}; },`,
  '});',
];

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
    // The billing trial's: a free-text company_name, served; a model could list or filter by name.
    name: 'an attribute over free text, its values undeclared',
    model: withProductName('{}'),
    message:
      "metrics of query_metrics: attribute product_title: its values are not bounded; declare values (a closed list), valuesFrom: { column, atMost } (labels such as categories, counted at start-up), identifier: { pattern, example } (a code such as a SKU) or scope (the caller's data scope); free text is no attribute",
    when: 'load',
  },
  {
    name: 'an attribute over free text, declared an identifier whose pattern accepts a space',
    model: withProductName(`{ identifier: { pattern: '^[A-Za-z0-9 ]+$', example: 'Blue Mug' } }`),
    message:
      'metrics of query_metrics: attribute product_title: identifier.pattern "^[A-Za-z0-9 ]+$" accepts nothing or a space, so it is free text; an identifier is a code (^[A-Z0-9-]{1,40}$, say), else declare values (a closed list), valuesFrom: { column, atMost } (labels such as categories, counted at start-up), identifier: { pattern, example } (a code such as a SKU) or scope (the caller\'s data scope); free text is no attribute',
    when: 'load',
  },
  {
    // Start-up counts the labels as the reader: the products' names are more than 5.
    name: 'an attribute over free text, declared as labels of at most 5 values',
    model: withProductName(`{ valuesFrom: { column: 'reporting.products.name', atMost: 5 } }`),
    message:
      'metrics of query_metrics: attribute product_title: valuesFrom reporting.products.name has more than 5 values, its declared atMost; a column of more labels than that is free text or an identifier: declare identifier: { pattern, example } for a code, else drop the attribute (raise atMost only for labels that truly are that many)',
    when: 'database',
  },
  {
    // The billing trial's: `cohort: "2019-01-01"` read seven years.
    name: 'a date smuggled in as a text input, cast to a date in SQL',
    cohort: 'counted.where(sql`${args.cohort}::date <= now()`)',
    message: `template query_cohort_order_count: input field cohort is text that its SQL reads as a date, so it escapes the engine's range of at most 90 days; ${DATE_INPUT_FIX}`,
    when: 'database',
  },
  {
    name: 'a date smuggled in as a text input, turned into a date by to_date',
    cohort: "counted.where(sql`to_date(${args.cohort}, 'YYYY-MM-DD') <= current_date`)",
    message: `template query_cohort_order_count: input field cohort is text that its SQL reads as a date, so it escapes the engine's range of at most 90 days; ${DATE_INPUT_FIX}`,
    when: 'database',
  },
  {
    // The billing trial's: 744 invoices from the rollup against 1,231 from the base rows, and doctor said OK.
    // The figures are counted here, as the admin, over the week of UTC days ending on the newest order's.
    name: 'a rollup whose measure counts its rows instead of summing them',
    model: `({ ...model, sources: model.sources.map((s) => (s.name === 'order_hours rollup' ? { ...s, measures: { ...s.measures, orders: { aggregate: 'count' } } } : s)) })`,
    message:
      "metrics of query_metrics: source order_hours rollup: its figures disagree with the base rows' over {week} (UTC): orders {rollupRows} against {orders}; a rollup's measure adds up what its rows store as the base rows measure it (a stored count is summed, aggregate: 'sum' of its count column, not counted); if the declaration is right, its rows have drifted: run querygate check-rollups, then its rebuild",
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
    pack: `({ rollups: sales.rollups.map((r) => (r.name === 'region_product_days' ? { ...r, measures: r.measures.map((m) => (m.name === 'revenue' ? { ...m, name: 'net_revenue' } : m)) } : r)) })`,
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
    // The project's own packages, for a template written with zod and kysely as an author writes one.
    await symlink(resolve('node_modules'), join(folder, 'node_modules'));
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
          ...(mistake.cohort === undefined ? [] : cohortTemplate(dist, mistake.cohort)),
          `export default definePack({ ...sales, name: 'mistaken_sales', templates, ...${mistake.pack ?? '{}'} });`,
        ].join('\n'),
      );
    }
  });

  /** The figures a message names, counted as the admin: {week}, {rollupRows} and {orders}. */
  const figures: Record<string, string> = {};
  beforeAll(async () => {
    const admin = new pg.Client({ connectionString: inject('adminUrl') });
    await admin.connect();
    try {
      const week =
        "(select date_trunc('day', max(ordered_at) at time zone 'UTC') - interval '6 days' as since," +
        " date_trunc('day', max(ordered_at) at time zone 'UTC') + interval '1 day' as before from sales.orders) w";
      const { rows } = await admin.query<{ since: string; last: string; rollup_rows: string; orders: string }>(
        `select to_char(w.since, 'YYYY-MM-DD') as since, to_char(w.before - interval '1 day', 'YYYY-MM-DD') as last,
                (select count(*) from sales.order_hours h
                  where h.hour >= w.since at time zone 'UTC' and h.hour < w.before at time zone 'UTC' and h.order_count > 0) as rollup_rows,
                (select count(*) from sales.orders o
                  where o.ordered_at >= w.since at time zone 'UTC' and o.ordered_at < w.before at time zone 'UTC') as orders
           from ${week}`,
      );
      const [row] = rows;
      Object.assign(figures, {
        week: `${row!.since}..${row!.last}`,
        rollupRows: row!.rollup_rows,
        orders: row!.orders,
      });
    } finally {
      await admin.end();
    }
  });
  const filled = (message: string): string => message.replace(/\{(\w+)\}/g, (_, key: string) => figures[key]!);

  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('serves a text input its SQL reads as text (the control: the cohort probe refuses only dates)', async () => {
    const control = join(folder, 'control.mjs');
    await writeFile(
      control,
      [
        `import { definePack } from ${JSON.stringify(resolve('dist', 'src/pack.js'))};`,
        `import sales from ${JSON.stringify(resolve('dist', 'pack/index.js'))};`,
        'const templates = [...sales.templates];',
        ...cohortTemplate((path) => JSON.stringify(resolve('dist', path)), "counted.where(sql`${args.cohort} <> ''`)"),
        "export default definePack({ ...sales, name: 'mistaken_sales', templates });",
      ].join('\n'),
    );
    const doctor = await runCli(['doctor'], { DATABASE_URL: inject('readerUrl'), QUERYGATE_PACKS: control });
    expect(`${doctor.stdout}${doctor.stderr}`).toContain(`PASS  ${DECLARATIONS_CHECK}`);
  }, 60_000);

  it.each(MISTAKES.map((m, i) => [m.name, i] as const))(
    '%s',
    async (_name, i) => {
      const mistake = { ...MISTAKES[i]!, message: filled(MISTAKES[i]!.message) };
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
        expect(said).toContain(`FAIL  ${DECLARATIONS_CHECK}`);
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
