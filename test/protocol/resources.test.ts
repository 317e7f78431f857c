/**
 * Resources through real MCP clients of both revisions: the tool catalog (the caller's tools only),
 * the figure definitions and the reporting views, the revision's code for an unknown resource, and a
 * resource template plugged in by a pack. The views' documentation is held to the database itself:
 * every column the reader may read is documented, and no personal column is.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type pg from 'pg';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../../pack/index.js';
import { METRIC_NAMES } from '../../pack/docs.js';
import { templates } from '../../queries/index.js';
import { reports } from '../../reports/index.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import type { ResourceTemplate } from '../../src/content/declarations.js';
import { contentOf } from '../../src/content/index.js';
import { ArgumentError, ConfigError } from '../../src/lib/errors.js';
import { createLiveRegistry } from '../../src/registry/live.js';
import type { Pack } from '../../src/pack.js';
import { createRegistry, type Registry } from '../../src/registry/index.js';
import { runCli } from '../support/cli.js';
import { SUPPORT_READER_ROLE } from '../support/database.js';
import { connectAdmin, startHarness, structured, type Harness } from '../support/harness.js';
import { ALL_PACKS } from '../support/packs.js';
import { SALES_TOOLS } from '../support/tool-names.js';

const TOOLS = SALES_TOOLS;
const URIS = ['querygate://catalog', 'querygate://metrics', 'querygate://schema'];
const READERS: Record<string, string> = { sales: DEFAULT_READER_ROLE, support_desk: SUPPORT_READER_ROLE };

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin.end();
});

type Text = { uri: string; mimeType?: string; text: string };

/** A resource's text through whichever client the harness connected. */
async function read(h: Harness, era: 'legacy' | 'modern', uri: string): Promise<Text> {
  const result = era === 'modern' ? await h.modern.readResource({ uri }) : await h.client.readResource({ uri });
  expect(result.contents).toHaveLength(1);
  return result.contents[0] as Text;
}

/** The error a request was refused with: its JSON-RPC code and data. */
async function refusal(request: Promise<unknown>): Promise<{ code: number; message: string; data: unknown }> {
  try {
    await request;
  } catch (err) {
    const { code, message, data } = err as { code: number; message: string; data: unknown };
    return { code, message, data };
  }
  throw new Error('expected the request to be refused');
}

/** The sections of a Markdown text, by their "## " or "### " heading. */
function sections(text: string, level: '##' | '###'): Map<string, string> {
  const found = new Map<string, string>();
  for (const part of text.split(new RegExp(`^${level} `, 'm')).slice(1)) {
    found.set(part.slice(0, part.indexOf('\n')), part);
  }
  return found;
}

