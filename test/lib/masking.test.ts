/** No raw personal data or internal id leaves the server, whatever is asked. */
import { createHmac } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenizer, initials, lastFourDigits, maskEmail } from '../../src/lib/masking.js';
import { connectAdmin, startHarness, textOf, type Harness } from '../support/harness.js';

describe('the masks', () => {
  it('mask emails, names and phones, and are idempotent', () => {
    expect(maskEmail('jane.doe@example.com')).toBe('j***@example.com');
    expect(maskEmail('no-at-sign')).toBe('***');
    expect(initials('Jane van Doe')).toBe('J.V.D.');
    expect(initials("Zoë O'Neil-Smith")).toBe('Z.O.N.S.');
    expect(lastFourDigits('+1 (555) 010-2345')).toBe('2345');
    for (const [mask, value] of [
      [maskEmail, 'jane.doe@example.com'],
      [initials, 'Jane van Doe'],
      [lastFourDigits, '+1 (555) 010-2345'],
    ] as const) {
      expect(mask(mask(value))).toBe(mask(value));
    }
  });

  it('leave what the reporting view sends as it is', () => {
    for (const masked of ['j***@example.com', 'ü***@beispiel.de', '***']) expect(maskEmail(masked)).toBe(masked);
    expect(maskEmail('x***@a@b.org')).toBe('x***@b.org');
    expect(initials('J.V.D.')).toBe('J.V.D.');
    expect(lastFourDigits('2345')).toBe('2345');
  });

  it("turn ids into keyed-hash tokens: the entity's first three letters and 16 characters of HMAC-SHA256", () => {
    const tokenize = createTokenizer('a-key');
    const expected = (entity: string, id: string): string =>
      `${entity.slice(0, 3)}_${createHmac('sha256', 'a-key').update(`${entity}:${id}`).digest('base64url').slice(0, 16)}`;
    for (const [entity, id] of [
      ['order', '1'],
      ['customer', '1'],
      ['order', '123456789012'],
      ['product', '42'],
    ] as const) {
      expect(tokenize(entity, id)).toBe(expected(entity, id));
      expect(tokenize(entity, id)).toBe(expected(entity, id)); // remembered, the same
    }
    expect(tokenize('order', '1')).not.toBe(tokenize('customer', '1'));
    expect(createTokenizer('another-key')('order', '1')).not.toBe(tokenize('order', '1'));
  });
});

describe('every tool output', () => {
  let harness: Harness;
  let admin: pg.Client;
  beforeAll(async () => {
    harness = await startHarness();
    admin = await connectAdmin();
  });
  afterAll(async () => {
    await harness.close();
    await admin.end();
  });

  it('holds no raw name, email or phone of any customer it returns', async () => {
    const outputs: string[] = [];
    const range = { start_date: '2025-04-02', end_date: '2025-06-30' };
    for (const status of [undefined, 'pending', 'paid', 'shipped', 'cancelled', 'refunded']) {
      outputs.push(
        textOf(
          await harness.call('query_recent_orders', {
            ...range,
            limit: 100,
            customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'],
            ...(status ? { status } : {}),
          }),
        ),
      );
    }
    for (const group_by of ['day', 'week', 'month', 'region', 'category']) {
      outputs.push(textOf(await harness.call('query_sales', { ...range, group_by })));
    }
    outputs.push(textOf(await harness.call('query_top_products', { ...range, limit: 100 })));
    outputs.push(textOf(await harness.call('query_order_count', range)));
    const all = outputs.join('\n');
    expect(all).toContain('***@'); // masked customers were returned, so the checks below mean something

    const { rows } = await admin.query<{ id: string; name: string; email: string; phone: string }>(
      'select id::text, name, email, phone from sales.customers',
    );
    const leaks = rows.flatMap((c) =>
      [c.name, c.email, c.phone, c.email.split('@')[0]!, c.phone.replace(/\D/g, '')].filter((v) => all.includes(v)),
    );
    expect(leaks).toEqual([]);
  });

  it('holds no internal order or customer id', async () => {
    const result = await harness.call('query_recent_orders', {
      start_date: '2025-06-01',
      end_date: '2025-06-30',
      limit: 100,
      customer_fields: ['initials', 'email', 'phone_last4', 'region', 'ref'],
    });
    const rows = (result.structuredContent as { rows: Record<string, unknown>[] }).rows;
    const { rows: ids } = await admin.query<{ id: string; customer_id: string }>(
      "select id::text, customer_id::text from sales.orders where ordered_at >= '2025-06-01' and ordered_at < '2025-07-01'",
    );
    const idValues = new Set(ids.flatMap((r) => [r.id, r.customer_id]));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.order_ref).toMatch(/^ord_[A-Za-z0-9_-]{16}$/);
      expect(row.customer_ref).toMatch(/^cus_[A-Za-z0-9_-]{16}$/);
      expect(idValues.has(String(row.order_ref).slice(4))).toBe(false);
      expect(Object.keys(row).some((k) => k === 'id' || k.endsWith('_id'))).toBe(false);
    }
  });
});
