/**
 * What the question benchmarks share: a model's tool call, the raw-SQL server they are measured against
 * (`@modelcontextprotocol/server-postgres` 0.6.2 over stdio, or pg run the way it runs SQL), and what a
 * model reads back from a set of calls: their count, their bytes, and the personal values they expose.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import pg from 'pg';
import { connectCli } from './measure.js';

/** One tool call as a model would send it. */
export interface Call {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** What a model reads back from one call: the text content, and whether it was an error. */
export interface Reply {
  readonly text: string;
  readonly isError: boolean;
  /** The structured answer, when the server gives one (querygate does; server-postgres does not). */
  readonly structured?: unknown;
}
export type Caller = (call: Call) => Promise<Reply>;

/** A call through an SDK client; a thrown error (a JSON-RPC error, unknown tool) is read as its message. */
export const through =
  (client: Client): Caller =>
  async (call) => {
    try {
      const result = await client.callTool({ name: call.tool, arguments: call.args });
      const content = (result.content ?? []) as { type: string; text?: string }[];
      return {
        text: content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join(''),
        isError: result.isError === true,
        ...(result.structuredContent === undefined ? {} : { structured: result.structuredContent }),
      };
    } catch (err) {
      return { text: err instanceof Error ? err.message : String(err), isError: true };
    }
  };

/** The raw-SQL side: server-postgres over stdio if it installs, else pg run the way it runs SQL. */
export async function rawServer(
  adminUrl: string,
): Promise<{ label: string; call: Caller; toolsBytes: number; stop(): Promise<void> }> {
  const peerDir = await mkdtemp(join(tmpdir(), 'querygate-questions-peer-'));
  try {
    execFileSync(
      'npm',
      ['install', '--prefix', peerDir, '--no-audit', '--no-fund', '@modelcontextprotocol/server-postgres@0.6.2'],
      { stdio: 'ignore' },
    );
    const client = new Client({ name: 'bench-questions-raw', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [join(peerDir, 'node_modules/@modelcontextprotocol/server-postgres/dist/index.js'), adminUrl],
        stderr: 'ignore',
      }),
    );
    const toolsBytes = bytes(JSON.stringify((await client.listTools()).tools));
    return {
      label: '`@modelcontextprotocol/server-postgres` 0.6.2 over stdio',
      call: through(client),
      toolsBytes,
      stop: async () => {
        await client.close();
        await rm(peerDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(peerDir, { recursive: true, force: true });
    process.stderr.write(`server-postgres did not start (${String(err)}); running its SQL through pg instead\n`);
    const pool = new pg.Pool({ connectionString: adminUrl, max: 1 });
    // server-postgres 0.6.2 lists one tool: { name: 'query', description: 'Run a read-only SQL query', ... }.
    const listed = [
      {
        name: 'query',
        description: 'Run a read-only SQL query',
        inputSchema: { type: 'object', properties: { sql: { type: 'string' } } },
      },
    ];
    return {
      label:
        'plain pg in a READ ONLY transaction, rows as `JSON.stringify(rows, null, 2)` (server-postgres did not install)',
      toolsBytes: bytes(JSON.stringify(listed)),
      call: async (call) => {
        const client = await pool.connect();
        try {
          await client.query('begin transaction read only');
          const result = await client.query(String(call.args.sql));
          return { text: JSON.stringify(result.rows, null, 2), isError: false };
        } catch (error) {
          return { text: error instanceof Error ? error.message : String(error), isError: true };
        } finally {
          await client.query('rollback').catch(() => undefined);
          client.release();
        }
      },
      stop: () => pool.end(),
    };
  }
}

export const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** The customers' raw names, emails and phones, read through the admin connection. */
export interface PersonalValues {
  readonly raw: ReadonlySet<string>;
}

/** The customers' raw names, emails and phones, through the admin connection. */
export async function personalValues(admin: pg.Client): Promise<PersonalValues> {
  const people = await admin.query<{ name: string; email: string; phone: string }>(
    'select name, email, phone from sales.customers',
  );
  return { raw: new Set(people.rows.flatMap((c) => [c.name, c.email, c.phone])) };
}

/** The built CLI over stdio, as the reader, with its job store (so tools/list is what `querygate serve` lists). */
export function connectQuerygate(
  name: string,
  database: { readonly readerUrl: string; readonly jobsUrl: string; readonly tokenKey: string },
): Promise<Client> {
  return connectCli(name, {
    DATABASE_URL: database.readerUrl,
    QUERYGATE_JOBS_URL: database.jobsUrl,
    QUERYGATE_TOKEN_KEY: database.tokenKey,
    QUERYGATE_RATE_LIMIT: '100000000',
    QUERYGATE_LOG_LEVEL: 'warn',
  });
}

/**
 * Fields of querygate's answers that carry a masked or pseudonymous customer value: those of its row
 * lists, and the customer dimension of query_metrics (the same token as customer_ref).
 */
export const MASKED_KEYS = new Set([
  'customer_ref',
  'customer_initials',
  'customer_email',
  'customer_phone_last4',
  'customer',
]);

/**
 * Counts what a reply exposes: raw personal values (a leaf equal to a customer's real name, email or
 * phone, or any value under a key naming a customer id), and masked or pseudonymous customer values
 * (the fields of querygate's row lists above). A reply that is not JSON is searched as text.
 */
export function exposure(text: string, personal: PersonalValues): { raw: number; masked: number } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    let raw = 0;
    for (const value of personal.raw) if (text.includes(value)) raw++;
    return { raw, masked: 0 };
  }
  let raw = 0;
  let masked = 0;
  const walk = (node: unknown, key: string | undefined): void => {
    if (Array.isArray(node)) for (const item of node) walk(item, key);
    else if (node !== null && typeof node === 'object') for (const [k, v] of Object.entries(node)) walk(v, k);
    else if (node !== null && node !== undefined && key !== undefined) {
      if (/customer_?id$/i.test(key) || personal.raw.has(String(node))) raw++;
      else if (MASKED_KEYS.has(key)) masked++;
    }
  };
  walk(json, undefined);
  return { raw, masked };
}

export interface Outcome {
  readonly tools: string;
  readonly calls: number;
  readonly bytes: number;
  readonly raw: number;
  readonly masked: number;
  /** Why the question stays unanswered: the first error, or why no call was made. */
  readonly unanswered?: string;
}

/** Asks `calls` in turn; each reply is pushed onto `replies` when given (to check the answer against the truth). */
export async function ask(
  calls: readonly Call[],
  caller: Caller,
  personal: PersonalValues,
  replies?: Reply[],
): Promise<Outcome> {
  let read = 0;
  let raw = 0;
  let masked = 0;
  let unanswered: string | undefined;
  for (const call of calls) {
    const reply = await caller(call);
    replies?.push(reply);
    read += bytes(reply.text);
    const seen = exposure(reply.text, personal);
    raw += seen.raw;
    masked += seen.masked;
    if (reply.isError && unanswered === undefined)
      unanswered = `${call.tool}: ${reply.text.replace(/\s+/g, ' ').slice(0, 160)}`;
  }
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.tool, (counts.get(call.tool) ?? 0) + 1);
  const tools = [...counts].map(([tool, n]) => (n > 1 ? `${tool} ×${n}` : tool)).join(', ');
  return { tools, calls: calls.length, bytes: read, raw, masked, ...(unanswered ? { unanswered } : {}) };
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
