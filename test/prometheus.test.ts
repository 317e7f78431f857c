/**
 * /metrics over HTTP, from the built CLI on a database of its own (so that its job store holds only
 * this test's job): after a known sequence of calls and refused requests, a scrape parses as
 * Prometheus text (by the strict parser in support/, not by prom-client) and carries exactly those
 * counts; the metrics token is enforced; the reader pool's gauges agree with the backends the
 * database shows; and a server with a tiny rate limit counts its refusals as its client saw them.
 */
import { request } from 'node:http';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startCli, type RunningCli } from './support/cli.js';
import { structured, textOf } from './support/harness.js';
import { parseExposition, samplesOf, valueOf, type Family } from './support/prometheus-text.js';
import { post, type Answer } from './support/raw-http.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from './support/scratch.js';

const LISTEN = /listening on (http:\/\/[^"\s]+\/mcp)/;
const TOKEN = 'metrics-test-http-token-0123';
const METRICS_TOKEN = 'metrics-test-scrape-token-4567';
const RANGE = { start_date: '2025-06-01', end_date: '2025-06-07' };
const TREND = { weeks: 12, through_week: '2025-W24' } as const;
const AUTHORIZED = { authorization: `Bearer ${TOKEN}` };

let scratch: ScratchDatabase;
let server: RunningCli;
let url: URL;
let tiny: RunningCli;
let tinyUrl: URL;
/** The scrape taken right after the known sequence below. */
let scraped: Map<string, Family>;
/** How many times the test polled get_report_job until its job ended. */
let polls = 0;

let nextId = 1;
const callTool = (target: URL, name: string, args: unknown, headers: Record<string, string> = {}): Promise<Answer> =>
  post(target, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } }, headers);

const resultOf = (answer: Answer): CallToolResult => {
  if (answer.status !== 200 || !answer.json.result) throw new Error(`no result: ${answer.status} ${answer.body}`);
  return answer.json.result as CallToolResult;
};

