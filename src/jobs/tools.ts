/**
 * The tools the engine makes for the reports that run as jobs, for clients without the tasks
 * extension: a submit tool per report (its own input, answered at once with the job), and one
 * get_report_job and one cancel_report_job for them all. Their contracts and their one answer shape
 * are here; the registry lists and runs them (src/registry/), the job service keeps the jobs.
 */
import { z } from 'zod';
import type { JobRow } from './store.js';

export const GET_JOB_TOOL = 'get_report_job';
export const CANCEL_JOB_TOOL = 'cancel_report_job';

/*
 * Each job tool's annotations say the hints whose MCP default is wrong for it, and no other: every
 * one is closed-world (openWorldHint defaults to true); readOnlyHint defaults to false and
 * idempotentHint to false, destructiveHint to true.
 */
/** Submitting adds a job (a row, and one of the caller's in flight): it writes, destroys nothing, and each call adds another. */
export const SUBMIT_ANNOTATIONS = {
  destructiveHint: false,
  openWorldHint: false,
} as const;
/** Polling reads the job's state; it changes nothing a caller can see (MCP reads the other hints only of a tool that writes). */
export const GET_ANNOTATIONS = {
  readOnlyHint: true,
  openWorldHint: false,
} as const;
/** Cancelling ends a job (no data changes; it can be submitted again), and a second cancel changes nothing more. */
export const CANCEL_ANNOTATIONS = {
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
} as const;

export const jobIdInput = z.strictObject({
  job_id: z
    .string()
    .min(1, { error: 'must not be empty' })
    .max(100, { error: 'is not a job id (at most 100 characters)' }),
});

const JOB_ERROR = z.object({ code: z.string(), message: z.string() });
const JOB_STATE = z
  .enum(['pending', 'running', 'completed', 'failed', 'cancelled'])
  .describe('pending and running: poll again after poll_interval_ms');

/**
 * The answer of every job tool: the job as it stands, with `result` shaped as the report's output.
 * The listed schema (LISTED_JOB_RESULT) leaves the result's shape to the report's own tool, which
 * lists it once; the server checks each answer against the report's output all the same. It carries
 * what a model polling the job reads, and no echo: not the report it runs (the caller submitted it)
 * nor the row's timestamps (expires_at is the one that bounds a poll).
 */
export function jobOutput(result: z.ZodType): z.ZodObject {
  return z.object({
    job_id: z.string(),
    state: JOB_STATE,
    progress: z.object({ done: z.number().int(), total: z.number().int(), message: z.string() }).nullable(),
    result: result.nullable(),
    error: JOB_ERROR.nullable(),
    attempt: z.number().int(),
    cancel_requested: z.boolean(),
    expires_at: z.string(),
    poll_interval_ms: z.number().int(),
  });
}

/**
 * A submit tool's answer: the job just recorded, pending, and how to poll it. Its progress, result and
 * error are not there yet, so it carries none of them; get_report_job answers the whole job.
 */
export const submittedOutput = z.object({
  job_id: z.string(),
  state: JOB_STATE,
  expires_at: z.string(),
  poll_interval_ms: z.number().int(),
});

/** What the job tools list as `result`: when completed, the answer of the report the job runs. */
export const LISTED_JOB_RESULT = z.record(z.string(), z.unknown()).describe("the answer of the report's tool");

/** A job row as the job tools answer it. */
export function jobView(job: JobRow, pollIntervalMs: number): Record<string, unknown> {
  const structured = job.state === 'completed' ? job.result?.structuredContent : undefined;
  return {
    job_id: job.id,
    state: job.state,
    progress:
      job.progress_total === null
        ? null
        : { done: job.progress_done, total: job.progress_total, message: job.progress_message ?? '' },
    result: structured ?? null,
    error: job.state === 'failed' ? job.error : null,
    attempt: job.attempts,
    cancel_requested: job.cancel_requested,
    expires_at: job.expires_at.toISOString(),
    poll_interval_ms: pollIntervalMs,
  };
}

/** A job row just recorded, as its submit tool answers it. */
export function submittedView(job: JobRow, pollIntervalMs: number): Record<string, unknown> {
  return {
    job_id: job.id,
    state: job.state,
    expires_at: job.expires_at.toISOString(),
    poll_interval_ms: pollIntervalMs,
  };
}
