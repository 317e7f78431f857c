/**
 * The start-up masking check (issue 8, item 5): a personal or id column reached anywhere inside a
 * selected expression, on any branch the arguments can select, must be declared with its treatment;
 * otherwise the registry refuses to build, naming the template, the output column and the source.
 * The bad templates are built here, as a new user would write them; nothing runs against a database.
 */
import { sql, type AliasableExpression, type ExpressionBuilder, type Kysely } from 'kysely';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { templates } from '../../queries/index.js';
import { queryRecentOrders } from '../../queries/query-recent-orders.js';
import { ordersInRange } from '../../pack/range-sql.js';
import type { ReportingDatabase } from '../../pack/schema.js';
import { oneOf } from '../../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../src/lib/date-range.js';
import { createRegistry, type AnyTemplate, type ColumnSpec, type QueryContext } from '../../src/registry/index.js';

// The probes reach into any table the test names; their builder's types are not the point here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyBuilder = ExpressionBuilder<any, any>;

const recent = queryRecentOrders as unknown as AnyTemplate;
const COMPUTED: ColumnSpec = { type: 'text', source: 'computed', treatment: 'plain' };

/** A template over orders joined to customers that selects one column, `contact`, declared as `declared`. */
function probe(contact: (eb: AnyBuilder) => AliasableExpression<unknown>, declared = COMPUTED): AnyTemplate {
  return {
    ...recent,
    name: 'query_probe',
    columns: { contact: declared },
    rowLimit: undefined,
    dataScope: undefined, // the probe's query applies no data scope
    query: (db, args, ctx) =>
      ordersInRange(db, resolveRange(args), ctx.timeZone)
        .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
        .select((eb) => [contact(eb).as('contact')]),
  };
}

/** A template whose whole query the test writes. */
function probeQuery(
  query: (db: Kysely<ReportingDatabase>, ctx: QueryContext) => ReturnType<AnyTemplate['query']>,
  declared = COMPUTED,
): AnyTemplate {
  return {
    ...recent,
    name: 'query_probe',
    columns: { contact: declared },
    rowLimit: undefined,
    dataScope: undefined, // the probe's query applies no data scope
    query: (db, _a, ctx) => query(db, ctx),
  };
}

const refusal = (source: string): RegExp =>
  new RegExp(
    `template query_probe: column contact selects ${source.replaceAll('.', '\\.')} inside an expression but declares source computed`,
  );

describe('item 5: the start-up check refuses a personal or id column wrapped in an expression', () => {
  it.each([
    ['a cast', (eb: AnyBuilder) => eb.cast('o.customer_id', 'text'), 'reporting.orders.customer_id'],
    ['coalesce', (eb: AnyBuilder) => eb.fn.coalesce('c.email_masked', sql.lit('')), 'reporting.customers.email_masked'],
    [
      'a concatenation',
      (eb: AnyBuilder) => eb('c.region', '||', eb.ref('c.phone_last4')),
      'reporting.customers.phone_last4',
    ],
    [
      'an aggregate over an expression',
      (eb: AnyBuilder) => eb.fn.min(eb.fn('lower', ['c.email_masked'])),
      'reporting.customers.email_masked',
    ],
    [
      'a subquery in the select list',
      (eb: AnyBuilder) =>
        eb
          .selectFrom('reporting.customers as c2')
          .select('c2.name_initials')
          .whereRef('c2.id', '=', 'o.customer_id')
          .limit(1),
      'reporting.customers.name_initials',
    ],
    ['a function call', (eb: AnyBuilder) => eb.fn('md5', [eb.cast('o.id', 'text')]), 'reporting.orders.id'],
    [
      'CASE',
      (eb: AnyBuilder) => eb.case().when('o.status', '=', 'paid').then(eb.ref('c.email_masked')).else('none').end(),
      'reporting.customers.email_masked',
    ],
    [
      'a window function',
      (eb: AnyBuilder) => eb.fn.agg('first_value', ['c.phone_last4']).over((w) => w.partitionBy('o.status')),
      'reporting.customers.phone_last4',
    ],
    [
      'a raw sql fragment with eb.ref',
      (eb: AnyBuilder) => sql<string>`split_part(${eb.ref('c.email_masked')}, '@', 2)`,
      'reporting.customers.email_masked',
    ],
    ['a whole row (sql.table)', () => sql<string>`to_json(${sql.table('c')})::text`, 'reporting.customers.id'],
  ])('%s', (_, contact, source) => {
    expect(() => createRegistry([probe(contact)])).toThrow(refusal(source));
  });

  it('raw SQL text that names a column instead of giving it through eb.ref or sql.ref', () => {
    expect(() => createRegistry([probe(() => sql<string>`o.customer_id::text`)])).toThrow(
      /template query_probe: column contact has raw SQL text "o\.customer_id::text" that names the qualified column or table o/,
    );
    expect(() => createRegistry([probe(() => sql<string>`lower(email_masked)`)])).toThrow(
      /column contact has raw SQL text "lower\(email_masked\)" that names email_masked/,
    );
    expect(() => createRegistry([probe(() => sql<string>`max(region)`)])).toThrow(/names region/);
  });

  it('raw SQL text whose string literal has backslash escapes, behind which a column could hide', () => {
    // PostgreSQL reads E'\'' || lower(email_masked) || '' as a string, then code naming email_masked.
    expect(() => createRegistry([probe(() => sql<string>`E'\\'' || lower(email_masked) || ''`)])).toThrow(
      /holds a string literal with backslash escapes/,
    );
    expect(() => createRegistry([probe(() => sql<string>`'a\\b'`)])).toThrow(/backslash escapes/);
  });

  it('a subquery in FROM that renames a personal column', () => {
    const template = probeQuery((db) =>
      db
        .selectFrom(db.selectFrom('reporting.customers as c').select(['c.email_masked as m', 'c.region']).as('x'))
        .select('x.m as contact'),
    );
    // A plain reference to the subquery's column: the source is the one behind it.
    expect(() => createRegistry([template])).toThrow(
      /column contact selects reporting\.customers\.email_masked but declares source computed/,
    );
  });

  it('a CTE with a column list, over a personal column', () => {
    const template = probeQuery((db) =>
      db
        .with('x(n)', (w) => w.selectFrom('reporting.customers as c').select('c.name_initials as n'))
        .selectFrom('x')
        .select((eb) => eb.fn('upper', ['x.n']).as('contact')),
    );
    expect(() => createRegistry([template])).toThrow(refusal('reporting.customers.name_initials'));
  });

  it('a second UNION branch', () => {
    const template = probeQuery((db, ctx) =>
      ordersInRange(db, resolveRange({ start_date: '2025-03-01', end_date: '2025-03-31' }), ctx.timeZone)
        .select('o.status as contact')
        .unionAll(db.selectFrom('reporting.customers as c').select('c.email_masked as contact')),
    );
    expect(() => createRegistry([template])).toThrow(
      /column contact selects reporting\.customers\.email_masked but declares source computed/,
    );
  });
});

