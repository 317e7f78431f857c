/**
 * Issue 19, section 3: a pack author's mistakes are refused, not served. A readable column no pack
 * classifies stops `serve` and fails `doctor`; a column declared not personal whose name or values
 * look personal is flagged. Each against a database of the test's own, through the built CLI.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql, type RawBuilder } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import { defineTemplate } from '../../pack/kit.js';
import { ConfigError } from '../../src/lib/errors.js';
import { oneOf } from '../../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../src/lib/date-range.js';
import { startOfDay } from '../../src/db/range-sql.js';
import { createRegistry, hiddenByDataScope, type AnyTemplate } from '../../src/registry/index.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { checkReaderSafety, readerScopeOf, type SafetyCheck } from '../../src/db/doctor/index.js';
import { runCli, startCli } from '../support/cli.js';
import { readerUrlFor } from '../support/packs.js';
import { checkNamed, parseChecks } from '../support/doctor-report.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const CLASSIFIED = 'every readable column is classified by its pack';
const LOOKALIKES = 'columns declared not personal do not look personal';

/** The billing trial's account managers: raw emails, raw phone numbers and full names. */
const GIVEN = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald'];
const FAMILY = ['Smith', 'Jones'];
const MANAGERS = GIVEN.flatMap((given, i) =>
  FAMILY.map((family, j) => ({
    email: `manager${16 + 2 * i + j}.${family.toLowerCase()}@ourcompany.example`,
    phone: `+1 (555) 010-${2345 + 2 * i + j}`,
    name: `${given} ${family}`,
  })),
);

function named(checks: readonly SafetyCheck[], name: string): SafetyCheck {
  const found = checks.filter((c) => c.name === name);
  expect(found, `the check "${name}" in ${JSON.stringify(checks.map((c) => c.name))}`).toHaveLength(1);
  return found[0]!;
}

