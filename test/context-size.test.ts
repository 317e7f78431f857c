/**
 * Issue 30, Wanted 7: what a model using the default server reads before its first question,
 * `tools/list` plus whatever the descriptions send it to. The sales pack's tools, its reports and
 * their job tools, listed through a real MCP client, counted as the bytes of JSON.stringify(tools),
 * plus the text of every fixed resource a description names (querygate://catalog was one, 11,148
 * bytes); a URI template a description names (querygate://catalog/query_metrics/{metric}) is a page a
 * model reads when it needs that one metric, and is not counted. The instructions, which say once
 * what many tools share, are held apart. Sizes are deterministic, so they are asserted.
 *
 * Two clients: one of 2025-11-25, which lists the job tools a report runs in the background with,
 * and one of 2026-07-28 declaring the tasks extension, which runs the same report as a task and so is
 * not listed the job tools (it may still call them).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { salesPack } from '../pack/index.js';
import { contentOf } from '../src/content/index.js';
import { PERIODS } from '../src/lib/periods.js';
import { SHARED_ANSWER_FIELDS } from '../src/registry/outputs.js';
import { startHarness, type Harness } from './support/harness.js';
import { SALES_TOOLS } from './support/tool-names.js';

/** Issue 30's budget, 8 KB as 8,000 bytes, held by both listings with what their descriptions send a model to. */
const BEFORE_FIRST_QUESTION = 8_000;
/**
 * The listing a client without tasks gets: 7,850 bytes, 10 tools (6,655 for the tasks client, 7 tools),
 * the three job tools (submit_trend_report, get_report_job, cancel_report_job) among them, and no
 * resource a description sends a model to. 61,399 bytes before issue 21's diet; 11,929 after it, with
 * querygate://catalog (11,148 bytes) named by query_metrics. Issue 30's diet: output schemas list
 * `{"type": "object"}` (the whole answer schema is the public contract), -2,681; inputs list without
 * the period's twelve names (the instructions list them once), additionalProperties: false, text
 * lengths and empty-list bounds, -1,550; openWorldHint: false back on every tool, +220; query_metrics
 * sends a model to one metric's page rather than the whole catalog, -11,148. Issue 31: the product
 * filter's values are SKUs, and list their pattern, +17.
 */
const PLAIN_CLIENT_BYTES = 7_993;
const TASKS_CLIENT_BYTES = 6_860;
/** The instructions: what every tool shares, the period's names and the 90-day rule said once. */
const INSTRUCTIONS_BYTES = 2_500;
const JOB_TOOLS = ['get_report_job', 'cancel_report_job'];

const bytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));
const perTool = (tools: Tool[]): string =>
  tools
    .map(
      (t) =>
        `${t.name}: ${bytes(t)} (description ${bytes(t.description)}, input ${bytes(t.inputSchema)}, output ${bytes(t.outputSchema)})`,
    )
    .join('\n');

let plain: Harness;
let withTasks: Harness;
let tools: Tool[];
let taskTools: Tool[];
let instructions: string;

beforeAll(async () => {
  // The job store served, as `querygate serve` serves the embedded database: the job tools are listed.
  const options = {
    templates: salesPack.templates,
    reports: salesPack.reports ?? [],
    jobs: {},
    content: contentOf([salesPack]),
  };
  plain = await startHarness(options);
  withTasks = await startHarness({ ...options, era: 'modern', extensions: { 'io.modelcontextprotocol/tasks': {} } });
  ({ tools } = await plain.client.listTools());
  ({ tools: taskTools } = (await withTasks.modern.listTools()) as unknown as { tools: Tool[] });
  instructions = plain.client.getInstructions() ?? '';
});
afterAll(async () => {
  await plain?.close();
  await withTasks?.close();
});

const submitTools = (salesPack.reports ?? []).flatMap((r) => (r.job ? [r.job.submitTool] : []));

it('lists every tool to a client without tasks: the queries, the reports, and the job tools', () => {
  expect(tools.map((t) => t.name)).toEqual([...SALES_TOOLS, ...submitTools, ...JOB_TOOLS]);
});

it('lists the same tools but the job tools to a client of the tasks extension, which runs reports as tasks', () => {
  expect(submitTools.length).toBeGreaterThan(0);
  expect(taskTools.map((t) => t.name)).toEqual(SALES_TOOLS);
  // The same tools, listed the same: only the job tools are left out.
  expect(taskTools).toEqual(tools.filter((t) => SALES_TOOLS.includes(t.name)));
});

