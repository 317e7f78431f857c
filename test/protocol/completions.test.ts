/**
 * completion/complete for the prompts' arguments through real MCP clients of both revisions, on a
 * fixed clock: recent ISO weeks and periods, the metrics, and the regions and categories that sold
 * in the last 90 days, read through query_sales as the caller and checked against the raw rows
 * through the admin connection. MCP's limits hold: at most 100 values, with total and hasMore.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { salesPack } from '../../pack/index.js';
import { contentOf } from '../../src/content/index.js';
import { PERIODS } from '../../src/lib/periods.js';
import type { Pack } from '../../src/pack.js';
import { definePrompt } from '../../src/content/prompts.js';
import { connectAdmin, startHarness, type Harness } from '../support/harness.js';

/** Tuesday 1 July 2025, noon UTC: the last 90 days are 2 April to 30 June. */
const NOW = Date.parse('2025-07-01T12:00:00Z');
const NET = `o.status not in ('cancelled', 'refunded') and o.ordered_at >= '2025-04-02T00:00:00Z' and o.ordered_at < '2025-07-01T00:00:00Z'`;

let admin: pg.Client;
let regions: string[];
let categories: string[];
let weeks: string[];
beforeAll(async () => {
  admin = await connectAdmin();
  const column = async (sql: string): Promise<string[]> => (await admin.query<{ v: string }>(sql)).rows.map((r) => r.v);
  regions = await column(
    `select distinct c.region as v from sales.orders o join sales.customers c on c.id = o.customer_id where ${NET} order by 1`,
  );
  categories = await column(
    `select distinct p.category as v from sales.orders o join sales.order_items i on i.order_id = o.id
       join sales.products p on p.id = i.product_id where ${NET} order by 1`,
  );
  weeks = await column(
    `select to_char(d, 'IYYY-"W"IW') as v
       from generate_series(date_trunc('week', date '2025-07-01'), date_trunc('week', date '2025-07-01') - interval '11 weeks', interval '-1 week') as d`,
  );
});
afterAll(async () => {
  await admin.end();
});

type Completion = { values: string[]; total?: number; hasMore?: boolean };

describe.each(['legacy', 'modern'] as const)('completions of the prompts, %s', (era) => {
  let h: Harness;
  const complete = async (prompt: string, name: string, value: string): Promise<Completion> => {
    const client = era === 'modern' ? h.modern : h.client;
    return (await client.complete({ ref: { type: 'ref/prompt', name: prompt }, argument: { name, value } })).completion;
  };

  beforeAll(async () => {
    h = await startHarness({
      content: contentOf([salesPack]),
      era,
      now: () => NOW,
      caller: { id: `completer-${era}` },
    });
  });
  afterAll(async () => {
    await h.close();
  });

  it('offer the 12 most recent ISO weeks, this one first, then last_week and this_week', async () => {
    expect(weeks).toHaveLength(12);
    expect(await complete('weekly_sales_review', 'week', '')).toEqual({
      values: [...weeks, 'last_week', 'this_week'],
      total: 14,
      hasMore: false,
    });
    expect((await complete('weekly_sales_review', 'week', '2025-W2')).values).toEqual(
      weeks.filter((w) => w.startsWith('2025-W2')),
    );
    expect((await complete('weekly_sales_review', 'week', 'LAST')).values).toEqual(['last_week']);
  });

  it('offer the periods and the metrics from their closed lists', async () => {
    expect((await complete('explain_change', 'period', '')).values).toEqual([...PERIODS]);
    expect((await complete('explain_change', 'period', 'last_')).values).toEqual(
      PERIODS.filter((p) => p.startsWith('last_')),
    );
    expect((await complete('explain_change', 'metric', '')).values).toEqual([
      'revenue',
      'order_count',
      'avg_order_value',
      'units',
    ]);
    expect((await complete('explain_change', 'metric', 'a')).values).toEqual(['avg_order_value']);
  });

  it('offer the regions and categories that sold in the last 90 days, read through query_sales as the caller', async () => {
    expect(regions.length).toBeGreaterThan(1);
    expect(categories.length).toBeGreaterThan(1);
    const before = h.audits.length;
    expect(await complete('explain_change', 'region', '')).toEqual({
      values: regions,
      total: regions.length,
      hasMore: false,
    });
    expect((await complete('explain_change', 'category', '')).values).toEqual(categories);
    const first = regions[0]!.slice(0, 1);
    expect((await complete('explain_change', 'region', first.toLowerCase())).values).toEqual(
      regions.filter((r) => r.toLowerCase().startsWith(first.toLowerCase())),
    );
    // Two tool calls, audited as the caller's, for three completions: the labels are kept a while.
    const calls = h.audits.slice(before);
    expect(calls.map((a) => [a.tool, a.caller, a.outcome])).toEqual([
      ['query_sales', `completer-${era}`, 'ok'],
      ['query_sales', `completer-${era}`, 'ok'],
    ]);
  });

  it('refuse an argument the prompt does not have, or a prompt that does not exist', async () => {
    const client = era === 'modern' ? h.modern : h.client;
    await expect(
      client.complete({ ref: { type: 'ref/prompt', name: 'explain_change' }, argument: { name: 'colour', value: '' } }),
    ).rejects.toThrow(/prompt explain_change has no argument "colour"/);
    await expect(
      client.complete({ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'week', value: '' } }),
    ).rejects.toThrow(/Unknown prompt: "nope"/);
    await expect(
      client.complete({
        ref: { type: 'ref/resource', uri: 'querygate://catalog' },
        argument: { name: 'x', value: '' },
      }),
    ).rejects.toThrow(/Unknown resource template: "querygate:\/\/catalog"/);
  });
});

