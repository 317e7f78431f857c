/**
 * The sales pack's prompts through real MCP clients of both revisions, on a fixed clock: listed with
 * their arguments, built with the days their week or period stands for (computed by PostgreSQL), and
 * refused with -32602 naming the argument and the rule it breaks, as a tool call would be.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { contentOf } from '../../src/content/index.js';
import { connectAdmin, startHarness, type Harness } from '../support/harness.js';

/** Tuesday 1 July 2025, noon UTC: ISO week 2025-W27 is running, 2025-W26 is last week. */
const NOW = Date.parse('2025-07-01T12:00:00Z');

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin.end();
});

/** The Monday and Sunday of an ISO week, as PostgreSQL reads its label. */
async function weekDays(label: string): Promise<{ monday: string; sunday: string }> {
  const { rows } = await admin.query<{ monday: string; sunday: string }>(
    `select to_date($1, 'IYYY-"W"IW')::text as monday, (to_date($1, 'IYYY-"W"IW') + 6)::text as sunday`,
    [label],
  );
  return rows[0]!;
}

/** The error a request was refused with. */
async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await request;
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error('expected the request to be refused');
}

describe.each(['legacy', 'modern'] as const)('the sales prompts, %s', (era) => {
  let h: Harness;
  const client = (): Harness['client'] => (era === 'modern' ? h.modern : h.client) as Harness['client'];
  const get = async (name: string, args: Record<string, unknown>): Promise<string> => {
    const result = await client().getPrompt({ name, arguments: args as Record<string, string> });
    expect(result.messages).toHaveLength(1);
    expect(result.messages[0]!.role).toBe('user');
    return (result.messages[0]!.content as { text: string }).text;
  };

  beforeAll(async () => {
    h = await startHarness({ content: contentOf([salesPack]), era, now: () => NOW });
  });
  afterAll(async () => {
    await h.close();
  });

  it('are listed with their arguments, which say whether they are required', async () => {
    const { prompts } = await client().listPrompts();
    expect(prompts.map((p) => [p.name, p.arguments!.map((a) => [a.name, a.required])])).toEqual([
      ['weekly_sales_review', [['week', true]]],
      [
        'explain_change',
        [
          ['metric', true],
          ['period', true],
          ['region', false],
          ['category', false],
        ],
      ],
      [
        'explore_metric',
        [
          ['metric', true],
          ['group_by', false],
          ['period', true],
          ['region', false],
          ['category', false],
          ['product', false],
          ['status', false],
        ],
      ],
    ]);
    for (const prompt of prompts) {
      expect(prompt.title).toBeTruthy();
      expect(prompt.description!.length).toBeGreaterThan(40);
      for (const argument of prompt.arguments!) expect(argument.description, argument.name).toBeTruthy();
    }
  });

  it('review the week asked for, by its label, a day inside it, or last_week', async () => {
    const { monday, sunday } = await weekDays('2025-W26');
    for (const week of ['2025-W26', '2025-06-25', 'last_week']) {
      const text = await get('weekly_sales_review', { week });
      expect(text, week).toContain(`ISO week 2025-W26: Monday ${monday} to Sunday ${sunday}`);
      expect(text).toContain('weekly_sales_report with {"week":"2025-W26"}');
      expect(text).toContain(
        `query_sales with {"start_date":"${monday}","end_date":"${sunday}","group_by":"day","compare_to":"previous_period"}`,
      );
      expect(text).toMatch(/group_by "category"/);
      expect(text).not.toContain('still running');
    }
    const running = await get('weekly_sales_review', { week: 'this_week' });
    expect(running).toContain(`ISO week 2025-W27: Monday ${(await weekDays('2025-W27')).monday}`);
    expect(running).toContain('still running: today is 2025-07-01');
  });

  it('19.1.4 a week or period still running is reviewed on equal elapsed time, never a partial day against a whole one', async () => {
    const running = await get('weekly_sales_review', { week: 'this_week' });
    expect(running).toMatch(/up to the current minute \(partial: true, until\)/);
    expect(running).toMatch(/same elapsed part, cut at the same local time of day/);
    expect(running).toMatch(/do not call today unusual/);
    expect(running).toMatch(/never add up rows of two answers for the same day, week or month/);
    const ended = await get('weekly_sales_review', { week: 'last_week' });
    expect(ended).not.toMatch(/current minute/);
    // query_top_products cannot be cut: its whole period before is not to be set against a running one.
    const units = await get('explain_change', { metric: 'units', period: 'month_to_date' });
    expect(units).toMatch(/still running: today is 2025-07-01/);
    expect(units).toMatch(/query_top_products has no compare_to\) covers it whole: do not set it against this one/);
    expect(await get('explain_change', { metric: 'units', period: 'last_month' })).not.toMatch(/still running/);
  });

  it('explain a change over the days the period stands for, in the region asked for', async () => {
    const { rows } = await admin.query<{ first: string; last: string }>(
      `select (date_trunc('month', $1::date) - interval '1 month')::date::text as first,
              (date_trunc('month', $1::date) - interval '1 day')::date::text as last`,
      ['2025-07-01'],
    );
    const text = await get('explain_change', { metric: 'avg_order_value', period: 'last_month', region: 'North' });
    expect(text).toContain(
      `Explain why avg_order_value changed over last_month (${rows[0]!.first} to ${rows[0]!.last}, in the reporting time zone UTC)`,
    );
    expect(text).toContain('for region "North"');
    expect(text).toContain(
      'query_sales with {"period":"last_month","group_by":"region","compare_to":"previous_period"}',
    );
    expect(text).toMatch(/revenue \/ order_count/);
    const units = await get('explain_change', { metric: 'units', period: 'last_7_days' });
    expect(units).toContain('query_top_products with {"period":"last_7_days","metric":"units","limit":20}');
    expect(units).not.toContain('for region');
  });

  it('refuse arguments that break a rule, naming each argument and its rule', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['weekly_sales_review', { week: '2025-W28' }, /week: 2025-W28 starts on 2025-07-07, after today \(2025-07-01\)/],
      [
        'weekly_sales_review',
        { week: '2025-W54' },
        /week: "2025-W54" is not a week; give an ISO week such as 2026-W48/,
      ],
      ['weekly_sales_review', {}, /week: is required/],
      ['weekly_sales_review', { week: 26 }, /week: must be a string/],
      [
        'weekly_sales_review',
        { week: 'last_week', colour: 'red' },
        /"colour": is not an argument of this prompt; its arguments are week/,
      ],
      [
        'explain_change',
        { metric: 'profit', period: 'last_week' },
        /metric: "profit" is not allowed; use one of revenue, order_count, avg_order_value, units/,
      ],
      [
        'explain_change',
        { metric: 'revenue', period: 'last_year' },
        /period: "last_year" is not allowed; use one of today, yesterday/,
      ],
      ['explain_change', { metric: 'revenue', period: 'last_week', region: '' }, /region: /],
    ];
    for (const [name, args, rule] of cases) {
      const error = await refusal(client().getPrompt({ name, arguments: args as Record<string, string> }));
      expect(error.code, JSON.stringify(args)).toBe(-32602);
      expect(error.message, JSON.stringify(args)).toMatch(`Invalid arguments for prompt ${name}`);
      expect(error.message, JSON.stringify(args)).toMatch(rule);
    }
    const both = await refusal(client().getPrompt({ name: 'explain_change', arguments: { metric: 'x', period: 'y' } }));
    expect(both.message).toMatch(/metric: .*; period: /);
  });

  it('answer a prompt that does not exist with -32602 naming it', async () => {
    const error = await refusal(client().getPrompt({ name: 'monthly_close', arguments: {} }));
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/Unknown prompt: "monthly_close"/);
  });
});