describe('item 5: the start-up check covers every branch the arguments select', () => {
  const VIEWS = ['summary', 'detail'] as const;
  const input = z
    .strictObject({ ...dateRangeFields, view: oneOf(VIEWS, 'What to show') })
    .superRefine(checkDateRange, DATE_RANGE_ALWAYS);
  const branching: AnyTemplate = {
    ...recent,
    name: 'query_probe',
    input,
    // Every combination of its arguments is checked, not query_recent_orders' own list.
    checkedArguments: undefined,
    // Only the harmless branch has an example.
    examples: [{ start_date: '2025-03-01', end_date: '2025-03-31', view: 'summary' }],
    columns: { reference: COMPUTED },
    rowLimit: undefined,
    query: (db, args: z.infer<typeof input>, ctx) => {
      const orders = ordersInRange(db, resolveRange(args), ctx.timeZone);
      return args.view === 'detail'
        ? orders.select('o.customer_id as reference')
        : orders.select('o.status as reference');
    },
  };

  it('refuses a personal column on an enum value that no example reaches', () => {
    expect(() => createRegistry([branching])).toThrow(
      /template query_probe: column reference selects reporting\.orders\.customer_id but declares source computed.*"view":"detail"/,
    );
  });
});

describe('item 5: what the check accepts', () => {
  it('the five real templates, in every branch and both kinds of zone', () => {
    expect(createRegistry(templates).tools.map((t) => t.name)).toEqual([
      'query_order_count',
      'query_sales',
      'query_top_products',
      'query_recent_orders',
      'query_metrics',
    ]);
  });

  it('an expression over a personal column declared with its source and mask', () => {
    const masked = probe((eb) => eb.fn.coalesce('c.email_masked', sql.lit('')), {
      type: 'text',
      source: 'reporting.customers.email_masked',
      treatment: 'mask_email',
    });
    expect(() => createRegistry([masked])).not.toThrow();
  });

  it('a count of ids, which returns how many and never an id', () => {
    const counted = probe((eb) => eb.fn.count('o.customer_id').distinct(), {
      type: 'integer',
      source: 'computed',
      treatment: 'plain',
    });
    expect(() => createRegistry([counted])).not.toThrow();
  });

  it('but not two personal columns that need different masks in one value', () => {
    const mixed = probe((eb) => eb('c.email_masked', '||', eb.ref('c.phone_last4')), {
      type: 'text',
      source: ['reporting.customers.email_masked', 'reporting.customers.phone_last4'],
      treatment: 'mask_email',
    });
    expect(() => createRegistry([mixed])).toThrow(/column contact combines personal columns that need different masks/);
  });
});
