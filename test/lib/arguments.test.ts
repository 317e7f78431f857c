/** Argument rules, each checked through a real MCP client: a rejection names the field and the rule. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, structured, textOf, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());

async function rejected(tool: string, args: unknown): Promise<string> {
  const result = await harness.call(tool, args);
  expect(result.isError, `expected ${JSON.stringify(args)} to be rejected`).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const text = textOf(result);
  expect(text).toMatch(/^Invalid arguments: /);
  expect(text).toMatch(/code: invalid_arguments, request_id: [0-9a-f-]{36}\)$/);
  return text;
}

const count = (start_date: unknown, end_date: unknown) => ({ start_date, end_date });

describe('dates', () => {
  it('accepts a leap day in a leap year and refuses it otherwise', async () => {
    expect(structured(await harness.call('query_order_count', count('2024-02-29', '2024-02-29')))).toMatchObject({
      start_date: '2024-02-29',
    });
    expect(await rejected('query_order_count', count('2025-02-29', '2025-03-01'))).toContain(
      'start_date: "2025-02-29" is not a real calendar day',
    );
  });

  it.each([
    ['2025-13-01', 'is not a real calendar day'],
    ['2025-04-31', 'is not a real calendar day'],
    ['2025-00-10', 'is not a real calendar day'],
    ['2025-1-01', 'is not a date in YYYY-MM-DD form'],
    ['20250101', 'is not a date in YYYY-MM-DD form'],
    ['2025-01-01T00:00:00Z', 'is not a date in YYYY-MM-DD form'],
    ['2025-01-01 ', 'is not a date in YYYY-MM-DD form'],
    ['yesterday', 'is not a date in YYYY-MM-DD form'],
  ])('refuses %j', async (bad, rule) => {
    expect(await rejected('query_sales', { start_date: '2025-01-01', end_date: bad, group_by: 'day' })).toContain(
      `end_date: ${JSON.stringify(bad)} ${rule}`,
    );
  });

  it('refuses an end before the start, naming both', async () => {
    expect(await rejected('query_order_count', count('2025-02-01', '2025-01-01'))).toContain(
      'end_date 2025-01-01 is before start_date 2025-02-01',
    );
  });

  it('allows exactly 90 days counted inclusively and refuses 91', async () => {
    expect(structured(await harness.call('query_order_count', count('2025-01-01', '2025-03-31')))).toMatchObject({
      end_date: '2025-03-31',
    });
    const text = await rejected('query_order_count', count('2025-01-01', '2025-04-01'));
    expect(text).toContain('spans 91 days; at most 90 days are allowed, so end_date may be at most 2025-03-31');
  });

  it('allows a single day', async () => {
    expect(structured(await harness.call('query_order_count', count('2025-03-01', '2025-03-01')))).toMatchObject({
      start_date: '2025-03-01',
    });
  });

  it('crosses a leap day in its span count', async () => {
    // 2024-01-01..2024-03-30 is 90 days only because February 2024 has 29 of them.
    expect(structured(await harness.call('query_order_count', count('2024-01-01', '2024-03-30')))).toMatchObject({});
    await rejected('query_order_count', count('2024-01-01', '2024-03-31'));
  });
});

describe('other arguments', () => {
  it('names a missing required argument', async () => {
    expect(await rejected('query_sales', { start_date: '2025-01-01', end_date: '2025-01-02' })).toContain(
      'group_by: is required',
    );
  });

  it('refuses unknown argument names and lists the known ones', async () => {
    expect(await rejected('query_order_count', { ...count('2025-01-01', '2025-01-02'), region: 'Europe' })).toContain(
      '"region": is not a known argument; the arguments are start_date, end_date, period, status',
    );
  });

  it('refuses wrong types', async () => {
    expect(await rejected('query_order_count', count(20250101, '2025-01-02'))).toContain(
      'start_date: must be a string, got a number',
    );
    expect(await rejected('query_top_products', { ...count('2025-01-01', '2025-01-02'), limit: '10' })).toContain(
      'limit: must be a number, got a string',
    );
    expect(await rejected('query_order_count', count(['2025-01-01'], '2025-01-02'))).toContain(
      'start_date: must be a string, got an array',
    );
  });

  it.each([0, 101, -5, 2.5, 1e308])('refuses limit %j', async (limit) => {
    expect(await rejected('query_recent_orders', { ...count('2025-01-01', '2025-01-02'), limit })).toMatch(
      /limit: must be (at least 1|at most 100|a whole number)/,
    );
  });

  it('refuses values outside an enum and lists the allowed ones', async () => {
    expect(await rejected('query_order_count', { ...count('2025-01-01', '2025-01-02'), status: 'PAID' })).toContain(
      'status: "PAID" is not allowed; use one of pending, paid, shipped, cancelled, refunded',
    );
    expect(await rejected('query_top_products', { ...count('2025-01-01', '2025-01-02'), metric: 'profit' })).toContain(
      'metric: "profit" is not allowed; use one of revenue, units',
    );
  });

  it('does not echo a huge value back in full', async () => {
    const huge = 'x'.repeat(100_000);
    const text = await rejected('query_order_count', count(huge, '2025-01-02'));
    expect(text.length).toBeLessThan(400);
  });

  it('refuses arguments that are not an object', async () => {
    const result = await harness.client.request(
      { method: 'tools/call', params: { name: 'query_order_count' } },
      (await import('@modelcontextprotocol/sdk/types.js')).CallToolResultSchema,
    );
    expect(result.isError).toBe(true);
    expect(textOf(result as never)).toContain('start_date: is required');
  });
});
