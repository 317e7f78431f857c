/**
 * The tasks extension (io.modelcontextprotocol/tasks) of 2026-07-28, against the built CLI over HTTP
 * and stdio, on a scratch database whose rollup a test may lock: server/discover offers it; a client
 * that declares it and calls sales_trend_report gets a task handle, follows it with tasks/get (the SDK
 * v2 client) to the synchronous call's answer, and cancels one whose query is blocked, which stops the
 * query on the database; a client that does not declare it gets the synchronous answer, and -32021 on
 * the tasks methods. A task is a job: get_report_job sees it. A synchronous call with a progress token
 * streams its progress, in order, ahead of its answer.
 *
 * The SDK's v2 client (2.4.0) refuses a `resultType: "task"` answer to tools/call as an unsupported
 * result type, so the task-creating call is sent raw, with the headers a client sends.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttp } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin, figures, structured } from '../support/harness.js';
import { post, type Answer } from '../support/raw-http.js';
import { createScratchDatabase, eventually, type ScratchDatabase } from '../support/scratch.js';

const MODERN = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const TREND = { weeks: 12, through_week: '2025-W24' } as const;
const TTL_SECONDS = 600;

let scratch: ScratchDatabase;
let watcher: pg.Client;
let server: RunningCli;
let url: URL;
let tasks: ModernClient;
let plain: ModernClient;

const env = (): Record<string, string> => ({
  DATABASE_URL: scratch.readerUrl,
  QUERYGATE_JOBS_URL: scratch.jobsUrl,
  QUERYGATE_TOKEN_KEY: 'tasks-test-key',
  QUERYGATE_STATEMENT_TIMEOUT_MS: '60000',
  QUERYGATE_JOB_TTL_SECONDS: String(TTL_SECONDS),
});

const modernClient = (extensions: Record<string, Record<string, never>>): ModernClient =>
  new ModernClient(
    { name: 'tasks-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: MODERN } }, capabilities: { extensions } },
  );

beforeAll(async () => {
  scratch = await createScratchDatabase('tasks', { orders: 2000, until: '2025-06-30' });
  watcher = await connectAdmin();
  server = startCli(['serve', '--http', '--port', '0'], env());
  url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
  tasks = modernClient({ [TASKS]: {} });
  await tasks.connect(new ModernHttp(url));
  plain = modernClient({});
  await plain.connect(new ModernHttp(url));
});
afterAll(async () => {
  await scratch?.admin.query('rollback').catch(() => undefined);
  await tasks?.close();
  await plain?.close();
  await server?.stop();
  await watcher?.end();
  await scratch?.drop();
});

/** A 2026-07-28 request, raw, with its mirrored headers; `extensions` are declared in its capabilities. */
function modern(
  method: string,
  params: Record<string, unknown>,
  options: { extensions?: Record<string, object>; headers?: Record<string, string>; meta?: object } = {},
): Promise<Answer> {
  const name = params.name ?? params.taskId;
  const body = {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': { extensions: options.extensions ?? {} },
        ...options.meta,
      },
    },
  };
  return post(url, body, {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    ...options.headers,
  });
}

const createTask = async (args: Record<string, unknown> = TREND): Promise<Record<string, unknown>> => {
  const answer = await modern(
    'tools/call',
    { name: 'sales_trend_report', arguments: args },
    { extensions: { [TASKS]: {} } },
  );
  expect(answer.status, answer.body).toBe(200);
  return answer.json.result!;
};