describe.each(['legacy', 'modern'] as const)('the documentation resources, %s', (era) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ content: contentOf([salesPack]), era });
  });
  afterAll(async () => {
    await h.close();
  });

  it('are listed, as Markdown, with the weekly report as a template', async () => {
    const client = era === 'modern' ? h.modern : h.client;
    const { resources } = await client.listResources();
    expect(resources.map((r) => [r.uri, r.mimeType])).toEqual(URIS.map((uri) => [uri, 'text/markdown']));
    for (const resource of resources) {
      expect(resource.name).toBeTruthy();
      expect(resource.description!.length).toBeGreaterThan(40);
    }
    expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
      expect.objectContaining({ uriTemplate: 'querygate://reports/weekly/{week}', mimeType: 'text/markdown' }),
      expect.objectContaining({ uriTemplate: 'querygate://catalog/query_metrics/{metric}', mimeType: 'text/markdown' }),
    ]);
  });

  it('catalog every tool with its arguments as tools/list gives them, and an example call that works', async () => {
    const { text, mimeType } = await read(h, era, 'querygate://catalog');
    expect(mimeType).toBe('text/markdown');
    const listed = (era === 'modern' ? await h.modern.listTools() : await h.client.listTools()).tools;
    const tools = sections(text, '##');
    expect([...tools.keys()].map((heading) => heading.split(':')[0])).toEqual(TOOLS);
    // Every argument with its whole schema: the period's names, which the listing leaves to the instructions, too.
    const whole = createRegistry(templates, { reports }).argumentSchemas;
    for (const tool of listed) {
      const section = tools.get(`${tool.name}: ${tool.title}`)!;
      expect(section, tool.name).toContain(tool.description!);
      const inputSchema = whole.get(tool.name) as typeof tool.inputSchema;
      const required = new Set(inputSchema.required ?? []);
      for (const [name, property] of Object.entries(inputSchema.properties ?? {})) {
        const row = section.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
        expect(row, `${tool.name}.${name}`).toBeDefined();
        const cells = row!.split(' | ');
        expect(cells[2], `${tool.name}.${name} required`).toBe(required.has(name) ? 'yes' : 'no');
        const values = (property as { enum?: string[] }).enum ?? [];
        expect(cells[3], `${tool.name}.${name} values`).toBe(values.map((v) => `\`${v}\``).join(', '));
      }
      const example = /```json\n(.*)\n```/.exec(section)?.[1];
      expect(example, tool.name).toBeDefined();
      const call = JSON.parse(example!) as { name: string; arguments: Record<string, unknown> };
      expect(call.name).toBe(tool.name);
      structured(await h.call(call.name, call.arguments)); // fails the test with the error text if refused
    }
  });

  it("serve query_metrics' guide one metric at a time, completed and refused by name", async () => {
    const client = era === 'modern' ? h.modern : h.client;
    const { text: catalog } = await read(h, era, 'querygate://catalog');
    const metrics = salesPack.templates.find((t) => t.name === 'query_metrics')!.guidePages!;
    expect(metrics.variable).toBe('metric');
    const names = Object.keys(metrics.pages);
    const ref = { type: 'ref/resource' as const, uri: 'querygate://catalog/query_metrics/{metric}' };
    const offered = await client.complete({ ref, argument: { name: 'metric', value: 'refund' } });
    expect(offered.completion.values).toEqual(names.filter((n) => n.startsWith('refund')));
    for (const name of names) {
      const { text, mimeType } = await read(h, era, `querygate://catalog/query_metrics/${name}`);
      expect(mimeType).toBe('text/markdown');
      // The metric's row of the catalog, and none of the others'.
      const row = (of: string): string | undefined =>
        catalog.split('\n').find((line) => line.startsWith(`| \`${of}\` |`));
      expect(text.split('\n')).toContain(row(name));
      for (const other of names.filter((n) => n !== name)) expect(text, `${name} page`).not.toContain(row(other));
      expect(text).toContain('### Dimensions');
      // Every example call on the page asks for the metric, and answers.
      const calls = [...text.matchAll(/^\| .* \| `(\{.*\})` \|$/gm)].map(
        (m) => JSON.parse(m[1]!) as { metrics: string[] },
      );
      expect(calls.length, name).toBeGreaterThan(0);
      for (const args of calls) {
        expect(args.metrics).toContain(name);
        structured(await h.call('query_metrics', args));
      }
      expect(Buffer.byteLength(text)).toBeLessThan(Buffer.byteLength(catalog) / 2);
    }
    const uri = 'querygate://catalog/query_metrics/no_such_metric';
    const error = await refusal(era === 'modern' ? h.modern.readResource({ uri }) : h.client.readResource({ uri }));
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/metric: "no_such_metric" is not one of orders, /);
  });

  it('define every figure: net of cancellations and refunds, averages per currency, freshness', async () => {
    const { text, mimeType } = await read(h, era, 'querygate://metrics');
    expect(mimeType).toBe('text/markdown');
    const figures = sections(text, '###');
    expect([...figures.keys()].map((heading) => heading.split(':')[0])).toEqual([...METRIC_NAMES, 'data_as_of']);
    const figure = (name: string): string => [...figures].find(([heading]) => heading.startsWith(`${name}:`))![1];
    expect(figure('revenue')).toMatch(/cancelled and refunded orders are left out/);
    expect(figure('avg_order_value')).toMatch(/revenue \/ order_count/);
    expect(figure('avg_order_value')).toMatch(/never added across currencies/);
    expect(figure('order_count')).toMatch(/every order placed in the range, whatever its status/);
    expect(figure('data_as_of')).toMatch(/same transaction/);
    expect(figure('data_as_of')).toMatch(/replication lag/);
  });

  it('document the views without any personal column', async () => {
    const { text } = await read(h, era, 'querygate://schema');
    const views = sections(text, '###');
    expect([...views.keys()]).toEqual(Object.keys(salesPack.views!));
    for (const key of Object.keys(salesPack.personalColumns)) {
      const [schema, view, column] = key.split('.');
      const section = views.get(`${schema}.${view}`) ?? '';
      expect(
        section.split('\n').some((line) => line.startsWith(`| \`${column}\` |`)),
        key,
      ).toBe(false);
    }
    expect(views.get('reporting.customers')).toContain('| `region` |');
  });

  it(`answers a URI that names nothing with ${era === 'modern' ? '-32602' : '-32002'} and the URI in data`, async () => {
    const uri = 'querygate://nothing-here';
    const request = era === 'modern' ? h.modern.readResource({ uri }) : h.client.readResource({ uri });
    const error = await refusal(request);
    expect(error.code).toBe(era === 'modern' ? -32602 : -32002);
    expect(error.message).toContain('Resource not found');
    expect(error.data).toEqual({ uri });
  });
});

