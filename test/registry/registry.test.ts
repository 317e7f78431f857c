/** Contract checks over every registered template, and the refusals that keep a bad template out. */
import { readFileSync } from 'node:fs';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { templates } from '../../queries/index.js';
import { queryRecentOrders } from '../../queries/query-recent-orders.js';
import type { ReportingDatabase } from '../../pack/schema.js';
import { ConfigError } from '../../src/lib/errors.js';
import { dayStart } from '../../src/lib/local-day.js';
import {
  createRegistry,
  isoTimestamp,
  roundMoney,
  TOOL_ANNOTATIONS,
  type AnyTemplate,
} from '../../src/registry/index.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { PROTOCOL_VERSIONS, VERSION } from '../../src/server.js';
import { CONTRACTED_SALES_QUERY_TOOLS } from '../support/tool-names.js';

const registry = createRegistry(templates);

describe('the registry', () => {
  it('lists the five contracted tools with unique names', () => {
    const names = registry.tools.map((t) => t.name);
    expect(names).toEqual(CONTRACTED_SALES_QUERY_TOOLS);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(registry.tools.map((t) => [t.name, t] as const))(
    '%s has a title, a usable description, annotations and schemas',
    (_, tool) => {
      expect(tool.title).toBeTruthy();
      expect(tool.description).toMatch(/Use it /);
      expect(tool.description).toMatch(/Example input: \{/);
      expect(tool.annotations).toMatchObject(TOOL_ANNOTATIONS);
      // Listed without additionalProperties: false (src/registry/tools.ts, listedInput); the whole schema keeps it.
      expect(tool.inputSchema).toMatchObject({ type: 'object' });
      expect(registry.argumentSchemas.get(tool.name)).toMatchObject({ type: 'object', additionalProperties: false });
      // The days or a period, never both, checked by the shared date range: neither is required alone.
      expect(Object.keys(tool.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(['start_date', 'end_date', 'period']),
      );
      expect(tool.inputSchema.required ?? []).not.toContain('start_date');
      expect(tool.outputSchema).toMatchObject({ type: 'object' });
    },
  );

  it('says revenue is net: in the revenue tools, and what net leaves out once, in the pack instructions', () => {
    for (const name of ['query_sales', 'query_top_products']) {
      expect(registry.tools.find((t) => t.name === name)!.description).toMatch(/\bnet revenue\b/i);
    }
    expect(salesPack.instructions).toContain('Revenue figures are net: cancelled and refunded orders are left out.');
    expect(registry.tools.find((t) => t.name === 'query_order_count')!.description).toContain(
      '(cancelled and refunded included)',
    );
  });

  it('keeps the server version equal to the package version', () => {
    expect(VERSION).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
  });

  it('speaks the protocol versions the SDK speaks, the 2025-11-25 specification first', () => {
    expect(PROTOCOL_VERSIONS[0]).toBe('2025-11-25');
    expect(PROTOCOL_VERSIONS[0]).toBe(LATEST_PROTOCOL_VERSION);
    expect([...PROTOCOL_VERSIONS]).toEqual(SUPPORTED_PROTOCOL_VERSIONS);
  });
});

describe('a template that breaks the contract is refused at start-up', () => {
  const recent = queryRecentOrders as unknown as AnyTemplate;
  const withColumns = (columns: AnyTemplate['columns']): AnyTemplate => ({ ...recent, columns });

  it('when it returns a personal column without its treatment', () => {
    const { customer_email: _email, ...rest } = recent.columns;
    expect(() =>
      createRegistry([
        withColumns({
          ...rest,
          customer_email: { type: 'text', source: 'reporting.customers.email_masked', treatment: 'plain' },
        }),
      ]),
    ).toThrow(/customer_email returns personal data .* must declare treatment "mask_email"/);
  });

  it('when it returns an internal id raw', () => {
    expect(() =>
      createRegistry([
        withColumns({
          ...recent.columns,
          order_ref: { type: 'text', source: 'reporting.orders.id', treatment: 'plain' },
        }),
      ]),
    ).toThrow(ConfigError);
  });

  it('when it declares the wrong treatment', () => {
    expect(() =>
      createRegistry([
        withColumns({
          ...recent.columns,
          customer_email: { type: 'text', source: 'reporting.customers.email_masked', treatment: 'mask_phone' },
        }),
      ]),
    ).toThrow(/must declare treatment "mask_email"/);
  });

  it('when a computed column looks personal', () => {
    expect(() =>
      createRegistry([
        withColumns({ ...recent.columns, customer_email: { type: 'text', source: 'computed', treatment: 'plain' } }),
      ]),
    ).toThrow(/looks personal/);
  });

  it('when it selects a personal column but declares it computed', () => {
    expect(() =>
      createRegistry([
        withColumns({ ...recent.columns, order_ref: { type: 'text', source: 'computed', treatment: 'plain' } }),
      ]),
    ).toThrow(/column order_ref selects reporting\.orders\.id but declares source computed/);
  });

  it('when it declares a source it does not select', () => {
    expect(() =>
      createRegistry([
        withColumns({
          ...recent.columns,
          customer_region: { type: 'text', source: 'reporting.orders.status', treatment: 'plain' },
        }),
      ]),
    ).toThrow(
      /column customer_region selects reporting\.customers\.region but declares source reporting\.orders\.status/,
    );
  });

  it('when it selects a column it does not declare', () => {
    const { customer_region: _region, ...rest } = recent.columns;
    expect(() => createRegistry([withColumns(rest)])).toThrow(/selects .*customer_region.* but declares/);
  });

  it('when an example does not validate', () => {
    expect(() =>
      createRegistry([{ ...recent, examples: [{ start_date: '2025-02-30', end_date: '2025-03-01' }] }]),
    ).toThrow(/example .* does not validate/);
  });

  it('when two tools share a name', () => {
    expect(() => createRegistry([recent, recent])).toThrow(/duplicate tool name/);
  });

  it('when it takes compare_to without saying how to compare, or the other way round', () => {
    const counting = templates.find((t) => t.name === 'query_order_count')!;
    const { compare: _compare, ...blind } = counting;
    expect(() => createRegistry([blind as AnyTemplate])).toThrow(/takes compare_to must declare compare\(\)/);
    expect(() => createRegistry([{ ...recent, compare: (current) => current }])).toThrow(
      /declares compare\(\) must take compare_to/,
    );
  });
});

describe('compiled SQL', () => {
  // Compiling needs a dialect, not a connection: nothing is sent to a database here.
  const db = new Kysely<ReportingDatabase>({ dialect: new PostgresDialect({ pool: new pg.Pool({ max: 1 }) }) });
  const hostile = "2025-01-01'; drop table sales.orders; --";

  it.each(templates.map((t) => [t.name, t] as const))('%s carries every value as a bind parameter', (_, template) => {
    const args = template.input.parse(sampleArgs(template));
    // The zone itself never reaches SQL (the configuration admits only zones Intl knows): the range's
    // first instant in it does, as a parameter.
    const compiled = template.query(db, args, { timeZone: 'Europe/Paris' }).limit(101).compile();
    const firstInstant = dayStart(args.start_date, 'Europe/Paris').sql;
    expect(firstInstant).toMatch(/^2025-..-..T23:00:00/); // Paris midnight is 23:00 or 22:00 UTC the day before
    expect(compiled.parameters).toContain(firstInstant);
    expect(compiled.parameters).toContain(101);
    expect(compiled.sql).not.toContain('Europe/Paris');
    expect(compiled.sql).not.toContain(args.start_date.slice(0, 4));
    expect(compiled.sql).toMatch(/"reporting"\."(orders|order_hours|product_days|region_days)"/);
    expect(compiled.sql).not.toMatch(/"sales"\./);
  });

  it('refuses a hostile date before any SQL is built', () => {
    for (const template of templates) {
      expect(template.input.safeParse({ ...sampleArgs(template), start_date: hostile }).success).toBe(false);
    }
  });
});

describe('timestamps as PostgreSQL writes them', () => {
  // The oracle is the JS Date parser reading the same instant written as ISO 8601 with its offset.
  it.each([
    ['2026-06-30 12:34:56.789+00', '2026-06-30T12:34:56.789+00:00'],
    ['2026-06-30 12:34:56+00', '2026-06-30T12:34:56+00:00'],
    ['2026-06-30 12:34:56.5+00', '2026-06-30T12:34:56.500+00:00'],
    ['2026-06-30 02:04:05.123+05:30', '2026-06-30T02:04:05.123+05:30'],
    ['2026-12-31 22:00:00-03', '2026-12-31T22:00:00-03:00'],
    ['1900-01-01 00:00:00+00:09:21', '1900-01-01T00:00:00+00:09:21'.slice(0, 19) + '+00:09'],
  ])('%s', (text, iso) => {
    const expected = iso.endsWith('+00:09') // Date cannot read an offset with seconds: subtract the 21 s by hand
      ? new Date(Date.parse(iso) - 21_000).toISOString()
      : new Date(iso).toISOString();
    expect(isoTimestamp(text)).toBe(expected);
  });

  it('truncates microseconds to milliseconds, as a JS Date holds them', () => {
    expect(isoTimestamp('2026-06-30 12:34:56.789999+00')).toBe('2026-06-30T12:34:56.789Z');
  });

  it('refuses text in another DateStyle instead of guessing', () => {
    expect(() => isoTimestamp('Tue Jun 30 12:34:56.789 2026 UTC')).toThrow(ConfigError);
    expect(() => isoTimestamp('30/06/2026 12:34:56 UTC')).toThrow(ConfigError);
  });
});

describe('money as PostgreSQL writes it', () => {
  // Rounded to cents half away from zero, as PostgreSQL's round(x, 2) does; the expected values are
  // worked out by hand from the decimal text.
  it.each([
    ['105.48', 105.48],
    ['7', 7],
    ['0.10', 0.1],
    ['-12.5', -12.5],
    ['3.', 3],
    ['1.005', 1.01],
    ['2.675', 2.68],
    ['-1.005', -1.01],
    ['0.004', 0],
    ['19.9949', 19.99],
    ['99999999.995', 100000000],
  ])('%s', (text, expected) => {
    expect(roundMoney(text)).toBe(expected);
  });

  it('refuses text that is not a decimal number', () => {
    expect(() => roundMoney('1,5')).toThrow(ConfigError);
    expect(() => roundMoney('NaN')).toThrow(ConfigError);
  });
});

function sampleArgs(template: AnyTemplate): Record<string, unknown> {
  const base = { start_date: '2025-03-01', end_date: '2025-03-31' };
  const properties = registry.tools.find((t) => t.name === template.name)!.inputSchema.properties ?? {};
  if ('metrics' in properties) return { ...base, metrics: ['revenue'], group_by: ['week'] };
  return 'group_by' in properties ? { ...base, group_by: 'week' } : base;
}