/** The fixed resources (querygate://...) the descriptions name, read through the client, and their bytes. */
async function sentTo(list: Tool[], read: (uri: string) => Promise<string>): Promise<Map<string, number>> {
  const uris = new Set(
    list.flatMap((t) => [...(t.description ?? '').matchAll(/querygate:\/\/[^\s,;]*[^\s,;.]/g)].map((m) => m[0])),
  );
  const sent = new Map<string, number>();
  for (const uri of uris) if (!uri.includes('{')) sent.set(uri, Buffer.byteLength(await read(uri)));
  return sent;
}
const readWith =
  (client: { readResource(p: { uri: string }): Promise<{ contents: unknown[] }> }) =>
  async (uri: string): Promise<string> =>
    ((await client.readResource({ uri })).contents[0] as { text: string }).text;

it('sends a model to no fixed resource before its first question, only to one metric page at a time', async () => {
  for (const [list, client] of [
    [tools, plain.client],
    [taskTools, withTasks.modern],
  ] as const) {
    expect(Object.fromEntries(await sentTo(list, readWith(client)))).toEqual({});
  }
  // The page query_metrics names, read when a model needs one metric: a template, with a page per metric.
  const metrics = tools.find((t) => t.name === 'query_metrics')!;
  expect(metrics.description).toContain('querygate://catalog/query_metrics/{metric}');
  const page = await readWith(plain.client)('querygate://catalog/query_metrics/refund_rate');
  expect(page).toMatch(/^# refund_rate\n/);
  expect(page).not.toMatch(/`units` \|/);
  // The check itself: the catalog, named in a description, would count.
  const named = [{ ...metrics, description: 'See querygate://catalog.' }];
  const catalog = await sentTo(named, readWith(plain.client));
  expect(catalog.get('querygate://catalog')).toBeGreaterThan(5_000);
});

it(`reads at most ${BEFORE_FIRST_QUESTION} bytes before the first question, with either client`, () => {
  for (const [name, list, figure] of [
    ['tasks', taskTools, TASKS_CLIENT_BYTES],
    ['plain', tools, PLAIN_CLIENT_BYTES],
  ] as const) {
    const total = bytes(list);
    expect(total, `${name}: tools/list is ${total} bytes:\n${perTool(list)}`).toBeLessThanOrEqual(
      BEFORE_FIRST_QUESTION,
    );
    // The figure the docs quote (docs/tools.md, BENCHMARKS.md): a change that grows the listing says so.
    expect(total, `${name}: tools/list is ${total} bytes:\n${perTool(list)}`).toBeLessThanOrEqual(figure);
  }
  expect(Buffer.byteLength(instructions)).toBeLessThanOrEqual(INSTRUCTIONS_BYTES);
});

it('marks every tool closed-world: openWorldHint false (its MCP default is true)', () => {
  for (const tool of tools) expect(tool.annotations?.openWorldHint, tool.name).toBe(false);
});

it('lists every output schema as an object, which every answer is; the whole answer schema is the contract', () => {
  for (const tool of tools) expect(tool.outputSchema, tool.name).toEqual({ type: 'object' });
});

it('says the fields every answer shares once, in the instructions, and lists them in no tool', () => {
  for (const field of SHARED_ANSWER_FIELDS) expect(instructions, field).toContain(field);
  for (const tool of tools) {
    const listed = Object.keys((tool.outputSchema?.properties ?? {}) as object);
    expect(
      listed.filter((name) => SHARED_ANSWER_FIELDS.has(name)),
      tool.name,
    ).toEqual([]);
  }
  // What the date arguments and compare_to mean is said there too, not on each tool: every period's
  // name, which no listing repeats, the 90-day rule and how to split a longer span.
  expect(instructions).toMatch(/period instead.*last_N_days end yesterday/);
  for (const period of PERIODS) expect(instructions).toContain(period);
  for (const tool of tools) expect(JSON.stringify(tool.inputSchema), tool.name).not.toContain('last_28_days');
  expect(instructions).toMatch(/at most 90 days.*Split a longer span.*quarter of 92 days/);
  expect(instructions).toMatch(/compare_to.*previous_period.*previous_year/);
});
