/**
 * query_recent_orders through a real MCP client, against rows read here by SQL over the raw sales
 * tables through the admin connection: no customer field unless one is named (and then only that one,
 * masked, and the statement reads no other), the filters of region, category and status alone and
 * together, a region filter under a caller's region scope, and the refusals, each naming its field.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Statement } from '../../src/db/connect.js';
import type { Caller } from '../../src/registry/index.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { TEST_SEED } from '../support/database.js';
import { createTokenizer } from '../../src/lib/masking.js';

/** The last 90 days of the seeded data. */
const RANGE = { start_date: '2025-04-02', end_date: TEST_SEED.until } as const;
const FROM = '2025-04-02T00:00:00Z';
const BEFORE = '2025-07-01T00:00:00Z';
const ORDER_KEYS = ['currency', 'order_ref', 'ordered_at', 'status', 'total_amount'];
const TWO_REGIONS: Caller = { id: 'rep-two', dataScope: { region: ['Europe', 'Asia Pacific'] } };
const token = createTokenizer('test-token-key');

interface Row {
  order_ref: string;
  ordered_at: string;
  status: string;
  currency: string;
  total_amount: number;
  [customerField: string]: unknown;
}
interface Answer {
  rows: Row[];
  row_count: number;
  truncated: boolean;
}
/** A raw order with its customer, as the admin reads it. */
interface RawOrder {
  id: string;
  customer_id: string;
  ordered_at: Date;
  status: string;
  currency: string;
  total: string;
  name: string;
  email: string;
  phone: string;
  region: string;
}

let admin: pg.Client;
let everyone: Harness;
let scoped: Harness;
/** The statements each harness sent, observed on the real reader. */
const sent = new Map<Harness, Statement[]>();

beforeAll(async () => {
  admin = await connectAdmin();
  everyone = await startHarness();
  scoped = await startHarness({ caller: TWO_REGIONS });
  for (const harness of [everyone, scoped]) {
    const statements: Statement[] = [];
    const execute = harness.reader.execute.bind(harness.reader);
    harness.reader.execute = (query, signal) => (statements.push(query), execute(query, signal));
    sent.set(harness, statements);
  }
});
afterAll(async () => {
  await everyone?.close();
  await scoped?.close();
  await admin?.end();
});

/**
 * The newest raw orders of the range, with their customers, newest first: of the regions, categories
 * and statuses given (each null for any).
 */
async function newest(
  limit: number,
  only: { regions?: string[]; categories?: string[]; statuses?: string[] } = {},
): Promise<RawOrder[]> {
  const { rows } = await admin.query<RawOrder>(
    `select o.id::text, o.customer_id::text, o.ordered_at, o.status, o.currency, o.total_amount::text as total,
            c.name, c.email, c.phone, c.region
       from sales.orders o join sales.customers c on c.id = o.customer_id
      where o.ordered_at >= $1 and o.ordered_at < $2
        and ($3::text[] is null or c.region = any($3))
        and ($4::text[] is null or exists (select 1 from sales.order_items i join sales.products p on p.id = i.product_id
                                            where i.order_id = o.id and p.category = any($4)))
        and ($5::text[] is null or o.status = any($5))
      order by o.ordered_at desc, o.id desc
      limit $6`,
    [FROM, BEFORE, only.regions ?? null, only.categories ?? null, only.statuses ?? null, limit],
  );
  return rows;
}

/** The order fields of a row, as the tool should return them. */
function orderFields(order: RawOrder): Row {
  return {
    order_ref: token('order', order.id),
    ordered_at: order.ordered_at.toISOString(),
    status: order.status,
    currency: order.currency,
    total_amount: Number(order.total),
  };
}

/** The statement a call sent (the last one of its harness). */
const lastStatement = (harness: Harness): Statement => sent.get(harness)!.at(-1)!;