describe('19.3 a readable column the pack does not classify', () => {
  let scratch: ScratchDatabase;
  const reader = `"${DEFAULT_READER_ROLE}"`;

  beforeAll(async () => {
    scratch = await createScratchDatabase('i19_classify');
    const { admin } = scratch;
    await admin.query(
      'create table sales.account_managers (id bigint primary key, email text not null, phone text not null, full_name text not null)',
    );
    await admin.query(
      `insert into sales.account_managers
       select n, m.email, m.phone, m.full_name
         from unnest($1::text[], $2::text[], $3::text[]) with ordinality as m (email, phone, full_name, n)`,
      [MANAGERS.map((m) => m.email), MANAGERS.map((m) => m.phone), MANAGERS.map((m) => m.name)],
    );
    // The trial's mistake: a reader view passing the manager's email through raw, in no declaration.
    await admin.query(
      `create view reporting.account_managers as
       select email as account_manager_email, phone as hotline, full_name as manager_name, full_name as escalation,
              to_char(date '2025-03-01' + id::int, 'YYYY-MM-DD') as contract_day,
              id as manager_id, left(full_name, 1) || '.' as manager_initials
         from sales.account_managers`,
    );
    await admin.query(`grant select on reporting.account_managers to ${reader}`);
  }, 120_000);

  afterAll(async () => {
    await scratch?.drop();
  });

  it('19.3.1 doctor fails an unclassified readable column, naming it and the line to add, and serve refuses to start', async () => {
    // The premise, through the admin connection: the reader reads the raw emails.
    const { rows } = await scratch.admin.query<{ readable: boolean; raw: number }>(
      `select has_column_privilege($1, 'reporting.account_managers', 'account_manager_email', 'SELECT') as readable,
              (select count(*)::int from sales.account_managers where email like '%@%') as raw`,
      [DEFAULT_READER_ROLE],
    );
    expect(rows[0]).toEqual({ readable: true, raw: MANAGERS.length });
    const key = 'reporting.account_managers.account_manager_email';
    expect(Object.keys(salesPack.personalColumns)).not.toContain(key);

    const doctor = await runCli(['doctor'], { DATABASE_URL: scratch.readerUrl });
    expect(doctor.code, doctor.stderr).toBe(1);
    const checks = parseChecks(doctor.stdout);
    // The new columns are the only reason it fails: everything else of the scratch database is safe.
    expect(checks.filter((c) => c.status === 'FAIL').map((c) => c.name)).toEqual([CLASSIFIED]);
    const check = checkNamed(checks, CLASSIFIED);
    expect(check.detail).toBe(
      `(not classified: ${['account_manager_email', 'contract_day', 'escalation', 'hotline', 'manager_id', 'manager_initials', 'manager_name'].map((c) => `reporting.account_managers.${c}`).join(', ')})`,
    );
    expect(check.fix).toBe(
      [
        `add to its pack's personalColumns: '${key}': { kind: 'email' },`,
        ...['contract_day', 'escalation', 'hotline'].map(
          (c) =>
            `add to its pack's notPersonalColumns: 'reporting.account_managers.${c}', (or, if it is personal, personalColumns: 'reporting.account_managers.${c}': { kind: 'email' | 'phone' | 'name' | 'internal_id' },)`,
        ),
        // An id and initials are never offered as not personal (the billing trial's doctor offered both).
        "add to its pack's personalColumns: 'reporting.account_managers.manager_id': { kind: 'internal_id', entity: 'manager' },",
        "add to its pack's personalColumns: 'reporting.account_managers.manager_initials': { kind: 'name' },",
        "add to its pack's personalColumns: 'reporting.account_managers.manager_name': { kind: 'name' },",
      ].join('; '),
    );

    const serve = await runCli(['serve'], { DATABASE_URL: scratch.readerUrl, QUERYGATE_TOKEN_KEY: 'k'.repeat(20) });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('refusing to serve');
    expect(serve.stderr).toContain(`not classified: ${key}`);
  }, 120_000);

  it('19.3.1 passes once every column is classified, as the shipped pack classifies its own', async () => {
    const scope = readerScopeOf([salesPack]);
    const checks = await checkReaderSafety(scratch.readerUrl, {
      ...scope,
      personal: {
        ...scope.personal,
        'reporting.account_managers.account_manager_email': { kind: 'email' },
        'reporting.account_managers.hotline': { kind: 'phone' },
        'reporting.account_managers.manager_name': { kind: 'name' },
        'reporting.account_managers.escalation': { kind: 'name' },
        'reporting.account_managers.manager_id': { kind: 'internal_id', entity: 'manager' },
        'reporting.account_managers.manager_initials': { kind: 'name' },
      },
      notPersonal: [...scope.notPersonal!, 'reporting.account_managers.contract_day'],
    });
    expect(named(checks, CLASSIFIED)).toEqual({ name: CLASSIFIED, ok: true });
    // Declared personal, the raw values are then what the masking check fails.
    expect(named(checks, 'declared personal columns are masked at the source').ok).toBe(false);
  });

  it('19.3.2 doctor flags columns declared not personal whose name or values look like an email, phone or name', async () => {
    // What the sample holds, by arithmetic on the rows inserted: every email and phone is raw.
    const emails = MANAGERS.filter((m) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(m.email)).length;
    const phones = MANAGERS.filter((m) => m.phone.replace(/\D/g, '').length >= 7).length;
    const people = new Set(MANAGERS.map((m) => m.name).filter((n) => /^\p{Lu}\p{Ll}+ \p{Lu}\p{Ll}+$/u.test(n))).size;
    expect([emails, phones, people]).toEqual([12, 12, 12]);
    const escalation = `reporting.account_managers.escalation: ${people} of ${people} distinct values sampled look like a person's name`;
    const scope = readerScopeOf([salesPack]);
    // The manager's id and initials, personal in any scope here.
    const ids = {
      'reporting.account_managers.manager_id': { kind: 'internal_id', entity: 'manager' },
      'reporting.account_managers.manager_initials': { kind: 'name' },
    } as const;
    const lookalikeScope = {
      ...scope,
      personal: { ...scope.personal, ...ids },
      notPersonal: [
        ...scope.notPersonal!,
        'reporting.account_managers.account_manager_email',
        'reporting.account_managers.hotline',
        'reporting.account_managers.manager_name',
        'reporting.account_managers.escalation',
        // Days as text: digits and dashes, but no phone.
        'reporting.account_managers.contract_day',
      ],
    };
    const checks = await checkReaderSafety(scratch.readerUrl, lookalikeScope, { sampleValues: true });
    expect(named(checks, CLASSIFIED).ok).toBe(true);
    const check = named(checks, LOOKALIKES);
    expect(check.ok).toBe(false);
    expect(check.detail).toBe(
      [
        'reporting.account_managers.account_manager_email is named like an email',
        `reporting.account_managers.account_manager_email: ${emails} of ${MANAGERS.length} sampled values look like an email`,
        `reporting.account_managers.hotline: ${phones} of ${MANAGERS.length} sampled values look like a phone`,
        escalation,
        "reporting.account_managers.manager_name is named like a person's name",
      ].join('; '),
    );
    expect(check.fix).toContain('personalColumns with its kind');
    // serve's start judges names only: it reads no values (a writer's lock cannot hold it up).
    expect(named(await checkReaderSafety(scratch.readerUrl, lookalikeScope), LOOKALIKES).detail).toBe(
      [
        'reporting.account_managers.account_manager_email is named like an email',
        "reporting.account_managers.manager_name is named like a person's name",
      ].join('; '),
    );

    // A person's name, told by the column's name or its values, is a warning, not a failure.
    const byName = await checkReaderSafety(
      scratch.readerUrl,
      {
        ...scope,
        personal: {
          ...scope.personal,
          'reporting.account_managers.account_manager_email': { kind: 'email' },
          'reporting.account_managers.hotline': { kind: 'phone' },
          ...ids,
        },
        notPersonal: [
          ...scope.notPersonal!,
          'reporting.account_managers.manager_name',
          'reporting.account_managers.escalation',
          'reporting.account_managers.contract_day',
        ],
      },
      { sampleValues: true },
    );
    expect(named(byName, LOOKALIKES)).toMatchObject({
      ok: true,
      warning: true,
      detail: `${escalation}; reporting.account_managers.manager_name is named like a person's name`,
    });
  });
});