describe('the catalog of a caller with a toolset', () => {
  it('holds only the tools the caller may call', async () => {
    const h = await startHarness({
      content: contentOf([salesPack]),
      caller: { id: 'analyst', tools: new Set(['query_sales', 'query_order_count']) },
    });
    try {
      const { text } = await read(h, 'legacy', 'querygate://catalog');
      expect([...sections(text, '##').keys()].map((heading) => heading.split(':')[0])).toEqual([
        'query_order_count',
        'query_sales',
      ]);
      expect(text).not.toContain('query_recent_orders');
    } finally {
      await h.close();
    }
    const none = await startHarness({ content: contentOf([salesPack]), caller: { id: 'nobody', tools: new Set() } });
    try {
      expect((await read(none, 'legacy', 'querygate://catalog')).text).toContain('No tool is open to you.');
    } finally {
      await none.close();
    }
  });
});

describe('the catalog, subscribed to', () => {
  const everyTool = (): Registry => createRegistry(templates);
  const fewer = (): Registry => createRegistry(templates.filter((t) => t.name !== 'query_top_products'));

  it('tells a 2025-11-25 session when a reload changes it, until it unsubscribes', async () => {
    const live = createLiveRegistry(everyTool());
    const h = await startHarness({ content: contentOf([salesPack]), registry: live });
    const updates: string[] = [];
    h.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri));
    try {
      expect(h.client.getServerCapabilities()?.resources).toEqual({ subscribe: true, listChanged: false });
      await h.client.subscribeResource({ uri: 'querygate://catalog' });
      await h.client.subscribeResource({ uri: 'querygate://metrics' });
      live.replace(fewer());
      await expect.poll(() => updates).toEqual(['querygate://catalog']);
      expect((await read(h, 'legacy', 'querygate://catalog')).text).not.toContain('query_top_products');
      await h.client.unsubscribeResource({ uri: 'querygate://catalog' });
      live.replace(everyTool());
      await h.client.listTools(); // a round trip, after which a notification would have arrived
      expect(updates).toEqual(['querygate://catalog']);
      const unknown = await refusal(h.client.subscribeResource({ uri: 'querygate://nothing' }));
      expect([unknown.code, unknown.data]).toEqual([-32002, { uri: 'querygate://nothing' }]);
    } finally {
      await h.close();
    }
  });

  it('tells a 2026-07-28 client on its subscriptions/listen stream, for the resources it acknowledged', async () => {
    const live = createLiveRegistry(everyTool());
    const h = await startHarness({ content: contentOf([salesPack]), registry: live, era: 'modern' });
    const updates: unknown[] = [];
    h.modern.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params));
    try {
      const subscription = await h.modern.listen({
        resourceSubscriptions: ['querygate://catalog', 'querygate://schema', 'test://elsewhere'],
      });
      expect(subscription.honoredFilter).toEqual({
        resourceSubscriptions: ['querygate://catalog', 'querygate://schema'],
      });
      live.replace(fewer());
      await expect.poll(() => updates).toHaveLength(1);
      expect(updates[0]).toMatchObject({ uri: 'querygate://catalog' });
      await subscription.close();
    } finally {
      await h.close();
    }
  });
});

