/**
 * Who may read a job: the one rule of the job tools (get_report_job, cancel_report_job) and of the
 * tasks extension (tasks/get, tasks/cancel), through real MCP clients over the shared test database.
 * A job is read, polled or cancelled only by its caller, under the data scope it was submitted with,
 * while the caller may still run its report: the same subject with a narrower scope or toolset finds
 * it as unknown as a job id that never was. A finished job is left exactly as it was by a cancel.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Caller } from '../../src/registry/index.js';
import { connectAdmin, startHarness, structured, textOf, type Harness } from '../support/harness.js';
import { eventually } from '../support/scratch.js';

const TASKS = 'io.modelcontextprotocol/tasks';
const TREND = { weeks: 12, through_week: '2025-W24' } as const;
const NEVER = 'AAAAAAAAAAAAAAAAAAAAAA';

interface Job {
  job_id: string;
  state: 'pending' | 'running' | 'completed' | 'failed' | 'cancelled';
}

const Task = z.looseObject({ taskId: z.string(), status: z.string() });
const Ack = z.looseObject({});

/** A 2026-07-28 client of `caller` that declares the tasks extension, serving jobs. */
const tasksClient = (caller: Caller): Promise<Harness> =>
  startHarness({ caller, jobs: {}, era: 'modern', extensions: { [TASKS]: {} } });

/** A result's text without its request id, which differs between any two calls. */
const withoutRequestId = (result: CallToolResult): string => textOf(result).replace(/request_id: [\w-]+/, '');

/** What a tasks method answers: the result, or the JSON-RPC error's code and message. */
async function taskAnswer(harness: Harness, method: 'tasks/get' | 'tasks/cancel', taskId: string): Promise<unknown> {
  try {
    return {
      result: await harness.modern.request({ method, params: { taskId } }, method === 'tasks/get' ? Task : Ack),
    };
  } catch (err) {
    const { code, message } = err as { code?: unknown; message?: unknown };
    return { error: { code, message } };
  }
}

async function submitted(harness: Harness): Promise<string> {
  const result = await harness.call('submit_trend_report', TREND);
  expect(result.isError, textOf(result)).toBeFalsy();
  return structured<Job>(result).job_id;
}

async function finished(harness: Harness, jobId: string): Promise<Job> {
  return eventually(`job ${jobId} to end`, async () => {
    const job = structured<Job>(await harness.call('get_report_job', { job_id: jobId }));
    return ['completed', 'failed', 'cancelled'].includes(job.state) ? job : undefined;
  });
}

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin?.end();
});

describe('a job read under other grants than it was submitted with', () => {
  const subject = 'job-readers-analyst';
  let unscoped: Harness;
  let europe: Harness;
  let narrow: Harness;

  beforeAll(async () => {
    unscoped = await tasksClient({ id: subject });
    europe = await tasksClient({ id: subject, dataScope: { region: ['Europe'] } });
    narrow = await tasksClient({ id: subject, tools: new Set(['query_order_count']) });
  });
  afterAll(async () => {
    await unscoped?.close();
    await europe?.close();
    await narrow?.close();
  });

  it('19.4.1 answers as unknown to the same subject holding a Europe-scoped token, on the job tools and tasks alike', async () => {
    const jobId = await submitted(unscoped);
    expect((await finished(unscoped, jobId)).state).toBe('completed');
    // Its creator still reads it, both ways: what the scoped reader is refused below exists.
    expect(await taskAnswer(unscoped, 'tasks/get', jobId)).toMatchObject({
      result: { taskId: jobId, status: 'completed' },
    });

    for (const tool of ['get_report_job', 'cancel_report_job']) {
      const scoped = await europe.call(tool, { job_id: jobId });
      expect(scoped.isError).toBe(true);
      expect(withoutRequestId(scoped)).toBe(withoutRequestId(await europe.call(tool, { job_id: NEVER })));
    }
    for (const method of ['tasks/get', 'tasks/cancel'] as const) {
      const scoped = await taskAnswer(europe, method, jobId);
      expect(scoped).toMatchObject({ error: { code: -32602 } });
      expect(scoped).toEqual(await taskAnswer(europe, method, NEVER));
    }
  });

  it('19.4.1 answers as unknown to the unscoped subject a job submitted under a Europe scope', async () => {
    const jobId = await submitted(europe);
    expect((await finished(europe, jobId)).state).toBe('completed');
    const polled = await unscoped.call('get_report_job', { job_id: jobId });
    expect(withoutRequestId(polled)).toBe(withoutRequestId(await unscoped.call('get_report_job', { job_id: NEVER })));
    expect(await taskAnswer(unscoped, 'tasks/get', jobId)).toEqual(await taskAnswer(unscoped, 'tasks/get', NEVER));
  });

  it('19.4.1 answers as unknown to a narrow token (only query_order_count), through tasks/get as through get_report_job', async () => {
    const jobId = await submitted(unscoped);
    expect((await finished(unscoped, jobId)).state).toBe('completed');
    for (const method of ['tasks/get', 'tasks/cancel'] as const) {
      const answer = await taskAnswer(narrow, method, jobId);
      expect(answer).toMatchObject({ error: { code: -32602 } });
      expect(answer).toEqual(await taskAnswer(narrow, method, NEVER));
    }
    await expect(narrow.call('get_report_job', { job_id: jobId })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: "get_report_job"'),
    });
    // The cancels above changed nothing: the job is as its creator left it.
    const { rows } = await admin.query<{ cancel_requested: boolean }>(
      'select cancel_requested from querygate_jobs.jobs where id = $1',
      [jobId],
    );
    expect(rows).toEqual([{ cancel_requested: false }]);
  });
});

describe('cancelling a finished job', () => {
  it('19.4.3 leaves it exactly as it was, through cancel_report_job and tasks/cancel', async () => {
    const harness = await tasksClient({ id: 'job-readers-finished' });
    try {
      const jobId = await submitted(harness);
      expect((await finished(harness, jobId)).state).toBe('completed');
      const row = async (): Promise<Record<string, unknown>> =>
        (await admin.query('select * from querygate_jobs.jobs where id = $1', [jobId])).rows[0] as Record<
          string,
          unknown
        >;
      const before = await row();
      const cancelled = await harness.call('cancel_report_job', { job_id: jobId });
      expect(structured<Job & { cancel_requested: boolean }>(cancelled)).toMatchObject({
        state: 'completed',
        cancel_requested: false,
      });
      expect(await taskAnswer(harness, 'tasks/cancel', jobId)).toHaveProperty('result');
      expect(await row()).toEqual(before);
    } finally {
      await harness.close();
    }
  });
});
