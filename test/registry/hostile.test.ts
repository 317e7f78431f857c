/**
 * Hostile and edge-case arguments through a real MCP client, each applied to every tool that takes the
 * field it targets: a case either succeeds with the right answer (only the genuinely valid ones) or is
 * refused with "Invalid arguments: " naming the field, and no text leaks SQL, schema names, stacks or
 * connection strings. Afterwards the data is checked unchanged. Then malformed JSON-RPC over HTTP and
 * over stdio, against the built CLI (`npm run build` first).
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CLI, startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin, figures, startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { isNet, loadSalesData, ordersBetween, type SalesData } from '../support/sales-data.js';

type Tool = 'query_order_count' | 'query_sales' | 'query_top_products' | 'query_recent_orders' | 'query_metrics';
type Field =
  'start_date' | 'end_date' | 'status' | 'group_by' | 'metric' | 'limit' | 'filters' | 'customer_fields' | 'metrics';
type Args = Record<string, unknown>;

const RANGE = { start_date: '2025-05-01', end_date: '2025-05-31' };

/** A valid call per tool and the fields the tool takes; every case changes one thing in it. */
const TOOLS: Record<Tool, { readonly base: Args; readonly fields: readonly Field[] }> = {
  query_order_count: { base: { ...RANGE }, fields: ['start_date', 'end_date', 'status'] },
  query_sales: { base: { ...RANGE, group_by: 'week' }, fields: ['start_date', 'end_date', 'group_by'] },
  query_top_products: { base: { ...RANGE }, fields: ['start_date', 'end_date', 'limit', 'metric'] },
  query_recent_orders: {
    base: { ...RANGE },
    fields: ['start_date', 'end_date', 'status', 'limit', 'filters', 'customer_fields'],
  },
  query_metrics: {
    base: { ...RANGE, metrics: ['revenue'], group_by: ['week'] },
    fields: ['start_date', 'end_date', 'limit', 'filters', 'metrics'],
  },
};
const TOOL_NAMES = Object.keys(TOOLS) as Tool[];
const STRING_FIELDS = ['start_date', 'end_date', 'status', 'group_by', 'metric'] as const;
/** A valid value of each string field, for payloads appended to one. */
const VALID: Record<(typeof STRING_FIELDS)[number], string> = {
  start_date: RANGE.start_date,
  end_date: RANGE.end_date,
  status: 'paid',
  group_by: 'day',
  metric: 'units',
};

/** `nothing`: a valid call that no row can match (a region label that names no region): an answer of no rows. */
type Expected =
  { kind: 'ok' } | { kind: 'nothing' } | { kind: 'rejected'; names: string | RegExp } | { kind: 'protocol' };

interface Case {
  readonly tool: Tool;
  readonly label: string;
  readonly args: unknown;
  readonly expected: Expected;
}

const ok: Expected = { kind: 'ok' };
const nothing: Expected = { kind: 'nothing' };
const protocol: Expected = { kind: 'protocol' };
const rejected = (names: string | RegExp): Expected => ({ kind: 'rejected', names });

const cases: Case[] = [];

/** One value in one field, for every tool that takes the field. */
function inField(field: Field, label: string, value: unknown, expected = rejected(field)): void {
  for (const tool of TOOL_NAMES) {
    if (!TOOLS[tool].fields.includes(field)) continue;
    cases.push({ tool, label: `${field} ${label}`, args: { ...TOOLS[tool].base, [field]: value }, expected });
  }
}

/** Arguments built from each tool's valid call. */
function forEveryTool(label: string, build: (base: Args) => unknown, expected: Expected): void {
  for (const tool of TOOL_NAMES) cases.push({ tool, label, args: build(TOOLS[tool].base), expected });
}

const range =
  (start_date: unknown, end_date: unknown) =>
  (base: Args): Args => ({ ...base, start_date, end_date });

/** The valid call plus raw JSON members, parsed so that keys like __proto__ become real own keys. */
const withMembers =
  (members: string) =>
  (base: Args): Args =>
    JSON.parse(`${JSON.stringify(base).slice(0, -1)},${members}}`) as Args;

const without =
  (field: Field) =>
  (base: Args): Args =>
    Object.fromEntries(Object.entries(base).filter(([key]) => key !== field));