describe("the views' documentation against the database", () => {
  interface Column {
    view: string;
    column: string;
    readable: boolean;
  }

  it.each(ALL_PACKS.filter((p) => p.views !== undefined).map((p) => [p.name, p] as const))(
    '%s: documents every column the reader may read, and only those, but its personal ones',
    async (_name, pack) => {
      const reader = READERS[pack.name]!;
      const columns = (
        await admin.query<Column>(
          `select c.table_schema || '.' || c.table_name as view, c.column_name as column,
                  has_column_privilege($1, format('%I.%I', c.table_schema, c.table_name), c.column_name, 'SELECT') as readable
             from information_schema.columns c
            where c.table_schema = any($2)
            order by c.table_schema, c.table_name, c.ordinal_position`,
          [reader, pack.readerSchemas],
        )
      ).rows;
      const personal = new Set(Object.keys(pack.personalColumns));
      const readable = columns.filter((c) => c.readable);
      const documented = Object.entries(pack.views ?? {}).flatMap(([view, doc]) =>
        Object.keys(doc!.columns).map((column) => `${view}.${column}`),
      );
      // Every documented column exists and the reader may read it...
      const unreadable = documented.filter((key) => !readable.some((c) => `${c.view}.${c.column}` === key));
      expect(unreadable).toEqual([]);
      // ...every column the reader may read is documented, unless it is personal...
      const undocumented = readable
        .map((c) => `${c.view}.${c.column}`)
        .filter((key) => !personal.has(key) && !documented.includes(key));
      expect(undocumented).toEqual([]);
      // ...and every view the reader reads is documented.
      expect(Object.keys(pack.views ?? {}).sort()).toEqual([...new Set(readable.map((c) => c.view))].sort());
    },
  );

  it('has a pack to hold to it', () => {
    expect(ALL_PACKS.filter((p) => p.views !== undefined).map((p) => p.name)).toContain('sales');
  });
});

describe('a documentation that names a personal column', () => {
  const naming = (view: string, column: string): Pack => ({
    ...salesPack,
    views: { ...salesPack.views, [view]: { description: 'People.', columns: { region: 'where', [column]: 'oops' } } },
  });

  it('is refused when the content is built, naming the view, the column and its kind', () => {
    expect(() => contentOf([naming('reporting.customers', 'email_masked')])).toThrow(ConfigError);
    expect(() => contentOf([naming('reporting.customers', 'email_masked')])).toThrow(
      /views\["reporting\.customers"\]\.columns\.email_masked is a personal column \(email\)/,
    );
    expect(() => contentOf([naming('reporting.orders', 'customer_id')])).toThrow(/customer_id is a personal column/);
    expect(() => contentOf([naming('sales.customers', 'region')])).toThrow(/in a schema the reader reads/);
  });

  it('stops the server at start-up, before it touches the database', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'querygate-docs-'));
    try {
      const module = join(dir, 'pack.mjs');
      await writeFile(
        module,
        `import sales from ${JSON.stringify(resolve('dist/pack/index.js'))};
export default { ...sales, views: { ...sales.views, 'reporting.customers': { description: 'People.', columns: { phone_last4: 'a phone' } } } };`,
      );
      const { code, stderr } = await runCli(['serve'], {
        QUERYGATE_PACKS: module,
        DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
      });
      expect(code).toBe(2);
      expect(stderr).toMatch(/querygate: pack sales: .*phone_last4 is a personal column \(phone\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a resource template a pack plugs in', () => {
  /** May's orders of one status, read through query_order_count as the caller. */
  const statusCounts: ResourceTemplate = {
    uriTemplate: 'test://orders/{status}/may',
    name: 'may_orders',
    title: 'May orders of one status',
    description: 'How many orders of a status were placed in May 2025.',
    mimeType: 'application/json',
    tools: ['query_order_count'],
    completions: { status: { values: ['pending', 'paid', 'shipped', 'cancelled', 'refunded'] } },
    read: async ({ status }, ctx) => {
      if (!/^[a-z]+$/.test(status!)) throw new ArgumentError([{ field: 'status', rule: 'must be lower-case letters' }]);
      const result = await ctx.callTool('query_order_count', {
        start_date: '2025-05-01',
        end_date: '2025-05-31',
        status,
      });
      return JSON.stringify(result.structuredContent);
    },
  };
  const pack: Pack = { ...salesPack, resourceTemplates: [statusCounts] };

  it('is listed, read with its variables, completed, and refuses a variable that breaks its rule', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const h = await startHarness({ content: contentOf([pack]), era });
      const client = era === 'modern' ? h.modern : h.client;
      try {
        expect((await client.listResourceTemplates()).resourceTemplates).toEqual([
          {
            uriTemplate: 'test://orders/{status}/may',
            name: 'may_orders',
            title: 'May orders of one status',
            description: 'How many orders of a status were placed in May 2025.',
            mimeType: 'application/json',
          },
          // The engine's own, beside the pack's: query_metrics' guide a metric at a time.
          expect.objectContaining({ uriTemplate: 'querygate://catalog/query_metrics/{metric}' }),
        ]);
        const { rows } = await admin.query<{ n: number }>(
          `select count(*)::int as n from sales.orders
            where status = 'refunded' and ordered_at >= '2025-05-01T00:00:00Z' and ordered_at < '2025-06-01T00:00:00Z'`,
        );
        const text = await read(h, era, 'test://orders/refunded/may');
        expect(text.mimeType).toBe('application/json');
        expect(JSON.parse(text.text)).toMatchObject({ order_count: rows[0]!.n });
        const completion = await client.complete({
          ref: { type: 'ref/resource', uri: 'test://orders/{status}/may' },
          argument: { name: 'status', value: 'p' },
        });
        expect(completion.completion).toEqual({ values: ['pending', 'paid'], total: 2, hasMore: false });
        const bad = await refusal(client.readResource({ uri: 'test://orders/Refunded/may' }));
        expect(bad.code).toBe(-32602);
        expect(bad.message).toMatch(/status: must be lower-case letters/);
        const elsewhere = await refusal(client.readResource({ uri: 'test://orders/refunded/june' }));
        expect(elsewhere.code).toBe(era === 'modern' ? -32602 : -32002);
      } finally {
        await h.close();
      }
    }
  });

  it('is refused when it has no variable, shadows a resource, or completes a variable it lacks', () => {
    const with_ = (template: Partial<ResourceTemplate>): Pack => ({
      ...salesPack,
      resourceTemplates: [{ ...statusCounts, ...template }],
    });
    expect(() => contentOf([with_({ uriTemplate: 'test://fixed' })])).toThrow(/has no variable/);
    expect(() => contentOf([with_({ uriTemplate: 'querygate://{page}' })])).toThrow(
      /matches the URI of the resource querygate:\/\/catalog/,
    );
    expect(() => contentOf([with_({ completions: { colour: { values: [] } } })])).toThrow(
      /colour, which is not a variable/,
    );
  });
});