describe('19.3 the shipped packs, as doctor checks them over their seeded test databases', () => {
  it.each([
    ['sales', inject('readerUrl'), {}],
    [
      'support desk',
      readerUrlFor(supportDeskPack),
      { QUERYGATE_PACKS: resolve('dist/examples/support-desk/pack/index.js') },
    ],
  ] as const)(
    '19.3.1 and 19.3.2 %s: every readable column classified, none declared not personal looks personal',
    async (_, url, env) => {
      const doctor = await runCli(['doctor'], { DATABASE_URL: url, ...env });
      expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
      const checks = parseChecks(doctor.stdout);
      expect(checkNamed(checks, CLASSIFIED)).toEqual({ status: 'PASS', name: CLASSIFIED, detail: '' });
      expect(checkNamed(checks, LOOKALIKES)).toEqual({ status: 'PASS', name: LOOKALIKES, detail: '' });
    },
    120_000,
  );
});

// ---------------------------------------------------------------------------------------------------
// Templates a pack author got wrong, refused at start-up with one line naming the template and the fix.

const STATUSES = ['paid', 'shipped'] as const;
const UNITS = ['day', 'week'] as const;

interface OrderArgs {
  start_date: string;
  end_date: string;
  status: string;
  unit?: string;
}

/** A template as a new pack author writes one: the engine's range, a status, orders counted. */
function orderCount(overrides: {
  input?: z.ZodType;
  examples?: readonly [Record<string, unknown>, ...Record<string, unknown>[]];
  where?: (args: { status: string; unit?: string }) => RawBuilder<boolean>;
  rest?: Record<string, unknown>;
}): AnyTemplate {
  const input =
    overrides.input ??
    z
      .strictObject({ ...dateRangeFields, status: oneOf(STATUSES, 'Which orders') })
      .superRefine(checkDateRange, DATE_RANGE_ALWAYS);
  const template = defineTemplate<OrderArgs, { order_count: number }>({
    name: 'query_status_count',
    title: 'Orders of a status',
    description: 'How many orders of one status were placed in a date range of at most 90 days.',
    input: input as z.ZodType<OrderArgs>,
    examples: overrides.examples ?? [{ start_date: '2025-03-01', end_date: '2025-03-31', status: 'paid' }],
    output: z.object({ order_count: z.number() }),
    columns: { order_count: { type: 'integer', source: 'computed', treatment: 'plain' } },
    query: (db, args, ctx) => {
      const range = resolveRange(args);
      return db
        .selectFrom('reporting.orders as o')
        .where('o.ordered_at', '>=', startOfDay(range.startDate, ctx.timeZone))
        .where('o.ordered_at', '<', startOfDay(range.endExclusive, ctx.timeZone))
        .where(overrides.where ? overrides.where(args) : sql<boolean>`${sql.ref('o.status')} = ${args.status}`)
        .select((eb) => eb.fn.countAll<string>().as('order_count'));
    },
    present: (rows) => ({ order_count: Number(rows[0]?.order_count ?? 0) }),
  });
  return { ...template, ...overrides.rest } as AnyTemplate;
}