const MB = 1 << 20;
const nestedObject = (depth: number): unknown => JSON.parse(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);
const nestedArray = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`);

// Genuinely valid edge cases.
forEveryTool('leap day 2024-02-29', range('2024-02-29', '2024-02-29'), ok);
forEveryTool('exactly 90 days', range('2025-01-01', '2025-03-31'), ok);
forEveryTool('exactly 90 days across a leap day', range('2024-01-01', '2024-03-30'), ok);
forEveryTool('across a year end', range('2024-12-31', '2025-01-01'), ok);
forEveryTool('the first day of year 1', range('0001-01-01', '0001-01-01'), ok);
forEveryTool('the last 90 days of year 9999', range('9999-10-03', '9999-12-31'), ok);
inField('limit', '1', 1, ok);
inField('limit', '100', 100, ok);

// Impossible, malformed and out-of-range dates.
const BAD_RANGES: readonly [label: string, start: unknown, end: unknown, names: Field][] = [
  ['2023-02-29 (not a leap year)', '2023-02-29', '2023-03-01', 'start_date'],
  ['2025-02-30', '2025-02-01', '2025-02-30', 'end_date'],
  ['2025-13-01', '2025-13-01', '2025-01-31', 'start_date'],
  ['0000-00-00', '0000-00-00', '2025-01-31', 'start_date'],
  ['9999-99-99', '2025-01-01', '9999-99-99', 'end_date'],
  ['0000-01-01 (there is no year 0)', '0000-01-01', '0000-01-01', 'start_date'],
  ['2025-1-1', '2025-1-1', '2025-01-31', 'start_date'],
  ['2025-01-01Z', '2025-01-01Z', '2025-01-31', 'start_date'],
  ['2025-01-01+02:00', '2025-01-01+02:00', '2025-01-31', 'start_date'],
  ['2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z', '2025-01-31', 'start_date'],
  ['2025-01-31T23:59:59+02:00', '2025-01-01', '2025-01-31T23:59:59+02:00', 'end_date'],
  ['91 days', '2025-01-01', '2025-04-01', 'end_date'],
  ['91 days across a leap day', '2024-01-01', '2024-03-31', 'end_date'],
  ['end before start', '2025-02-01', '2025-01-31', 'end_date'],
  ['a 1 MB string', 'x'.repeat(MB), '2025-01-31', 'start_date'],
  ['a valid day and 1 MB of spaces', '2025-01-01', `2025-01-31${' '.repeat(MB)}`, 'end_date'],
  ['a trailing NUL', '2025-01-01\u0000', '2025-01-31', 'start_date'],
  ['a NUL inside', '2025-01-01', '2025-01\u0000-31', 'end_date'],
  ['a lone high surrogate', '\uD800', '2025-01-31', 'start_date'],
  ['a lone low surrogate inside', '2025-01-01', '2025-01-3\uDC00', 'end_date'],
  ['a trailing emoji', '2025-01-01\u{1F600}', '2025-01-31', 'start_date'],
  ['only an emoji', '2025-01-01', '\u{1F4C5}', 'end_date'],
  ['fullwidth digits', '\uFF12\uFF10\uFF12\uFF15-01-01', '2025-01-31', 'start_date'],
  ['Arabic-Indic digits', '\u0662\u0660\u0662\u0665-01-01', '2025-01-31', 'start_date'],
  ['Unicode hyphens', '2025\u201001\u201001', '2025-01-31', 'start_date'],
  ['Unicode minus signs', '2025-01-01', '2025\u221201\u221231', 'end_date'],
  ['a trailing newline', '2025-01-01\n', '2025-01-31', 'start_date'],
  ['a leading space', ' 2025-01-01', '2025-01-31', 'start_date'],
  ['an expanded year', '+002025-01-01', '2025-01-31', 'start_date'],
  ['a negative year', '-2025-01-01', '2025-01-31', 'start_date'],
  ['a five-digit year', '2025-01-01', '10000-01-01', 'end_date'],
  ['no separators', '20250101', '2025-01-31', 'start_date'],
  ['slashes', '2025/01/01', '2025-01-31', 'start_date'],
  ['day first', '01-01-2025', '2025-01-31', 'start_date'],
  ['an empty string', '', '2025-01-31', 'start_date'],
  ['a SQL function', 'now()', '2025-01-31', 'start_date'],
  ['a relative word', '2025-01-01', 'today', 'end_date'],
];
for (const [label, start, end, names] of BAD_RANGES) forEveryTool(label, range(start, end), rejected(names));

// SQL injection, comments, look-alike quotes and backslashes, as the whole value of every string field...
const INJECTIONS = [
  "'; DROP TABLE sales.orders; --",
  "2025-01-01'; COMMIT; DELETE FROM sales.orders; --",
  "2025-01-01' OR '1'='1",
  "2025-01-01'::date + interval '1 year",
  '2025-01-01/* */',
  '/**/2025-01-01',
  '2025-01-01 -- comment',
  '2025-01-01--',
  '2025-01-01\u2019; DROP TABLE sales.orders; --',
  '2025-01-01\u02BC; DROP TABLE sales.orders; --',
  '2025-01-01\uFF07; DROP TABLE sales.orders; --',
  "2025-01-01\\'; DROP TABLE sales.orders; --",
  '2025-01-01\\',
  '\\x27; DROP TABLE sales.orders; --',
  '$$; DROP TABLE sales.orders; $$',
  "paid' UNION SELECT email FROM sales.customers --",
  "day'); TRUNCATE sales.order_items; --",
  'units"; DROP TABLE "sales"."products"; --',
];
for (const field of STRING_FIELDS) {
  for (const payload of INJECTIONS) inField(field, `= ${JSON.stringify(payload)}`, payload);
}
// ...and appended to a valid value of it.
const SUFFIXES = ["'; DROP TABLE sales.orders; --", "' OR '1'='1", '/* */', ' --', '\u2019', '\u02BC', '\uFF07', '\\'];
for (const field of STRING_FIELDS) {
  for (const suffix of [...SUFFIXES, '\u0000']) {
    inField(field, `= ${JSON.stringify(VALID[field] + suffix)}`, VALID[field] + suffix);
  }
}

// Wrong types for every field.
for (const field of STRING_FIELDS) {
  const types: readonly [string, unknown][] = [
    ['true', true],
    ['false', false],
    ['null', null],
    ['{}', {}],
    ['[]', []],
    ['[valid value]', [VALID[field]]],
    ['a number', 20250101],
    ['1e308', 1e308],
    ['an operator object', { $gt: '' }],
  ];
  for (const [label, value] of types) inField(field, label, value);
  inField(field, 'an object nested 10,000 deep', nestedObject(10_000));
  inField(field, 'an array nested 10,000 deep', nestedArray(10_000));
}
const LIMITS: readonly [string, unknown][] = [
  ['0', 0],
  ['-1', -1],
  ['-0', -0],
  ['-0.5', -0.5],
  ['1.5', 1.5],
  ['100.5', 100.5],
  ['101', 101],
  ['1e308', 1e308],
  ['-1e308', -1e308],
  ['MAX_SAFE_INTEGER + 2', Number.MAX_SAFE_INTEGER + 2],
  ['5e-324', 5e-324],
  ['"10"', '10'],
  ['"1e2"', '1e2'],
  ['true', true],
  ['null', null],
  ['{}', {}],
  ['[10]', [10]],
  ['an operator object', { $lt: 0 }],
  ['an object nested 10,000 deep', nestedObject(10_000)],
];
for (const [label, value] of LIMITS) inField('limit', label, value);

// The list and object arguments: filters, customer_fields, metrics. A label (a region) is a value like
// any other: bound as a parameter, it matches no region, and the answer has no rows.
for (const payload of INJECTIONS) {
  inField('filters', `region = ${JSON.stringify(payload)}`, { region: [payload] }, nothing);
  inField('filters', `status = ${JSON.stringify(payload)}`, { status: [payload] }, rejected('filters.status.0'));
  inField(
    'filters',
    `a filter named ${JSON.stringify(payload)}`,
    { [payload]: ['Europe'] },
    rejected(/(^|; )filters\."/),
  );
  inField('customer_fields', `= [${JSON.stringify(payload)}]`, [payload], rejected('customer_fields.0'));
  inField('metrics', `= [${JSON.stringify(payload)}]`, [payload], rejected('metrics.0'));
}
const LIST_SHAPES: readonly [label: string, value: unknown][] = [
  ['a string', 'Europe'],
  ['null', null],
  ['a number', 1],
  ['an operator object', { $ne: null }],
  ['an object nested 10,000 deep', nestedObject(10_000)],
];
for (const [label, value] of LIST_SHAPES) {
  inField('filters', label, value, rejected(/(^|; )filters[.: ]/));
  inField('filters', `region ${label}`, { region: value }, rejected('filters.region'));
  inField('customer_fields', label, value);
  inField('metrics', label, value);
}
inField('filters', 'region = [] (no value at all)', { region: [] }, rejected('filters.region'));
inField(
  'filters',
  'region of 10,000 labels',
  { region: Array.from({ length: 10_000 }, (_, i) => `r${i}`) },
  rejected('filters.region'),
);
inField('filters', 'region = a 1 MB label', { region: ['x'.repeat(MB)] }, rejected('filters.region.0'));
inField('filters', 'region = a label with a NUL', { region: ['Europe\u0000'] }, rejected('filters.region.0'));
inField(
  'filters',
  '__proto__ as a filter',
  JSON.parse('{"__proto__":{"region":["Europe"]}}'),
  rejected('filters."__proto__"'),
);
inField('customer_fields', '= [] (say none by leaving it out)', [], rejected('customer_fields'));
inField('customer_fields', 'twice the same field (one field, once)', ['email', 'email'], ok);
inField('metrics', '= [] (none)', [], rejected('metrics'));
inField(
  'metrics',
  'six metrics (more than 5)',
  ['revenue', 'orders', 'net_orders', 'customers', 'units', 'refund_rate'],
  rejected('metrics'),
);

// Unknown, look-alike and prototype-related keys.
const EXTRA_MEMBERS: readonly [label: string, members: string, names: string | RegExp][] = [
  ['an extra country', '"country":"France"', '"country"'],
  ['an extra sql', '"sql":"select * from sales.customers"', '"sql"'],
  ['constructor', '"constructor":{"prototype":{"polluted":true}}', '"constructor"'],
  ['prototype', '"prototype":{"polluted":true}', '"prototype"'],
  ['toString', '"toString":"x"', '"toString"'],
  ['hasOwnProperty', '"hasOwnProperty":1', '"hasOwnProperty"'],
  ['upper-case START_DATE', '"START_DATE":"2025-01-01"', '"START_DATE"'],
  ['"start_date " with a space', '"start_date ":"2025-01-01"', '"start_date "'],
  ['an empty key', '"":1', '""'],
  ['a non-ASCII key', '"\u65E5\u4ED8":"2025-01-01"', '"\u65E5\u4ED8"'],
  ['a NUL key', '"\\u0000":1', '"\\u0000"'],
  ['a 1 MB key', `"${'k'.repeat(MB)}":1`, /(^|; )"k+…":/],
  ['a value nested 10,000 deep', `"x":${'['.repeat(10_000)}${']'.repeat(10_000)}`, '"x"'],
];
for (const [label, members, names] of EXTRA_MEMBERS) forEveryTool(label, withMembers(members), rejected(names));
forEveryTool(
  '10,000 unknown keys',
  withMembers(Array.from({ length: 10_000 }, (_, i) => `"k${i}":${i}`).join(',')),
  rejected(/(^|; )"k0", "k1", "k2", "k3", "k4", and 9995 more: are not known arguments/),
);
forEveryTool(
  '__proto__',
  withMembers('"__proto__":{"polluted":true,"status":"paid","limit":1,"group_by":"day","metric":"units"}'),
  rejected('"__proto__"'),
);

// Missing arguments.
forEveryTool('without start_date', without('start_date'), rejected('start_date'));
forEveryTool('without end_date', without('end_date'), rejected('end_date'));
forEveryTool('without any arguments', () => undefined, rejected('start_date'));
cases.push({
  tool: 'query_sales',
  label: 'without group_by',
  args: without('group_by')(TOOLS.query_sales.base),
  expected: rejected('group_by'),
});

// Arguments that are not an object at all: a JSON-RPC error (-32602 Invalid params) before any tool runs.
for (const [label, args] of [
  ['[]', []],
  ['null', null],
  ['a string', '2025-01-01'],
  ['a number', 42],
  ['true', true],
] as const) {
  forEveryTool(`arguments ${label}`, () => args, protocol);
}

// Statements and stack frames a client must never see; echoes of the caller's own input are removed first.
const LEAKS = [/select/i, /reporting\./i, /sales\./i, /postgres(?:ql)?:\/\//i, /^\s*at\s/m, /\.[cm]?[jt]s:\d+:\d+/];

const tooDeep = (value: object): boolean => {
  try {
    JSON.stringify(value);
    return false;
  } catch {
    return true;
  }
};

/** The top-level keys and values of the arguments as the server would quote them (strings as they are). */
function echoable(args: unknown): string[] {
  if (typeof args !== 'object' || args === null) return [];
  return Object.entries(args).flatMap(([key, value]) => {
    if (typeof value === 'string') return [key, value];
    // A list or an object of strings (filters, customer_fields, metrics): its keys and strings are echoable too.
    if (typeof value === 'object' && value !== null && !tooDeep(value)) return [key, ...echoable(value)];
    try {
      return [key, JSON.stringify(value) ?? String(value)];
    } catch {
      return [key]; // too deep to stringify: the server cannot have echoed it either
    }
  });
}

/** The text without JSON string literals that echo (a prefix of) one of the inputs, possibly cut short with '…'. */
function withoutEchoes(text: string, inputs: readonly string[]): string {
  return text.replace(/"(?:[^"\\]|\\.)*"/g, (literal) => {
    let decoded: unknown;
    try {
      decoded = JSON.parse(literal);
    } catch {
      return literal;
    }
    if (typeof decoded !== 'string') return literal;
    const echoed = decoded.endsWith('…') ? decoded.slice(0, -1) : decoded;
    return inputs.some((input) => input.startsWith(echoed)) ? '""' : literal;
  });
}

function expectSafe(text: string, inputs: readonly string[]): void {
  const own = withoutEchoes(text, inputs);
  for (const leak of LEAKS) expect(own, `text matches ${leak}: ${own.slice(0, 300)}`).not.toMatch(leak);
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const naming = (names: string | RegExp): RegExp =>
  typeof names === 'string' ? new RegExp(`(^|; )${escapeRegExp(names)}[: ]`) : names;

interface Answer {
  start_date: string;
  end_date: string;
  order_count?: number;
  rows?: { order_count?: number }[];
  row_count?: number;
}

let harness: Harness;
let admin: pg.Client;
let data: SalesData;

/** Checks a successful answer against figures computed from the raw rows. */
function expectCorrect(tool: Tool, args: Args, answer: Answer): void {
  const start = args.start_date as string;
  const end = args.end_date as string;
  expect(answer).toMatchObject({ start_date: start, end_date: end });
  const orders = ordersBetween(data, start, end);
  const net = orders.filter(isNet);
  switch (tool) {
    case 'query_order_count':
      expect(answer.order_count).toBe(orders.length);
      break;
    case 'query_sales':
      expect(answer.rows!.reduce((sum, row) => sum + row.order_count!, 0)).toBe(net.length);
      break;
    case 'query_top_products': {
      const netIds = new Set(net.map((o) => o.id));
      const products = new Set(data.items.filter((i) => netIds.has(i.orderId)).map((i) => i.productId));
      expect(answer.row_count).toBe(Math.min((args.limit as number | undefined) ?? 10, products.size));
      break;
    }
    case 'query_recent_orders':
      expect(answer.row_count).toBe(Math.min((args.limit as number | undefined) ?? 20, orders.length));
      break;
  }
}

async function expectContract(c: Case): Promise<void> {
  let result: CallToolResult | undefined;
  let protocolError: McpError | undefined;
  try {
    result = await harness.call(c.tool, c.args);
  } catch (err) {
    if (!(err instanceof McpError)) throw err;
    protocolError = err;
  }
  const inputs = echoable(c.args);
  if (c.expected.kind === 'protocol') {
    expect(protocolError, 'expected a JSON-RPC error').toBeInstanceOf(McpError);
    expect(protocolError!.code).toBe(-32602); // Invalid params
    expectSafe(protocolError!.message, inputs);
    return;
  }
  expect(protocolError?.message, 'expected a tool result, got a JSON-RPC error').toBeUndefined();
  const text = textOf(result!);
  if (c.expected.kind === 'ok') {
    expect(result!.isError, text).toBeFalsy();
    expectSafe(text, []);
    expectCorrect(c.tool, c.args as Args, result!.structuredContent as unknown as Answer);
    return;
  }
  if (c.expected.kind === 'nothing') {
    expect(result!.isError, text).toBeFalsy();
    expectSafe(text, inputs);
    const answer = result!.structuredContent as unknown as Answer;
    expect(answer.rows, text.slice(0, 300)).toEqual([]);
    return;
  }
  expect(result!.isError, `expected a rejection, got ${text.slice(0, 200)}`).toBe(true);
  expect(result!.structuredContent).toBeUndefined();
  expect(text).toMatch(/^Invalid arguments: /);
  expect(text).toMatch(/\(code: invalid_arguments, request_id: [0-9a-f-]{36}\)$/);
  expect(text.slice('Invalid arguments: '.length)).toMatch(naming(c.expected.names));
  expect(text.length, 'the error text must not grow with the input').toBeLessThan(2000);
  expectSafe(text, inputs);
}

const SNAPSHOT_SQL = `
  select 'sales.orders' as name, count(*)::int as rows,
         md5(coalesce(string_agg(t::text, chr(10) order by t.id), '')) as checksum from sales.orders t
  union all
  select 'sales.order_items', count(*)::int,
         md5(coalesce(string_agg(t::text, chr(10) order by t.order_id, t.product_id), '')) from sales.order_items t
  union all
  select 'sales.customers', count(*)::int,
         md5(coalesce(string_agg(t::text, chr(10) order by t.id), '')) from sales.customers t
  union all
  select 'sales.products', count(*)::int,
         md5(coalesce(string_agg(t::text, chr(10) order by t.id), '')) from sales.products t
  union all
  select 'relations', count(*)::int,
         md5(string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' order by n.nspname, c.relname))
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname in ('sales', 'reporting', 'public')`;

interface TableSnapshot {
  name: string;
  rows: number;
  checksum: string;
}
let before: TableSnapshot[];
let prototypeKeys: string[];

beforeAll(async () => {
  admin = await connectAdmin();
  data = await loadSalesData(admin);
  before = (await admin.query<TableSnapshot>(SNAPSHOT_SQL)).rows;
  prototypeKeys = Object.getOwnPropertyNames(Object.prototype);
  harness = await startHarness();
});
afterAll(async () => {
  await harness.close();
  await admin.end();
});

describe(`${cases.length} hostile argument sets through the in-memory client`, () => {
  it('has at least 60 cases, every tool in each kind, and builds __proto__ as an own key', () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
    for (const tool of TOOL_NAMES) {
      for (const kind of ['ok', 'rejected', 'protocol']) {
        expect(cases.some((c) => c.tool === tool && c.expected.kind === kind)).toBe(true);
      }
    }
    const proto = cases.find((c) => c.label === '__proto__')!.args as object;
    expect(Object.hasOwn(proto, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });

  it.each(cases.map((c) => [`${c.tool}: ${c.label}`, c] as const))('%s', (_name, c) => expectContract(c));

  it('never lets a __proto__ key change the query: the answer is the one without it', async () => {
    for (const tool of TOOL_NAMES) {
      const base = TOOLS[tool].base;
      const hostile = withMembers('"__proto__":{"status":"paid","limit":1,"group_by":"day","metric":"units"}')(base);
      const result = await harness.call(tool, hostile);
      if (result.isError) expect(textOf(result)).toContain('"__proto__"');
      else expect(figures(result.structuredContent)).toEqual(figures(structured(await harness.call(tool, base))));
    }
  });

  it.each([
    ['an injection', "'; DROP TABLE sales.orders; --"],
    ['a trailing NUL', 'query_order_count\u0000'],
    ['upper case', 'QUERY_ORDER_COUNT'],
    ['a trailing space', 'query_order_count '],
    ['__proto__', '__proto__'],
    ['constructor', 'constructor'],
    ['toString', 'toString'],
    ['1 MB long', 'x'.repeat(MB)],
  ])('refuses a tool name with %s as a JSON-RPC error', async (_label, name) => {
    const error = await harness.client.callTool({ name, arguments: RANGE }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
    expect((error as McpError).message).toContain('Unknown tool');
    expect((error as McpError).message.length).toBeLessThan(300);
    expectSafe((error as McpError).message, [name]);
  });

  it('still answers a valid call correctly afterwards, and no prototype was polluted', async () => {
    const answer = structured<Answer>(await harness.call('query_order_count', RANGE));
    expect(answer.order_count).toBe(ordersBetween(data, RANGE.start_date, RANGE.end_date).length);
    const recent = structured<Answer>(await harness.call('query_recent_orders', { ...RANGE, limit: 5 }));
    expect(recent.row_count).toBe(5);
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(prototypeKeys);
    expect(({} as Args).polluted).toBeUndefined();
  });
});

/** One raw HTTP request, so that the body can be anything at all. */
function post(target: URL, body: string | Buffer): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request(
      target,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

interface RpcMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown };
}

const isRpcError = (message: RpcMessage): boolean =>
  message.jsonrpc === '2.0' &&
  typeof message.error?.code === 'number' &&
  message.error.code >= -32768 &&
  message.error.code <= -32000;

/** A 4xx, or an answer made only of JSON-RPC errors; never a 5xx and never a silent success. */
function expectRefused(res: { status: number; body: string }): void {
  expect(res.status, res.body).toBeLessThan(500);
  if (res.status >= 400) return;
  const parsed = JSON.parse(res.body) as RpcMessage | RpcMessage[];
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  expect(messages.length, `status ${res.status} with no JSON-RPC error`).toBeGreaterThan(0);
  for (const message of messages) expect(isRpcError(message), res.body).toBe(true);
}

const NOT_JSON_RPC = [
  '{"hello":1}',
  '"str"',
  '{"jsonrpc":"2.0","method":42,"id":1}',
  'null',
  '42',
  '[]',
  '[1,2,3]',
  '{"jsonrpc":"1.0","method":"tools/list","id":1}',
  '{"jsonrpc":"2.0","method":"tools/list","id":{"nested":1}}',
  '{"jsonrpc":"2.0","method":"no/such/method","id":1}',
  '{"jsonrpc":"2.0","method":"tools/call","id":1,"params":"x"}',
  '{"jsonrpc":"2.0","method":"tools/call","id":1,"params":{"name":"query_order_count","arguments":[]}}',
];

describe('malformed JSON-RPC over HTTP, against the built CLI', () => {
  let server: RunningCli;
  let url: URL;
  const listTools = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

  beforeAll(async () => {
    server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_TOKEN_KEY: 'x'.repeat(20),
    });
    url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  });
  afterAll(async () => {
    expect(await server.stop()).toBe(0);
  });

  it('answers a body that is not JSON with 400 and a JSON-RPC parse error', async () => {
    for (const body of ['not json', '{"jsonrpc": "2.0", "id": 1, ', '{"a":1}}', "{'single':'quotes'}", '']) {
      const res = await post(url, body);
      expect(res.status, body).toBe(400);
      expect(JSON.parse(res.body), body).toEqual({
        jsonrpc: '2.0',
        error: { code: -32700, message: expect.any(String) },
      });
    }
  });

  it.each(NOT_JSON_RPC.map((body) => [body.length > 120 ? `${body.slice(0, 120)}…` : body, body]))(
    'refuses JSON that is not a valid JSON-RPC call: %s',
    async (_label, body) => {
      const res = await post(url, body);
      expectRefused(res);
      expectSafe(res.body, []);
    },
  );

  it('answers invalid UTF-8 with 400, even inside a JSON string', async () => {
    for (const body of [
      Buffer.from([0xff, 0xfe]),
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(listTools)]),
      Buffer.concat([Buffer.from(listTools.slice(0, -1)), Buffer.from([0xc3])]),
      Buffer.concat([
        Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"note":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}}}'),
      ]),
    ]) {
      const res = await post(url, body);
      expect(res.status, body.toString('hex')).toBe(400);
    }
  });

  it('refuses an argument nested 10,000 deep sent over the wire as an ordinary invalid argument', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const res = await post(
      url,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_sales","arguments":{"start_date":"2025-01-01","end_date":"2025-01-02","group_by":${deep}}}}`,
    );
    expect(res.status).toBe(200);
    const answer = JSON.parse(res.body) as { result: CallToolResult };
    expect(answer.result.isError).toBe(true);
    expect(textOf(answer.result)).toMatch(/^Invalid arguments: group_by: /);
  });

  it('still lists the tools afterwards', async () => {
    const res = await post(url, listTools);
    expect(res.status).toBe(200);
    const answer = JSON.parse(res.body) as { result: { tools: { name: string }[] } };
    expect(answer.result.tools.map((t) => t.name).sort()).toEqual(
      [...TOOL_NAMES, 'weekly_sales_report', 'sales_trend_report'].sort(),
    );
  });
});

