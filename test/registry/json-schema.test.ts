/**
 * The listed JSON schemas leave out the generator's noise (src/registry/tools.ts) on the claim that
 * the same values pass: held here against zod's own JSON schema, both compiled by ajv, over values
 * on each side of every rule the compaction touches. Outputs drop `additionalProperties: false` and
 * `minimum`, which does admit an unknown key and a negative count; that is why only outputs drop them
 * (their answers are parsed by the server's zod schema before they are sent).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dateRangeFields } from '../../src/lib/date-range.js';
import { jsonSchema } from '../../src/registry/tools.js';

const shape = {
  count: z.number().int().nonnegative(),
  signed: z.number().int(),
  status: z.enum(['paid', 'refunded']).nullable(),
  flag: z.literal(true).optional(),
  note: z.string().nullable(),
  total: z.object({ currency: z.string(), amount: z.number() }).nullable(),
  scope: z.record(z.string(), z.array(z.string())).optional(),
};

const values: unknown[] = [
  { count: 0, signed: -3, status: 'paid', note: 'x', total: { currency: 'EUR', amount: 1 } },
  { count: 2, signed: 0, status: null, note: null, total: null, flag: true, scope: { region: ['Europe'] } },
  { count: -1, signed: 0, status: 'paid', note: null, total: null },
  { count: 1.5, signed: 0, status: 'paid', note: null, total: null },
  { count: 1, signed: 0, status: 'pending', note: null, total: null },
  { count: 1, signed: 0, status: 'paid', note: 3, total: null },
  { count: 1, signed: 0, status: 'paid', note: null, total: { currency: 'EUR' } },
  { count: 1, signed: 0, status: 'paid', note: null, total: 'EUR' },
  { count: 1, signed: 0, status: 'paid', note: null, total: null, flag: false },
  { count: 1, signed: 0, status: 'paid', note: null, total: null, scope: { region: 'Europe' } },
  { count: 1, signed: 0, note: null, total: null },
  { count: 1, signed: 0, status: 'paid', note: null, total: null, extra: 1 },
];

const compile = (schema: unknown): ((value: unknown) => boolean) => {
  const validate = new Ajv2020({ strict: false }).compile(schema as object);
  return (value) => validate(value) as boolean;
};

describe('the listed JSON schema', () => {
  for (const io of ['input', 'output'] as const) {
    it(`accepts and refuses the values zod's own ${io} schema does, and is smaller`, () => {
      const schema = io === 'input' ? z.strictObject(shape) : z.object(shape);
      const own = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
      const listed = jsonSchema(schema, io);
      const [before, after] = [compile(own), compile(listed)];
      const outcomes = values.map((value) => [before(value), after(value)]);
      // An output lists no additionalProperties: false and no minimum: the values with an unknown key and
      // with a negative count are its only differences.
      const differing = values.filter((_, i) => outcomes[i]![0] !== outcomes[i]![1]);
      expect(differing).toEqual(io === 'input' ? [] : [values[2], values.at(-1)]);
      expect(outcomes.filter(([b]) => b).length).toBeGreaterThanOrEqual(2);
      expect(outcomes.filter(([b]) => !b).length).toBeGreaterThanOrEqual(8);
      expect(JSON.stringify(listed).length).toBeLessThan(JSON.stringify(own).length * 0.75);
      expect(JSON.stringify(listed)).not.toMatch(/anyOf|9007199254740991|propertyNames/);
    });
  }

  it("leaves out of an output an enum the tool's input lists already, and keeps every other", () => {
    const output = z.object(shape);
    const input = jsonSchema(z.strictObject({ status: z.enum(['paid', 'refunded']).optional() }), 'input');
    const pending = { count: 1, signed: 0, status: 'pending', note: null, total: null };
    expect(compile(jsonSchema(output, 'output'))(pending)).toBe(false);
    const echoed = jsonSchema(output, 'output', input);
    expect(compile(echoed)(pending)).toBe(true);
    expect((echoed.properties as Record<string, unknown>).status).toEqual({ type: ['string', 'null'] });
    const other = jsonSchema(z.strictObject({ status: z.enum(['paid']).optional() }), 'input');
    expect(compile(jsonSchema(output, 'output', other))(pending)).toBe(false);
  });

  it("lists the engine's days as format date, which a validator asserting formats holds to the days zod takes", () => {
    const schema = z.strictObject({ start_date: dateRangeFields.start_date });
    const listed = jsonSchema(schema, 'input');
    expect(listed.properties).toEqual({ start_date: { type: 'string', format: 'date' } });
    const ajv = new Ajv2020({ strict: false });
    formats.default(ajv);
    const validate = ajv.compile(listed);
    const days = ['2025-03-01', '2024-02-29', '0001-01-01', '9999-12-31'];
    const notDays = [
      '2025-02-29',
      '2025-02-30',
      '2025-13-01',
      '2025-3-1',
      '20250301',
      '2025-03-01T00:00:00Z',
      'March 1',
    ];
    for (const day of [...days, ...notDays]) {
      expect(validate({ start_date: day }), day).toBe(days.includes(day));
      expect(schema.safeParse({ start_date: day }).success, day).toBe(days.includes(day));
    }
    // The one difference: RFC 3339 has a year 0, PostgreSQL (so the server) has not.
    expect(validate({ start_date: '0000-01-01' })).toBe(true);
    expect(schema.safeParse({ start_date: '0000-01-01' }).success).toBe(false);
  });
});