const DetailedTask = z.looseObject({
  taskId: z.string(),
  status: z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']),
  statusMessage: z.string().optional(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: z.number().int().nullable(),
  pollIntervalMs: z.number().int().optional(),
  result: z.looseObject({ content: z.array(z.unknown()) }).optional(),
  error: z.looseObject({ code: z.number(), message: z.string() }).optional(),
});
type DetailedTask = z.infer<typeof DetailedTask>;
const Ack = z.looseObject({});
/** An acknowledgement's own fields: none (every result names the server in _meta). */
const acknowledged = async (answer: Promise<Record<string, unknown>>): Promise<Record<string, unknown>> => {
  const { _meta: _serverInfo, ...own } = await answer;
  return own;
};

const getTask = (taskId: string): Promise<DetailedTask> =>
  tasks.request({ method: 'tasks/get', params: { taskId } }, DetailedTask);

const settled = (taskId: string): Promise<DetailedTask> =>
  eventually(`task ${taskId} to end`, async () => {
    const task = await getTask(taskId);
    return ['completed', 'failed', 'cancelled'].includes(task.status) ? task : undefined;
  });

describe('the tasks extension over HTTP', () => {
  it('is offered by server/discover, and not to a 2025-11-25 handshake', async () => {
    const discovered = await modern('server/discover', {});
    expect((discovered.json.result!.capabilities as Record<string, unknown>).extensions).toEqual({ [TASKS]: {} });
    const legacy = new Client({ name: 'tasks-test', version: '1.0.0' });
    await legacy.connect(new StreamableHTTPClientTransport(url));
    try {
      expect(legacy.getServerCapabilities()).not.toHaveProperty('extensions');
    } finally {
      await legacy.close();
    }
  });

  it("answers a declaring client's call with a task handle, followed with tasks/get to the synchronous answer", async () => {
    const handle = await createTask();
    expect(handle).toMatchObject({ resultType: 'task', status: 'working', ttlMs: TTL_SECONDS * 1000 });
    expect(handle.taskId).toEqual(expect.any(String));
    expect(Number.isInteger(handle.pollIntervalMs)).toBe(true);
    for (const field of ['createdAt', 'lastUpdatedAt']) {
      expect(String(handle[field])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    }
    for (const absent of ['task', 'result', 'error', 'content', 'ttl', 'pollInterval', 'requestState']) {
      expect(handle, absent).not.toHaveProperty(absent);
    }
    const taskId = handle.taskId as string;
    // Durably created: a tasks/get right away knows it.
    expect((await getTask(taskId)).taskId).toBe(taskId);
    const done = await settled(taskId);
    expect(done.status).toBe('completed');
    expect(done).not.toHaveProperty('error');
    const sync = (await plain.callTool({ name: 'sales_trend_report', arguments: TREND })) as CallToolResult;
    expect(sync.isError).toBeFalsy();
    expect(figures((done.result as unknown as { structuredContent: unknown }).structuredContent)).toEqual(
      figures(sync.structuredContent),
    );
    expect(done.result!._meta ?? {}).not.toHaveProperty('io.modelcontextprotocol/related-task');

    // A task is a job: the two-tool pattern sees it too.
    const job = structured<{ state: string; attempt: number }>(
      (await plain.callTool({ name: 'get_report_job', arguments: { job_id: taskId } })) as CallToolResult,
    );
    expect(job).toMatchObject({ state: 'completed', attempt: 1 });
  });

  it('tells a bad argument at once, as the tool result, without a task', async () => {
    const answer = await createTask({ weeks: 60 });
    expect(answer).toMatchObject({ resultType: 'complete', isError: true });
    expect(answer).not.toHaveProperty('taskId');
    expect(JSON.stringify(answer.content)).toMatch(/weeks: must be at most 52/);
  });

  it('answers -32021 naming the extension to a client that does not declare it, and -32602 to an unknown task', async () => {
    for (const [method, params] of [
      ['tasks/get', { taskId: 'some-task' }],
      ['tasks/cancel', { taskId: 'some-task' }],
      ['tasks/update', { taskId: 'some-task', inputResponses: {} }],
    ] as const) {
      const refused = await modern(method, params);
      expect(refused.status, method).toBe(400);
      expect(refused.json.error).toMatchObject({
        code: -32021,
        data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
      });
      const unknown = await modern(method, params, { extensions: { [TASKS]: {} } });
      expect(unknown.json.error, method).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/Task not found/),
      });
    }
    await expect(plain.request({ method: 'tasks/get', params: { taskId: 'x' } }, DetailedTask)).rejects.toMatchObject({
      code: -32021,
    });
    const listen = await modern('subscriptions/listen', { notifications: { taskIds: ['x'] } });
    expect(listen.json.error).toMatchObject({ code: -32021 });
    // The removed 2025-11-25 methods are no methods here.
    for (const method of ['tasks/result', 'tasks/list']) {
      expect((await modern(method, { taskId: 'x' }, { extensions: { [TASKS]: {} } })).json.error?.code).toBe(-32601);
    }
  });

  it('answers a declaring client synchronously for a tool that does not run as a job, and without it for one that does', async () => {
    const count = await modern(
      'tools/call',
      { name: 'query_order_count', arguments: { start_date: '2025-05-01', end_date: '2025-05-31' } },
      { extensions: { [TASKS]: {} } },
    );
    expect(count.json.result).toMatchObject({ resultType: 'complete', structuredContent: expect.any(Object) });
    const trend = await modern('tools/call', { name: 'sales_trend_report', arguments: TREND });
    expect(trend.json.result).toMatchObject({ resultType: 'complete', structuredContent: { weeks: 12 } });
  });

  it('checks Mcp-Name against the task id', async () => {
    const answer = await modern(
      'tasks/get',
      { taskId: 'one' },
      { extensions: { [TASKS]: {} }, headers: { 'mcp-name': 'two' } },
    );
    expect(answer.status).toBe(400);
    expect(answer.json.error?.code).toBe(-32020);
  });

  it('acknowledges tasks/update (a report never needs input) and refuses inputResponses that are no object', async () => {
    const { taskId } = (await createTask()) as { taskId: string };
    expect(
      await acknowledged(tasks.request({ method: 'tasks/update', params: { taskId, inputResponses: {} } }, Ack)),
    ).toEqual({});
    const raw = await modern('tasks/update', { taskId, inputResponses: {} }, { extensions: { [TASKS]: {} } });
    expect(Object.keys(raw.json.result!).sort()).toEqual(['_meta', 'resultType']);
    expect(raw.json.result!.resultType).toBe('complete');
    const bad = await modern('tasks/update', { taskId, inputResponses: 'yes' }, { extensions: { [TASKS]: {} } });
    expect(bad.json.error?.code).toBe(-32602);
    expect((await settled(taskId)).status).toBe('completed');
  });

  it('cancels a task whose query waits on a lock: tasks/cancel stops the query on the database', async () => {
    const blocked = async (): Promise<number[]> =>
      (
        await watcher.query<{ pid: number }>(
          `select pid from pg_stat_activity where datname = $1 and usename = 'querygate_reader'
              and state = 'active' and wait_event_type = 'Lock'`,
          [scratch.name],
        )
      ).rows.map((r) => r.pid);
    await scratch.admin.query('begin');
    await scratch.admin.query('lock table reporting.order_hours in access exclusive mode');
    try {
      const { taskId } = (await createTask()) as { taskId: string };
      const [pid] = await eventually('its query to wait on the lock', async () => {
        const pids = await blocked();
        return pids.length === 1 ? pids : undefined;
      });
      const working = await getTask(taskId);
      // Its first query waits: no progress yet to tell.
      expect(working).toMatchObject({ status: 'working', statusMessage: 'Running its first query.' });
      expect(working).not.toHaveProperty('result');
      expect(await acknowledged(tasks.request({ method: 'tasks/cancel', params: { taskId } }, Ack))).toEqual({});
      expect((await settled(taskId)).status).toBe('cancelled');
      await eventually('its query to be gone from the database', async () => {
        const { rows } = await watcher.query(
          `select count(*)::int as n from pg_stat_activity where pid = $1 and state = 'active'`,
          [pid],
        );
        return rows[0].n === 0;
      });
      // Cancelling an ended task is acknowledged the same way, and changes nothing.
      const again = await modern('tasks/cancel', { taskId }, { extensions: { [TASKS]: {} } });
      expect(Object.keys(again.json.result!).sort()).toEqual(['_meta', 'resultType']);
      expect((await getTask(taskId)).status).toBe('cancelled');
    } finally {
      await scratch.admin.query('rollback');
    }
  });
});