describe('customer fields', () => {
  it('are left out by default: the rows carry the order alone, and the statement reads no customer', async () => {
    const out = structured<Answer>(await everyone.call('query_recent_orders', { ...RANGE, limit: 12 }));
    const expected = await newest(12);
    expect(expected).toHaveLength(12);
    expect(out.rows).toEqual(expected.map(orderFields));
    for (const row of out.rows) expect(Object.keys(row).sort()).toEqual(ORDER_KEYS);
    const { sql } = lastStatement(everyone);
    expect(sql).not.toMatch(/"customers"|"customer_id"|"c"\.|"name_initials"|"email_masked"|"phone_last4"|"region"/);
  });

  it('cost under half the bytes of rows with every customer field', async () => {
    const args = { ...RANGE, limit: 100 };
    const plain = await everyone.call('query_recent_orders', args);
    const all = ['initials', 'email', 'phone_last4', 'region', 'ref'];
    const full = await everyone.call('query_recent_orders', { ...args, customer_fields: all });
    const bytes = (text: string): number => Buffer.byteLength(text);
    // Every row of the full answer is the plain row and its five fields: the difference is theirs alone.
    const rows = structured<Answer>(full).rows;
    expect(
      rows.map(({ order_ref, ordered_at, status, currency, total_amount }) => ({
        order_ref,
        ordered_at,
        status,
        currency,
        total_amount,
      })),
    ).toEqual(structured<Answer>(plain).rows);
    expect(bytes(textOf(plain)) * 2).toBeLessThan(bytes(textOf(full)));
  });

  const masked: Record<string, [key: string, value: (o: RawOrder) => string, column: RegExp]> = {
    initials: [
      'customer_initials',
      (o) =>
        o.name
          .split(' ')
          .map((part) => `${part[0]}.`)
          .join(''),
      /"name_initials"/,
    ],
    email: ['customer_email', (o) => `${o.email[0]}***@${o.email.split('@')[1]}`, /"email_masked"/],
    phone_last4: ['customer_phone_last4', (o) => o.phone.replace(/\D/g, '').slice(-4), /"phone_last4"/],
    region: ['customer_region', (o) => o.region, /"c"\."region"/],
    ref: ['customer_ref', (o) => token('customer', o.customer_id), /"customer_id" as "customer_ref"/],
  };
  const COLUMNS = Object.values(masked).map(([, , column]) => column);

  it.each(Object.entries(masked))('%s alone comes masked, and is the only one read', async (field, spec) => {
    const [key, value, column] = spec;
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, limit: 15, customer_fields: [field] }),
    );
    const expected = await newest(15);
    expect(out.rows).toEqual(expected.map((o) => ({ ...orderFields(o), [key]: value(o) })));
    const { sql } = lastStatement(everyone);
    for (const other of COLUMNS) {
      if (other === column) expect(sql).toMatch(other);
      else expect(sql).not.toMatch(other);
    }
    // A masked value is never the raw one (the phone's last digits are, by design, part of it).
    if (field === 'email') expect(out.rows.every((r) => !expected.some((o) => o.email === r[key]))).toBe(true);
    if (field === 'initials') expect(out.rows.every((r) => !expected.some((o) => o.name === r[key]))).toBe(true);
  });

  it('come together when named together, each masked', async () => {
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, limit: 5, customer_fields: ['email', 'ref'] }),
    );
    const expected = await newest(5);
    expect(out.rows).toEqual(
      expected.map((o) => ({
        ...orderFields(o),
        customer_email: masked.email![1](o),
        customer_ref: masked.ref![1](o),
      })),
    );
  });
});