describe('a resource template whose tools the caller may not call', () => {
  it('19.5.8 is not listed, and its URIs and completions are refused as those of no template', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      // May count orders, not read the weekly report that querygate://reports/weekly/{week} reads.
      const h = await startHarness({
        content: contentOf([salesPack]),
        era,
        caller: { id: 'counter', tools: new Set(['query_order_count']) },
      });
      const client = era === 'modern' ? h.modern : h.client;
      try {
        expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
        const hidden = await refusal(client.readResource({ uri: 'querygate://reports/weekly/2025-W24' }));
        const none = await refusal(client.readResource({ uri: 'querygate://reports/nothing/2025-W24' }));
        expect(hidden.code).toBe(none.code);
        expect(hidden.message).toBe(none.message.replace('nothing', 'weekly'));
        const completion = refusal(
          client.complete({
            ref: { type: 'ref/resource', uri: 'querygate://reports/weekly/{week}' },
            argument: { name: 'week', value: '' },
          }),
        );
        expect((await completion).message).toMatch(
          /Unknown resource template: "querygate:\/\/reports\/weekly\/\{week\}"/,
        );
        // Nothing was called on its behalf.
        expect(h.audits).toEqual([]);
      } finally {
        await h.close();
      }
    }
  });

  it('19.5.8 is refused at start-up when it does not declare the tools it reads', () => {
    const { tools: _tools, ...undeclared } = weeklyTemplate();
    expect(() => contentOf([{ ...salesPack, resourceTemplates: [undeclared as ResourceTemplate] }])).toThrow(
      /resource template querygate:\/\/reports\/weekly\/\{week\}: declare tools, the tools its read calls/,
    );
  });
});

const weeklyTemplate = (): ResourceTemplate => salesPack.resourceTemplates![0]!;