function raw(
  target: URL,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((done, fail) => {
    const req = request(target, { method, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

async function scrape(target: URL, headers: Record<string, string> = {}): Promise<Map<string, Family>> {
  const res = await raw(new URL('/metrics', target), headers);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}: ${res.body}`);
  return parseExposition(res.body);
}
const scrapeMain = (): Promise<Map<string, Family>> => scrape(url, { authorization: `Bearer ${METRICS_TOKEN}` });

type Series = [labels: Record<string, string>, value: number][];
/** Series in one order, to compare whole sets of them. */
const sorted = (series: Series): Series => series.sort(([a], [b]) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
/** Every sample of a name as [labels, value]. */
const seriesOf = (families: Map<string, Family>, name: string): Series =>
  sorted(samplesOf(families, name).map((s) => [s.labels, s.value]));

beforeAll(async () => {
  scratch = await createScratchDatabase('metrics', { orders: 2000, until: '2025-06-30' });
  server = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: scratch.readerUrl,
    QUERYGATE_JOBS_URL: scratch.jobsUrl,
    QUERYGATE_TOKEN_KEY: 'metrics-test-key',
    QUERYGATE_HTTP_TOKEN: TOKEN,
    QUERYGATE_METRICS_TOKEN: METRICS_TOKEN,
    // The call held by a lock below must wait for the test, not time out.
    QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
  });
  // 1 call a minute, 5 HTTP requests a minute; no metrics token, no job store.
  tiny = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_TOKEN_KEY: 'metrics-test-key',
    QUERYGATE_RATE_LIMIT: '1',
  });
  url = new URL((await server.waitForLog(LISTEN))[1]!);
  tinyUrl = new URL((await tiny.waitForLog(LISTEN))[1]!);

  for (let i = 0; i < 3; i++)
    expect(resultOf(await callTool(url, 'query_order_count', RANGE, AUTHORIZED)).isError).toBeFalsy();
  const rejected = resultOf(
    await callTool(url, 'query_order_count', { ...RANGE, start_date: '2025-02-30' }, AUTHORIZED),
  );
  expect(textOf(rejected)).toMatch(/code: invalid_arguments/);
  expect((await callTool(url, 'query_no_such_tool', RANGE, AUTHORIZED)).json.error?.code).toBe(-32602);
  expect((await callTool(url, 'query_order_count', RANGE)).status).toBe(401);
  expect(
    (await callTool(url, 'query_order_count', RANGE, { ...AUTHORIZED, host: `evil.example:${url.port}` })).status,
  ).toBe(403);
  expect(
    (await callTool(url, 'query_order_count', RANGE, { ...AUTHORIZED, origin: 'https://evil.example' })).status,
  ).toBe(403);
  expect((await callTool(url, 'query_order_count', { ...RANGE, pad: 'x'.repeat(1_100_000) }, AUTHORIZED)).status).toBe(
    413,
  );

  const { job_id: jobId } = structured<{ job_id: string }>(
    resultOf(await callTool(url, 'submit_trend_report', TREND, AUTHORIZED)),
  );
  const job = await eventually('the job to end', async () => {
    polls++;
    const polled = structured<{ state: string }>(
      resultOf(await callTool(url, 'get_report_job', { job_id: jobId }, AUTHORIZED)),
    );
    return ['completed', 'failed', 'cancelled'].includes(polled.state) ? polled : undefined;
  });
  expect(job.state).toBe('completed');
  scraped = await scrapeMain();
}, 120_000);

afterAll(async () => {
  await scratch?.admin.query('rollback').catch(() => undefined);
  expect(await server?.stop()).toBe(0);
  expect(await tiny?.stop()).toBe(0);
  await scratch?.drop();
});

describe('a scrape after known calls', () => {
  it('gives every querygate series a HELP and a TYPE, and the process metrics under the same prefix', () => {
    const ours = [...scraped.values()].filter((f) => f.name.startsWith('querygate_'));
    for (const family of ours) {
      expect(family.help, family.name).toBeTruthy();
      expect(family.type, family.name).not.toBe('untyped');
    }
    expect(scraped.get('querygate_process_cpu_user_seconds_total')?.type).toBe('counter');
    expect(scraped.get('querygate_nodejs_heap_size_used_bytes')?.type).toBe('gauge');
    expect([...scraped.keys()].filter((name) => !name.startsWith('querygate_'))).toEqual([]);
  });

  it('counts each tool call by tool and outcome, the job run and an unknown tool without its name', () => {
    expect(scraped.get('querygate_tool_calls_total')?.type).toBe('counter');
    expect(seriesOf(scraped, 'querygate_tool_calls_total')).toEqual(
      sorted([
        [{ tool: 'query_order_count', outcome: 'ok' }, 3],
        [{ tool: 'query_order_count', outcome: 'rejected' }, 1],
        [{ outcome: 'unknown_tool' }, 1],
        [{ tool: 'submit_trend_report', outcome: 'ok' }, 1],
        [{ tool: 'get_report_job', outcome: 'ok' }, polls],
        // The job itself, run through the registry as a call of the report.
        [{ tool: 'sales_trend_report', outcome: 'ok' }, 1],
      ]),
    );
  });

  it('times the calls that ran, by tool, in a consistent histogram', () => {
    expect(scraped.get('querygate_tool_call_duration_seconds')?.type).toBe('histogram');
    expect(seriesOf(scraped, 'querygate_tool_call_duration_seconds_count')).toEqual(
      sorted([
        [{ tool: 'query_order_count' }, 3],
        [{ tool: 'submit_trend_report' }, 1],
        [{ tool: 'get_report_job' }, polls],
        [{ tool: 'sales_trend_report' }, 1],
      ]),
    );
    const buckets = samplesOf(scraped, 'querygate_tool_call_duration_seconds_bucket').filter(
      (s) => s.labels.tool === 'query_order_count',
    );
    expect(buckets.map((s) => s.labels.le)).toContain('+Inf');
    expect(buckets.length).toBeGreaterThan(5);
  });

  it('counts the refusals by reason, the HTTP edge and the tool calls apart', () => {
    expect(seriesOf(scraped, 'querygate_refusals_total')).toEqual(
      sorted([
        [{ reason: 'call_rate_limited' }, 0],
        [{ reason: 'call_busy' }, 0],
        [{ reason: 'http_rate_limited' }, 0],
        [{ reason: 'http_body_too_large' }, 1],
        [{ reason: 'http_host_not_allowed' }, 1],
        [{ reason: 'http_origin_not_allowed' }, 1],
        [{ reason: 'http_unauthorized' }, 1],
        [{ reason: 'http_forbidden' }, 0],
        [{ reason: 'http_auth_throttled' }, 0],
        [{ reason: 'http_auth_unavailable' }, 0],
      ]),
    );
  });

  it('counts the failed authentication by reason', () => {
    expect(scraped.get('querygate_auth_failures_total')?.type).toBe('counter');
    expect(seriesOf(scraped, 'querygate_auth_failures_total')).toEqual([[{ reason: 'missing_token' }, 1]]);
  });

  it('tells the jobs in the job store by state', () => {
    expect(scraped.get('querygate_jobs')?.type).toBe('gauge');
    expect(seriesOf(scraped, 'querygate_jobs')).toEqual(
      sorted([
        [{ state: 'pending' }, 0],
        [{ state: 'running' }, 0],
        [{ state: 'completed' }, 1],
        [{ state: 'failed' }, 0],
        [{ state: 'cancelled' }, 0],
      ]),
    );
  });
});

describe('the metrics token', () => {
  it('is read from QUERYGATE_METRICS_TOKEN: 16 characters at least, and never blank', () => {
    expect(loadConfig({ QUERYGATE_METRICS_TOKEN: METRICS_TOKEN }).metricsToken).toBe(METRICS_TOKEN);
    expect(loadConfig({}).metricsToken).toBeUndefined();
    expect(() => loadConfig({ QUERYGATE_METRICS_TOKEN: 'too-short' })).toThrow(/QUERYGATE_METRICS_TOKEN: must be/);
    expect(() => loadConfig({ QUERYGATE_METRICS_TOKEN: '  ' })).toThrow(/QUERYGATE_METRICS_TOKEN: is set but blank/);
  });

  it('is required: 401 without it or with another, 200 with it, and the failures counted', async () => {
    const metrics = new URL('/metrics', url);
    const without = await raw(metrics);
    expect(without.status).toBe(401);
    expect(without.headers['www-authenticate']).toMatch(/^Bearer/);
    // The MCP token is not the metrics token.
    expect((await raw(metrics, AUTHORIZED)).status).toBe(401);
    const right = await raw(metrics, { authorization: `Bearer ${METRICS_TOKEN}` });
    expect(right.status).toBe(200);
    expect(right.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(
      valueOf(parseExposition(right.body), 'querygate_auth_failures_total', {
        reason: 'missing_or_invalid_metrics_token',
      }),
    ).toBe(2);
  });

  it('is not needed where none is set; /metrics takes GET only, through any Host', async () => {
    expect((await raw(new URL('/metrics', tinyUrl), { host: 'pod.internal:9999' })).status).toBe(200);
    const posted = await raw(new URL('/metrics', tinyUrl), {}, 'POST');
    expect(posted.status).toBe(405);
    expect(posted.headers.allow).toBe('GET');
  });
});

describe('the reader pool', () => {
  /** The reader's backends in the test's database that wait for a lock: calls holding a pool connection. */
  async function blocked(): Promise<number> {
    await scratch.admin.query('select pg_stat_clear_snapshot()');
    const { rows } = await scratch.admin.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and usename = 'querygate_reader' and wait_event_type = 'Lock'`,
    );
    return rows[0]!.n;
  }

  it('tells connections in use, idle and waiting, in use as many as the calls the database shows running', async () => {
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table sales.orders, reporting.order_hours in access exclusive mode');
    const held = callTool(url, 'query_order_count', RANGE, AUTHORIZED);
    try {
      const during = await eventually('the call to wait for the lock', async () => {
        if ((await blocked()) !== 1) return undefined;
        const families = await scrapeMain();
        return valueOf(families, 'querygate_reader_pool_connections', { state: 'in_use' }) === 1 && families;
      });
      const open = valueOf(during, 'querygate_reader_pool_open_connections')!;
      const idle = valueOf(during, 'querygate_reader_pool_connections', { state: 'idle' })!;
      expect(1 + idle).toBe(open);
      expect(valueOf(during, 'querygate_reader_pool_waiting_requests')).toBe(0);
      expect(await blocked()).toBe(1);
    } finally {
      await scratch.admin.query('rollback');
    }
    expect(resultOf(await held).isError).toBeFalsy();
    const after = await scrapeMain();
    const open = valueOf(after, 'querygate_reader_pool_open_connections')!;
    expect(valueOf(after, 'querygate_reader_pool_connections', { state: 'in_use' })).toBe(0);
    expect(valueOf(after, 'querygate_reader_pool_connections', { state: 'idle' })).toBe(open);
    expect(open).toBeGreaterThanOrEqual(1);
  });
});

describe('a job store that cannot be read', () => {
  it('leaves the job series out of the scrape, logged, and the others in it', async () => {
    // In the test's own database only: the job role loses the right to read its table, then gets it back.
    await scratch.admin.query('revoke select on querygate_jobs.jobs from querygate_jobs');
    try {
      const families = await eventually('a scrape without jobs', async () => {
        const scraped = await scrapeMain();
        return samplesOf(scraped, 'querygate_jobs').length === 0 && scraped;
      });
      expect(valueOf(families, 'querygate_tool_calls_total', { tool: 'query_order_count', outcome: 'ok' })).toBe(4);
      expect(valueOf(families, 'querygate_reader_pool_open_connections')).toBeDefined();
      expect(server.stderr()).toMatch(/"msg":"metrics: could not count the jobs by state"/);
    } finally {
      await scratch.admin.query('grant select on querygate_jobs.jobs to querygate_jobs');
    }
    await eventually('the jobs back in a scrape', async () =>
      valueOf(await scrapeMain(), 'querygate_jobs', { state: 'completed' }) === 1 ? true : undefined,
    );
  });
});

describe('a server with a tiny rate limit', () => {
  it('counts the calls it refused and the request it answered with 429, as its client saw them', async () => {
    let ok = 0;
    let refused = 0;
    let tooMany: Answer | undefined;
    for (let i = 0; i < 20 && !tooMany; i++) {
      const answer = await callTool(tinyUrl, 'query_order_count', RANGE);
      if (answer.status === 429) tooMany = answer;
      else if (!resultOf(answer).isError) ok++;
      else if (/code: rate_limited/.test(textOf(resultOf(answer)))) refused++;
      else throw new Error(`unexpected answer: ${answer.body}`);
    }
    expect(tooMany?.headers['retry-after']).toBeDefined();
    expect(refused).toBeGreaterThan(0);

    const families = await scrape(tinyUrl);
    expect(seriesOf(families, 'querygate_tool_calls_total')).toEqual(
      sorted([
        [{ tool: 'query_order_count', outcome: 'ok' }, ok],
        [{ tool: 'query_order_count', outcome: 'refused' }, refused],
      ]),
    );
    expect(seriesOf(families, 'querygate_tool_call_duration_seconds_count')).toEqual([
      [{ tool: 'query_order_count' }, ok],
    ]);
    expect(valueOf(families, 'querygate_refusals_total', { reason: 'call_rate_limited' })).toBe(refused);
    expect(valueOf(families, 'querygate_refusals_total', { reason: 'http_rate_limited' })).toBe(1);
    // No job store: no job series.
    expect(families.has('querygate_jobs')).toBe(false);
  });
});

describe('the exposition parser', () => {
  const good = [
    '# HELP a_total Some \\\\ help\\nwith two lines.',
    '# TYPE a_total counter',
    'a_total{x="q\\"uote\\\\ and\\nline",y="2",} 3 1700000000000',
    '# TYPE h histogram',
    'h_bucket{le="0.5"} 1',
    'h_bucket{le="+Inf"} 2',
    'h_sum 1.5e0',
    'h_count 2',
    'g Nan',
    '',
  ].join('\n');

  it('reads names, escaped labels, floats and help text', () => {
    const families = parseExposition(good);
    expect(families.get('a_total')).toMatchObject({ type: 'counter', help: 'Some \\ help\nwith two lines.' });
    expect(families.get('a_total')!.samples[0]!.labels).toEqual({ x: 'q"uote\\ and\nline', y: '2' });
    expect(valueOf(families, 'h_sum')).toBe(1.5);
    expect(families.get('g')).toMatchObject({ type: 'untyped', samples: [{ value: NaN }] });
  });

  it.each([
    ['no final line feed', good.slice(0, -1), /does not end with a line feed/],
    ['a bad metric name', good.replace('g Nan', '1g 1'), /no metric name/],
    ['a bad escape', good.replace('q\\"uote', 'q\\tuote'), /bad escape \\t in label x/],
    ['an unterminated label value', good.replace('y="2",}', 'y="2}'), /unterminated value of label y/],
    ['a bad value', good.replace('g Nan', 'g 1,5'), /not a float: "1,5"/],
    ['a second TYPE', good.replace('# TYPE h histogram', '# TYPE h histogram\n# TYPE h histogram'), /second TYPE/],
    ['a TYPE after the samples', `${good}# TYPE g gauge\n`, /TYPE for g after its samples/],
    ['lines of one metric apart', `${good}a_total{x="other"} 1\n`, /a_total's lines are not one group/],
    ['a duplicate series', `${good}g Nan\n`, /duplicate series/],
    ['no +Inf bucket', good.replace('h_bucket{le="+Inf"} 2', 'h_bucket{le="1"} 2'), /no \+Inf bucket/],
    ['+Inf bucket unlike _count', good.replace('h_count 2', 'h_count 3'), /\+Inf bucket 2 differs from _count 3/],
    ['buckets not cumulative', good.replace('h_bucket{le="0.5"} 1', 'h_bucket{le="0.5"} 3'), /not cumulative/],
    ['no _sum', good.replace('h_sum 1.5e0\n', ''), /no _sum/],
    ['a negative counter', good.replace('} 3 1700000000000', '} -3'), /counter a_total is negative/],
    ['a reserved label name', good.replace('y="2"', '__y="2"'), /reserved label name __y/],
  ])('refuses %s', (_, text, reason) => {
    expect(() => parseExposition(text)).toThrow(reason);
  });
});