describe('filters', () => {
  it('region: the recent orders of one region, 10 of them, newest first', async () => {
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, filters: { region: ['Europe'] }, limit: 10 }),
    );
    const expected = await newest(10, { regions: ['Europe'] });
    expect(expected).toHaveLength(10);
    expect(expected.every((o) => o.region === 'Europe')).toBe(true);
    // Not simply the newest orders: other regions' orders come between.
    expect((await newest(10)).map((o) => o.id)).not.toEqual(expected.map((o) => o.id));
    expect(out).toMatchObject({ row_count: 10, truncated: true });
    expect(out.rows).toEqual(expected.map(orderFields));
    const { sql, parameters } = lastStatement(everyone);
    expect(parameters).toContain('Europe');
    expect(sql).not.toContain('Europe');
  });

  it('a value that looks like SQL is a value: no region is called that, so no order is listed', async () => {
    const region = "Europe' or '1'='1";
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, filters: { region: [region] } }),
    );
    expect(out).toMatchObject({ rows: [], row_count: 0 });
    expect(out.truncated).toBeUndefined();
    const { sql, parameters } = lastStatement(everyone);
    expect(parameters).toContain(region);
    expect(sql).not.toContain("'1'");
  });

  it('category: only orders holding an item of the category', async () => {
    const { rows } = await admin.query<{ category: string }>(
      'select category from sales.products group by category order by count(*), category limit 1',
    );
    const category = rows[0]!.category;
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, filters: { category: [category] }, limit: 25 }),
    );
    const expected = await newest(25, { categories: [category] });
    expect(expected.length).toBeGreaterThan(5);
    expect(out.rows).toEqual(expected.map(orderFields));
    expect(out.rows.map((r) => r.order_ref)).not.toEqual((await newest(25)).map((o) => token('order', o.id)));
    const { sql, parameters } = lastStatement(everyone);
    expect(parameters).toContain(category);
    expect(sql).not.toContain(category);
  });

  it('region, category and status together, with the status argument as well', async () => {
    const filters = { region: ['Europe', 'Latin America'], category: ['Books', 'Toys'], status: ['paid', 'shipped'] };
    const out = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, filters, customer_fields: ['region'], limit: 30 }),
    );
    const expected = await newest(30, {
      regions: filters.region,
      categories: filters.category,
      statuses: filters.status,
    });
    expect(expected.length).toBeGreaterThan(10);
    expect(out.rows).toEqual(expected.map((o) => ({ ...orderFields(o), customer_region: o.region })));
    const shipped = structured<Answer>(
      await everyone.call('query_recent_orders', { ...RANGE, filters, status: 'shipped', limit: 30 }),
    );
    const expectedShipped = await newest(30, {
      regions: filters.region,
      categories: filters.category,
      statuses: ['shipped'],
    });
    expect(expectedShipped.length).toBeGreaterThan(5);
    expect(shipped.rows).toEqual(expectedShipped.map(orderFields));
  });
});

describe('a region filter under a region scope', () => {
  it('without a filter, the scope alone applies', async () => {
    const out = structured<Answer>(
      await scoped.call('query_recent_orders', { ...RANGE, customer_fields: ['region'], limit: 40 }),
    );
    const expected = await newest(40, { regions: ['Europe', 'Asia Pacific'] });
    expect(out.rows).toEqual(expected.map((o) => ({ ...orderFields(o), customer_region: o.region })));
    expect(new Set(out.rows.map((r) => r.customer_region))).toEqual(new Set(['Europe', 'Asia Pacific']));
  });

  it('inside the scope, both apply', async () => {
    const out = structured<Answer>(
      await scoped.call('query_recent_orders', { ...RANGE, filters: { region: ['Asia Pacific'] }, limit: 10 }),
    );
    expect(out.rows).toEqual((await newest(10, { regions: ['Asia Pacific'] })).map(orderFields));
    const { parameters } = lastStatement(scoped);
    for (const region of ['Europe', 'Asia Pacific']) expect(parameters).toContain(region);
  });

  it.each([[['North America']], [['Europe', 'North America']]])(
    'outside the scope (%j), refused naming filters.region',
    async (region) => {
      const before = sent.get(scoped)!.length;
      const refused = await scoped.call('query_recent_orders', { ...RANGE, filters: { region } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(
        /filters\.region: outside your data scope \(Europe, Asia Pacific\); give one of those or leave filters\.region out/,
      );
      expect(scoped.audits.at(-1)).toMatchObject({
        tool: 'query_recent_orders',
        outcome: 'rejected',
        error_code: 'outside_data_scope',
        invalid_fields: ['filters.region'],
      });
      expect(sent.get(scoped)!.length).toBe(before);
    },
  );
});

describe('bad arguments are refused, naming the field', () => {
  it.each([
    [{ filters: { status: ['sent'] } }, /filters\.status\.0: "sent" is not allowed; use one of pending, paid/],
    [{ filters: { region: [] } }, /filters\.region: give at least one value, or leave it out/],
    [{ filters: { region: [''] } }, /filters\.region\.0: /],
    [{ filters: { category: 'Books' } }, /filters\.category: must be an array, got a string/],
    [
      { filters: { product: ['SKU-1'] } },
      /filters\."product": is not a known filter; the filters are region, category and status/,
    ],
    [
      { customer_fields: ['name'] },
      /customer_fields\.0: "name" is not allowed; use one of initials, email, phone_last4, region, ref/,
    ],
    [{ customer_fields: [] }, /customer_fields: name at least one field, or leave it out for none/],
    [{ limit: 0 }, /limit: must be at least 1/],
    [{ limit: 101 }, /limit: must be at most 100/],
  ])('%j', async (args, message) => {
    const refused = await everyone.call('query_recent_orders', { ...RANGE, ...args });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(message);
  });
});