describe('progress of a synchronous report over HTTP', () => {
  it('streams notifications/progress after each query, in order, ahead of the answer', async () => {
    const answer = await modern(
      'tools/call',
      { name: 'sales_trend_report', arguments: { weeks: 40, through_week: '2025-W24' } },
      { meta: { progressToken: 'trend-1' } },
    );
    const messages = answer.body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map(
        (line) => JSON.parse(line.slice(6)) as { method?: string; params?: Record<string, unknown>; result?: unknown },
      );
    const progress = messages.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
    // 41 weeks (one before the first) read 12 at a time: four queries.
    expect(progress).toEqual(
      [1, 2, 3, 4].map((n) => ({ progressToken: 'trend-1', progress: n, total: 4, message: `${n} of 4 queries done` })),
    );
    expect(messages.at(-1)!.result).toMatchObject({ structuredContent: { weeks: 40 } });
    expect(messages.slice(0, -1).every((m) => m.method === 'notifications/progress')).toBe(true);
  });
});

describe('the tasks extension over stdio', () => {
  it('creates a task, which a notifications/cancelled naming the answered call leaves alone, followed to its end', async () => {
    const stdio = startCli(['serve'], env());
    const lines: Record<string, unknown>[] = [];
    let buffered = '';
    stdio.child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      for (let at = buffered.indexOf('\n'); at !== -1; at = buffered.indexOf('\n')) {
        lines.push(JSON.parse(buffered.slice(0, at)) as Record<string, unknown>);
        buffered = buffered.slice(at + 1);
      }
    });
    const meta = {
      'io.modelcontextprotocol/protocolVersion': MODERN,
      'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
    };
    const send = (message: object): void => void stdio.child.stdin!.write(`${JSON.stringify(message)}\n`);
    const answerTo = (id: number): Promise<Record<string, unknown>> =>
      eventually(`the answer to ${id}`, async () => lines.find((l) => l.id === id));
    try {
      send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'sales_trend_report', arguments: TREND, _meta: meta },
      });
      const handle = (await answerTo(1)).result as { resultType: string; taskId: string };
      expect(handle.resultType).toBe('task');
      // The call was answered: a cancellation naming it is no task cancellation (the extension says so).
      send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'too late' } });
      let id = 2;
      const done = await eventually('the task to end', async () => {
        const asked = id++;
        send({ jsonrpc: '2.0', id: asked, method: 'tasks/get', params: { taskId: handle.taskId, _meta: meta } });
        const task = (await answerTo(asked)).result as DetailedTask;
        return task.status === 'working' ? undefined : task;
      });
      expect(done.status).toBe('completed');
      expect((done.result as unknown as { structuredContent: { weeks: number } }).structuredContent.weeks).toBe(12);
    } finally {
      stdio.child.stdin!.end();
      await stdio.exited;
    }
  });
});