describe('completions from a tool the caller may not call', () => {
  it('offer nothing, and call nothing', async () => {
    const h = await startHarness({
      content: contentOf([salesPack]),
      now: () => NOW,
      caller: { id: 'counter', tools: new Set(['query_order_count']) },
    });
    try {
      const { completion } = await h.client.complete({
        ref: { type: 'ref/prompt', name: 'explain_change' },
        argument: { name: 'region', value: '' },
      });
      expect(completion).toEqual({ values: [], total: 0, hasMore: false });
      expect(h.audits).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

describe('a completion of more than 100 values', () => {
  it('gives the first 100, the total and hasMore', async () => {
    const many = Array.from({ length: 250 }, (_, k) => `value_${String(k).padStart(3, '0')}`);
    const pack: Pack = {
      ...salesPack,
      prompts: [
        definePrompt({
          name: 'pick_one',
          title: 'Pick one',
          description: 'A prompt with very many choices.',
          arguments: z.strictObject({ choice: z.string().describe('One of very many') }),
          completions: { choice: { values: many } },
          messages: () => [],
        }),
      ],
    };
    const h = await startHarness({ content: contentOf([pack]) });
    try {
      const complete = async (value: string): Promise<Completion> =>
        (
          await h.client.complete({
            ref: { type: 'ref/prompt', name: 'pick_one' },
            argument: { name: 'choice', value },
          })
        ).completion;
      expect(await complete('')).toEqual({ values: many.slice(0, 100), total: 250, hasMore: true });
      expect(await complete('value_2')).toEqual({ values: many.slice(200), total: 50, hasMore: false });
    } finally {
      await h.close();
    }
  });
});

describe('labels loaded for one caller', () => {
  it('19.5.6 are not offered to the same caller id holding a narrower toolset, or another data scope', async () => {
    // One server's content, so one label cache, for three tokens of one subject.
    const content = contentOf([salesPack]);
    const same = { content, now: () => NOW } as const;
    const wide = await startHarness({ ...same, caller: { id: 'one-subject' } });
    const narrow = await startHarness({
      ...same,
      caller: { id: 'one-subject', tools: new Set(['query_order_count']) },
    });
    const europe = await startHarness({ ...same, caller: { id: 'one-subject', dataScope: { region: ['Europe'] } } });
    const complete = async (h: Harness, name: string): Promise<Completion> =>
      (await h.client.complete({ ref: { type: 'ref/prompt', name: 'explain_change' }, argument: { name, value: '' } }))
        .completion;
    try {
      expect((await complete(wide, 'category')).values).toEqual(categories);
      expect((await complete(wide, 'region')).values).toEqual(regions);
      expect(await complete(narrow, 'category')).toEqual({ values: [], total: 0, hasMore: false });
      expect(await complete(narrow, 'region')).toEqual({ values: [], total: 0, hasMore: false });
      expect(narrow.audits).toEqual([]);
      expect(regions).toContain('Europe');
      expect((await complete(europe, 'region')).values).toEqual(['Europe']);
    } finally {
      await wide.close();
      await narrow.close();
      await europe.close();
    }
  });
});

describe('completions of explore_metric, the prompt the metric declarations derive', () => {
  const ANY = `o.ordered_at >= '2025-04-02T00:00:00Z' and o.ordered_at < '2025-07-01T00:00:00Z'`;
  const SCOPE = ['Europe', 'Asia Pacific'];
  let open: Harness;
  let scoped: Harness;
  const complete = async (h: Harness, name: string, value = ''): Promise<string[]> =>
    (await h.client.complete({ ref: { type: 'ref/prompt', name: 'explore_metric' }, argument: { name, value } }))
      .completion.values;

  beforeAll(async () => {
    const content = contentOf([salesPack]);
    open = await startHarness({ content, now: () => NOW, caller: { id: 'explorer' } });
    scoped = await startHarness({ content, now: () => NOW, caller: { id: 'rep', dataScope: { region: SCOPE } } });
  });
  afterAll(async () => {
    await open.close();
    await scoped.close();
  });

  it('offer the declared metrics, dimensions and closed filter values', async () => {
    expect(await complete(open, 'metric')).toEqual([
      'orders',
      'net_orders',
      'revenue',
      'avg_order_value',
      'gross_amount',
      'median_order_value',
      'p90_order_value',
      'customers',
      'orders_per_customer',
      'refunded_orders',
      'refund_rate',
      'units',
    ]);
    expect(await complete(open, 'group_by', 'w')).toEqual(['week', 'weekday']);
    expect(await complete(open, 'group_by', 'customer_')).toEqual([
      'customer_orders',
      'customer_type',
      'customer_since',
    ]);
    expect(await complete(open, 'status')).toEqual(['pending', 'paid', 'shipped', 'cancelled', 'refunded']);
  });

  it('offer the regions and categories of the last 90 days through query_metrics, as the caller sees them', async () => {
    const column = async (sql: string): Promise<string[]> =>
      (await admin.query<{ v: string }>(sql)).rows.map((r) => r.v);
    const all = await column(
      `select distinct c.region as v from sales.orders o join sales.customers c on c.id = o.customer_id where ${ANY} order by 1`,
    );
    const kinds = await column(
      `select distinct p.category as v from sales.orders o join sales.order_items i on i.order_id = o.id
         join sales.products p on p.id = i.product_id where ${ANY} order by 1`,
    );
    expect(await complete(open, 'region')).toEqual(all);
    expect(await complete(open, 'category')).toEqual(kinds);
    const mine = all.filter((r) => SCOPE.includes(r));
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.length).toBeLessThan(all.length);
    expect(await complete(scoped, 'region')).toEqual(mine);
    expect(scoped.audits.at(-1)?.tool).toBe('query_metrics');
  });

  it('offer every product sold in the last 90 days (more than one answer holds), and a full SKU typed gets itself', async () => {
    const { rows } = await admin.query<{ sku: string; orders: number }>(
      `select p.sku, count(distinct o.id)::int as orders from sales.orders o join sales.order_items i on i.order_id = o.id
         join sales.products p on p.id = i.product_id where ${ANY} group by 1 order by 2, 1`,
    );
    const skus = rows.map((r) => r.sku).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(skus.length).toBeGreaterThan(100);
    const all = await open.client.complete({
      ref: { type: 'ref/prompt', name: 'explore_metric' },
      argument: { name: 'product', value: '' },
    });
    expect(all.completion).toEqual({ values: skus.slice(0, 100), total: skus.length, hasMore: true });
    // The least ordered product, which a list of the 100 most ordered leaves out, typed in full.
    const rarest = rows[0]!.sku;
    expect(await complete(open, 'product', rarest)).toEqual(skus.filter((s) => s.startsWith(rarest)));
    expect(await complete(open, 'product', rarest)).toContain(rarest);
  });

  it('tell the model the one call that answers the question', async () => {
    const got = await open.client.getPrompt({
      name: 'explore_metric',
      arguments: { metric: 'revenue', group_by: 'category', period: 'last_month', region: 'Europe' },
    });
    const text = (got.messages[0]!.content as { text: string }).text;
    expect(text).toContain(
      'Call query_metrics with {"metrics":["revenue"],"group_by":["category"],"filters":{"region":["Europe"]},"period":"last_month"}',
    );
    const outside = scoped.client.getPrompt({
      name: 'explore_metric',
      arguments: { metric: 'orders', period: 'last_month', region: 'Africa' },
    });
    await expect(outside).rejects.toThrow(/region/);
  });
});