/** The one-line refusal createRegistry gives, or undefined when it builds. */
function refusal(template: AnyTemplate): string | undefined {
  try {
    createRegistry([template]);
    return undefined;
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(ConfigError);
    expect((err as Error).message).not.toContain('\n');
    return (err as Error).message;
  }
}

describe('19.3 start-up refuses what a template gets wrong', () => {
  it('the well-made template builds, so each refusal below is the mistake alone', () => {
    expect(refusal(orderCount({}))).toBeUndefined();
  });

  it('19.3.4 refuses sql.lit on an enum argument', () => {
    const message = refusal(
      orderCount({ where: (args) => sql<boolean>`${sql.ref('o.status')} = ${sql.lit(args.status)}` }),
    );
    expect(message).toMatch(
      /^template query_status_count: argument status \("(paid|shipped)"\) is written into the SQL text/,
    );
    expect(message).toContain('bind parameter');
  });

  it('19.3.4 refuses an enum value spliced unquoted with sql.raw', () => {
    const input = z
      .strictObject({ ...dateRangeFields, status: oneOf(STATUSES, 'Which orders'), unit: oneOf(UNITS, 'How recent') })
      .superRefine(checkDateRange, DATE_RANGE_ALWAYS);
    const message = refusal(
      orderCount({
        input,
        examples: [{ start_date: '2025-03-01', end_date: '2025-03-31', status: 'paid', unit: 'day' }],
        where: (args) =>
          sql<boolean>`${sql.ref('o.ordered_at')} > now() - ${sql.raw(`interval '1 ${args.unit ?? 'day'}'`)}`,
      }),
    );
    expect(message).toMatch(
      /^template query_status_count: argument unit \("(day|week)"\) is written into the SQL text/,
    );
  });

  it('19.3.4 serves a branch the builder chooses by an enum value', () => {
    const message = refusal(
      orderCount({
        where: (args) =>
          args.status === 'paid'
            ? sql<boolean>`${sql.ref('o.status')} = ${'paid'} and ${sql.ref('o.total_amount')} > ${0}`
            : sql<boolean>`${sql.ref('o.status')} = ${args.status}`,
      }),
    );
    expect(message).toBeUndefined();
  });

  it("19.3.3 refuses a template's own date fields, which would answer for any range", () => {
    const input = z.strictObject({
      start_date: z.iso.date(),
      end_date: z.iso.date(),
      status: oneOf(STATUSES, 'Which'),
    });
    expect(input.safeParse({ start_date: '2024-01-01', end_date: '2026-12-01', status: 'paid' }).success).toBe(true);
    expect(refusal(orderCount({ input }))).toBe(
      "template query_status_count: input field start_date is not the engine's own; take dates through the engine's range: spread dateRangeFields (src/lib/date-range.ts) into the input and attach .superRefine(checkDateRange, DATE_RANGE_ALWAYS)",
    );
  });

  it('19.3.3 refuses date fields under other names', () => {
    const input = z
      .strictObject({ ...dateRangeFields, status: oneOf(STATUSES, 'Which'), placed_since: z.iso.date().optional() })
      .superRefine(checkDateRange, DATE_RANGE_ALWAYS);
    expect(refusal(orderCount({ input }))).toMatch(
      /^template query_status_count: input field placed_since looks like a date, and the engine holds dates to at most 90 days only through its own range; /,
    );
  });

  it("19.3.3 and 19.3.5 refuse the engine's fields without the range refinement, in one line instead of resolveRange's TypeError", () => {
    const input = z.strictObject({ ...dateRangeFields, status: oneOf(STATUSES, 'Which') });
    // The premise: without the refinement the schema lets through 91 days, and a call with no dates at all.
    expect(input.safeParse({ start_date: '2025-01-01', end_date: '2025-04-01', status: 'paid' }).success).toBe(true);
    expect(() => resolveRange({})).toThrow(TypeError);
    expect(refusal(orderCount({ input }))).toBe(
      "template query_status_count: input accepts 2025-01-01..2025-04-01, 91 days: the range refinement is missing; take dates through the engine's range: spread dateRangeFields (src/lib/date-range.ts) into the input and attach .superRefine(checkDateRange, DATE_RANGE_ALWAYS)",
    );
  });

  it("19.3.5 a builder's own TypeError at start-up becomes a one-line refusal naming the call", () => {
    const message = refusal(
      orderCount({
        where: (args) => {
          if (args.status === 'shipped') throw new TypeError('shippedSince called before validation');
          return sql<boolean>`${sql.ref('o.status')} = ${args.status}`;
        },
      }),
    );
    expect(message).toMatch(
      /^template query_status_count: query\(\) throws "TypeError: shippedSince called before validation" \(arguments \{.*"status":"shipped".*\}, time zone UTC\); every call its input schema accepts must build/,
    );
  });

  it('19.3.5 a missing description is a one-line refusal, not a TypeError', () => {
    expect(refusal(orderCount({ rest: { description: undefined } }))).toBe(
      'template query_status_count: description is missing; give it one: a text for a model choosing the tool',
    );
  });

  it("19.3.5 a column declared as 'plain' says how to declare it, not that it declares no treatment", () => {
    expect(refusal(orderCount({ rest: { columns: { order_count: 'plain' } } }))).toBe(
      "template query_status_count: column order_count is declared as \"plain\"; declare it as { type, source, treatment }, e.g. order_count: { type: 'text', source: 'computed', treatment: 'plain' }",
    );
  });
});

