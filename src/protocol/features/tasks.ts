/**
 * Tasks (the extension io.modelcontextprotocol/tasks, for 2026-07-28): a client that declares the
 * extension in a request's capabilities and calls a tool that runs as a job gets a task handle
 * (`resultType: "task"`) at once instead of the result, and follows it with tasks/get until it is
 * completed (the tool's result inlined, an isError result included), failed (a JSON-RPC error: the
 * job was abandoned), or cancelled (tasks/cancel). A task is a job of the job store, so the two-tool
 * pattern and tasks see the same jobs, and any replica answers. No task ever needs input, so
 * tasks/update is only acknowledged. Progress is told in `statusMessage` ("2 of 5 queries done"):
 * the extension carries no progress notifications for tasks.
 */
import { INVALID_PARAMS, ProtocolError } from '../../lib/errors.js';
import type { JobService } from '../../jobs/service.js';
import type { JobReader, JobRow } from '../../jobs/store.js';
import type { Feature, HandlerContext } from '../feature.js';
import { INTERNAL_ERROR, isObject } from '../json-rpc.js';
import { missingExtension } from '../revisions.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export const tasksFeature: Feature = {
  capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  methods: {
    'tasks/get': {
      eras: ['modern'],
      nameParam: 'taskId',
      handle: async (params, ctx) => {
        const { jobs, id } = taskRequest('tasks/get', params, ctx);
        return detailedTask(await known(jobs.get(readerOf(ctx), id)), jobs);
      },
    },
    'tasks/cancel': {
      eras: ['modern'],
      nameParam: 'taskId',
      // Acknowledged at once; the task turns cancelled when its replica has stopped it (or stays as it
      // ended, when it ended first).
      handle: async (params, ctx) => {
        const { jobs, id } = taskRequest('tasks/cancel', params, ctx);
        await known(jobs.cancel(readerOf(ctx), id));
        return {};
      },
    },
    'tasks/update': {
      eras: ['modern'],
      nameParam: 'taskId',
      // A report never asks for input: there is never an outstanding request, so every response is
      // ignored, as the extension says of responses to keys not outstanding.
      handle: async (params, ctx) => {
        const { jobs, id } = taskRequest('tasks/update', params, ctx);
        if (!isObject(params.inputResponses)) {
          throw new ProtocolError(INVALID_PARAMS, 'Invalid params: inputResponses must be an object');
        }
        await known(jobs.get(readerOf(ctx), id));
        return {};
      },
    },
  },
};

/** The handle a task-creating tools/call answers with: the task as it starts. */
export function createTaskResult(job: JobRow, jobs: JobService): Record<string, unknown> {
  return { resultType: 'task', ...taskOf(job, jobs) };
}

/** Whether this request may be answered with a task: its client declared the extension. */
export function acceptsTasks(ctx: HandlerContext): boolean {
  return ctx.clientExtensions.has(TASKS_EXTENSION) && ctx.deps.jobs !== undefined;
}

function taskRequest(
  method: string,
  params: Record<string, unknown>,
  ctx: HandlerContext,
): { jobs: JobService; id: string } {
  if (!ctx.clientExtensions.has(TASKS_EXTENSION)) throw missingExtension(TASKS_EXTENSION, method);
  if (typeof params.taskId !== 'string')
    throw new ProtocolError(INVALID_PARAMS, 'Invalid params: taskId must be a string');
  return { jobs: ctx.deps.jobs!, id: params.taskId };
}

/**
 * The caller as a reader of tasks, by the rule the job tools follow (readableBy in src/jobs/store.ts):
 * a task created under another data scope or toolset is unknown.
 */
function readerOf(ctx: HandlerContext): JobReader {
  return { caller: ctx.caller, mayRun: (tool) => ctx.deps.registry.mayRunAsJob(ctx.caller, tool) };
}

/** The caller's task, or -32602: another caller's task is answered as one that never was, or expired. */
async function known(job: Promise<JobRow | undefined>): Promise<JobRow> {
  const found = await job;
  if (!found) throw new ProtocolError(INVALID_PARAMS, 'Failed to retrieve task: Task not found (or expired)');
  return found;
}

type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** The Task fields of a job. */
function taskOf(job: JobRow, jobs: JobService): Record<string, unknown> & { status: TaskStatus } {
  const status: TaskStatus =
    job.state === 'pending' || job.state === 'running'
      ? 'working'
      : job.state === 'failed' && job.result === null
        ? 'failed'
        : job.state === 'failed'
          ? 'completed'
          : job.state;
  return {
    taskId: job.id,
    status,
    statusMessage: statusMessage(job),
    createdAt: job.created_at.toISOString(),
    lastUpdatedAt: job.updated_at.toISOString(),
    ttlMs: job.expires_at.getTime() - job.created_at.getTime(),
    pollIntervalMs: jobs.pollIntervalMs,
  };
}

function statusMessage(job: JobRow): string {
  switch (job.state) {
    case 'pending':
      return 'Waiting to start.';
    case 'running':
      return job.progress_message ?? 'Running its first query.';
    case 'completed':
      return 'Completed.';
    case 'cancelled':
      return 'Cancelled.';
    case 'failed':
      return job.error?.message ?? 'Failed.';
  }
}

/**
 * A task with what its status carries: a completed task its tool result (an isError result too: the
 * tool ran and said what went wrong), a failed one the JSON-RPC error that ended it.
 */
function detailedTask(job: JobRow, jobs: JobService): Record<string, unknown> {
  const task = taskOf(job, jobs);
  if (task.status === 'completed') return { ...task, result: job.result };
  if (task.status === 'failed') {
    return { ...task, error: { code: INTERNAL_ERROR, message: job.error?.message ?? 'The task failed.' } };
  }
  return task;
}