describe('malformed lines over stdio, against the built CLI', () => {
  it('writes only JSON-RPC to stdout, answers the real calls, and exits 0 when stdin closes', async () => {
    const child = spawn(process.execPath, [CLI], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: inject('readerUrl') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const lines = (): string[] => stdout.split('\n').filter((line) => line !== '');
    const parsedLines = (): RpcMessage[] =>
      lines().flatMap((line) => {
        try {
          return [JSON.parse(line) as RpcMessage];
        } catch {
          return [];
        }
      });
    // Resolves once both real calls are answered; fails if the server exits first.
    const answered = new Promise<void>((done, fail) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        const ids = parsedLines().map((m) => m.id);
        if (ids.includes(2) && ids.includes(3)) done();
      });
      void exited.then((code) => fail(new Error(`exited with ${code} before answering; stderr:\n${stderr}`)));
    });

    const send = (line: string | Buffer): void => void child.stdin.write(line);
    const rpc = (message: object): void => send(`${JSON.stringify(message)}\n`);
    send('this is not json\n');
    send('{"hello":1}\n');
    send(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('\n')]));
    rpc({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-lines', version: '1.0.0' } },
    });
    rpc({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send('{"jsonrpc":"2.0","id":\n');
    rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'query_order_count', arguments: RANGE } });
    rpc({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: {
        name: 'query_order_count',
        arguments: { start_date: "'; DROP TABLE sales.orders; --", end_date: '2025-05-31' },
      },
    });
    await answered;
    child.stdin.end();
    expect(await exited, stderr).toBe(0);

    const messages = lines().map((line) => JSON.parse(line) as RpcMessage); // every line must parse
    for (const message of messages) {
      expect(message.jsonrpc).toBe('2.0');
      // An error whose request cannot be told carries no id: MCP forbids a null one.
      const isResponse =
        ('id' in message && 'result' in message) ||
        ('error' in message && (typeof message.id === 'number' || !('id' in message)));
      const isNotification = typeof message.method === 'string' && !('id' in message);
      expect(isResponse || isNotification, JSON.stringify(message)).toBe(true);
    }
    // Whatever answered the garbage lines (nothing at all is fine) must be a parse or invalid-request error.
    for (const message of messages.filter((m) => ![1, 2, 3].includes(m.id as number) && !m.method)) {
      expect([-32700, -32600]).toContain(message.error?.code);
    }
    expect(messages.find((m) => m.id === 1)).toMatchObject({ result: { serverInfo: { name: 'querygate' } } });
    const count = messages.find((m) => m.id === 2)?.result as CallToolResult;
    expect(count.isError).toBeFalsy();
    expect((count.structuredContent as unknown as Answer).order_count).toBe(
      ordersBetween(data, RANGE.start_date, RANGE.end_date).length,
    );
    const refused = messages.find((m) => m.id === 3)?.result as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^Invalid arguments: start_date: /);
  });
});

describe('afterwards', () => {
  it('leaves every sales table, its row count and checksum, and the set of relations unchanged', async () => {
    for (const table of before.filter((t) => t.name.startsWith('sales.'))) expect(table.rows).toBeGreaterThan(0);
    expect((await admin.query<TableSnapshot>(SNAPSHOT_SQL)).rows).toEqual(before);
  });
});