// ---------------------------------------------------------------------------------------------------
// A template that applies no data scope disappears for scoped callers: said at start-up and by doctor.

describe('19.3.6 what a data scope hides', () => {
  let folder: string;
  let module: string;
  const unscoped = 'query_top_products';
  // Computed from the pack's own declarations: the template, and every report that runs it (and its job tool).
  const hidden = [
    unscoped,
    ...(salesPack.reports ?? []).filter((r) => r.uses.some((t) => t.name === unscoped)).map((r) => r.name),
  ];

  beforeAll(async () => {
    expect(hidden).toEqual([unscoped, 'weekly_sales_report']);
    folder = await mkdtemp(join(tmpdir(), 'querygate-unscoped-pack-'));
    module = join(folder, 'unscoped-pack.mjs');
    // The sales pack with one template that forgot its dataScope, as a pack author would ship it.
    await writeFile(
      module,
      [
        `import { definePack } from ${JSON.stringify(resolve('dist/src/pack.js'))};`,
        `import sales from ${JSON.stringify(resolve('dist/pack/index.js'))};`,
        `const templates = sales.templates.map((t) => (t.name === '${unscoped}' ? { ...t, dataScope: [] } : t));`,
        'const reports = sales.reports.map((r) => ({ ...r, uses: r.uses.map((u) => templates.find((t) => t.name === u.name)) }));',
        "export default definePack({ ...sales, name: 'unscoped_sales', templates, reports });",
      ].join('\n'),
    );
  });

  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it('19.3.6 doctor lists what the region scope hides; the shipped pack hides nothing', async () => {
    const doctor = await runCli(['doctor'], { DATABASE_URL: inject('readerUrl'), QUERYGATE_PACKS: module });
    const check = checkNamed(
      parseChecks(doctor.stdout),
      'data scope region (pack unscoped_sales) hides no tool from a caller scoped on it',
    );
    expect(check.status).toBe('WARN');
    expect(check.detail).toBe(`(hides ${hidden.join(', ')})`);
    expect(check.fix).toContain("dataScope: ['region']");

    const registry = createRegistry(salesPack.templates, { reports: salesPack.reports ?? [], jobs: true });
    expect([...hiddenByDataScope(registry)]).toEqual([['region', []]]);
  }, 120_000);

  it('19.3.6 serve says once at start-up, on stderr, which tools a region-scoped caller will not see', async () => {
    const cli = startCli(['serve'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_PACKS: module,
      QUERYGATE_TOKEN_KEY: 'k'.repeat(20),
    });
    try {
      await cli.waitForLog(/"serving"|serving/);
      const lines = cli
        .stderr()
        .split('\n')
        .filter((line) => line.includes('data scope region: hidden from callers scoped on it'));
      expect(lines).toHaveLength(1);
      for (const tool of hidden) expect(lines[0]).toContain(tool);
      expect(lines[0]).not.toContain('query_sales"');
    } finally {
      await cli.stop();
    }
  }, 120_000);
});
