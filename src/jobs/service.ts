/**
 * Long jobs: a report run in the background, its state in the job store (PostgreSQL), so that any
 * replica answers a poll. The replica that takes a job runs it through the registry, as a call of
 * the report by the job's caller, and holds it with a heartbeat; a cancel is a flag in the row, heard
 * at once through LISTEN/NOTIFY and at every heartbeat; a replica that dies leaves a job whose
 * heartbeat stops, which another replica claims after the lease and runs again (reports only read,
 * so a second run is safe), a bounded number of times.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { findPooler } from '../db/pooler.js';
import type { Logger } from '../lib/logger.js';
import type { Caller } from '../lib/caller.js';
import {
  CANCEL_CHANNEL,
  claimStale,
  deleteExpired,
  findJob,
  finishJob,
  insertJob,
  jobCaller,
  releaseJob,
  renewLease,
  requestCancel,
  type JobReader,
  type JobRow,
  type JobStore,
  type Progress,
  type Takeover,
} from './store.js';

/** How a run of a job's report ended, as the registry tells it (see CallOptions.ended). */
export interface RunEnding {
  readonly outcome: 'ok' | 'rejected' | 'refused' | 'failed' | 'cancelled' | 'unknown_tool';
  readonly code?: string;
  readonly retryAfterSeconds?: number;
}

/** Runs a job's report for its caller: the registry's call, with the job's signal and progress. */
export type RunReport = (
  job: { readonly tool: string; readonly caller: Caller; readonly args: Record<string, unknown> },
  signal: AbortSignal,
  progress: (done: number, total: number, message: string) => void,
) => Promise<{ result: CallToolResult; ending: RunEnding }>;

export interface JobSettings extends Takeover {
  /** How long a job is kept after it is submitted. */
  readonly ttlSeconds: number;
  /** Jobs one caller may have pending or running at once. */
  readonly maxPerCaller: number;
  /** Jobs this replica runs at once; more wait in the store for a replica with room. */
  readonly maxRunning: number;
}

export interface JobService {
  readonly settings: JobSettings;
  /** How often a client should poll, in milliseconds. */
  readonly pollIntervalMs: number;
  /**
   * Records a job for a caller, with its data scope, and starts it here; gives how many it has in
   * flight when at the bound.
   */
  submit(caller: Caller, tool: string, args: Record<string, unknown>): Promise<JobRow | { inFlight: number }>;
  /** A job the reader may read, as it stands (taking it over first when its replica went quiet). */
  get(reader: JobReader, id: string): Promise<JobRow | undefined>;
  /** Asks for a job the reader may read to be cancelled; gives it as it stands. */
  cancel(reader: JobReader, id: string): Promise<JobRow | undefined>;
  /** Claims a job recorded without an owner (a scheduled run's) and runs it here, when there is room. */
  take(id: string): Promise<void>;
  /** Stops taking jobs and lets go of those running here, for another replica to take over. */
  close(): Promise<void>;
}

/** A job running on this replica. */
interface Running {
  readonly abort: AbortController;
  /** Why it is being stopped: a cancel, the lease lost to another replica, or this replica stopping. */
  stop?: 'cancelled' | 'lost' | 'released';
  progress?: Progress;
}

export interface JobServiceOptions {
  readonly store: JobStore;
  /** The job role's URL, for the connection that listens for cancels. */
  readonly url: string;
  readonly settings: JobSettings;
  readonly run: RunReport;
  readonly logger: Logger;
  /**
   * Whether this replica can run reports now (its start-up check passed): until then it takes no job
   * over, and lets go of those submitted to it for a replica that can, or for itself once it can.
   */
  readonly ready?: () => boolean;
}

/**
 * Failures a later run can get past (the reader down or restarting, a full pool, a login refused while
 * an operator mends a password or a grant): retried with backoff, not recorded.
 */
const TRANSIENT_CODES: ReadonlySet<string> = new Set(['database_unavailable', 'database_refused', 'busy']);
const FIRST_RETRY_MS = 250;
const LONGEST_RETRY_MS = 4000;

/** Waits `ms`, or less when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export function startJobService(options: JobServiceOptions): JobService {
  const { store, settings, logger } = options;
  // One name per process: a claim, a heartbeat and an ending each say which replica holds the job.
  const owner = `${process.pid}-${randomUUID()}`;
  const leaseMs = settings.leaseSeconds * 1000;
  // Often enough that a cancel flag is seen within a second, and a lease is renewed several times over.
  const heartbeatMs = Math.max(100, Math.min(1000, Math.floor(leaseMs / 4)));
  const running = new Map<string, Running>();
  let closed = false;

  const stopRun = (id: string, why: NonNullable<Running['stop']>): void => {
    const run = running.get(id);
    if (!run || run.stop) return;
    run.stop = why;
    run.abort.abort();
  };

  /** Runs a job this replica holds, to its end (or until it is stopped), and records the end. */
  const execute = async (job: JobRow): Promise<void> => {
    const run: Running = { abort: new AbortController() };
    running.set(job.id, run);
    let beating: Promise<void> = Promise.resolve();
    const beat = (update: Parameters<typeof renewLease>[3] = {}): Promise<void> =>
      (beating = beating.then(async () => {
        if (run.stop) return;
        const held = await renewLease(store, job.id, owner, update).catch((err: unknown) => {
          logger.warn('job heartbeat failed', { job_id: job.id, message: String(err) });
          return { cancelRequested: false };
        });
        if (!held) stopRun(job.id, 'lost');
        else if (held.cancelRequested) stopRun(job.id, 'cancelled');
      }));
    const timer = setInterval(() => void beat(run.progress ? { progress: run.progress } : {}), heartbeatMs);
    // A transient failure is retried with backoff for up to one lease, the heartbeat holding the job meanwhile.
    const retryUntil = Date.now() + leaseMs;
    let retryMs = FIRST_RETRY_MS;
    try {
      for (;;) {
        await beat({ running: true });
        if (run.stop) break;
        const { result, ending } = await options.run(
          { tool: job.tool, caller: jobCaller(job), args: job.arguments },
          run.abort.signal,
          (done, total, message) => {
            run.progress = { done, total, message };
            void beat({ progress: run.progress });
          },
        );
        if (ending.outcome === 'refused' && !run.stop) {
          // No room on this replica's pool right now: the job waits its turn, its lease kept.
          await new Promise((resolve) => setTimeout(resolve, (ending.retryAfterSeconds ?? 1) * 1000));
          continue;
        }
        if (
          ending.outcome === 'failed' &&
          TRANSIENT_CODES.has(ending.code ?? '') &&
          !run.stop &&
          Date.now() + retryMs < retryUntil
        ) {
          logger.info('job run failed for now; retrying', { job_id: job.id, code: ending.code, retry_in_ms: retryMs });
          await pause(retryMs, run.abort.signal);
          retryMs = Math.min(retryMs * 2, LONGEST_RETRY_MS);
          continue;
        }
        clearInterval(timer);
        await beating;
        await settle(job, run, result, ending);
        return;
      }
      clearInterval(timer);
      await beating;
      await settle(job, run, undefined, undefined);
    } catch (err) {
      logger.error('job failed to run', { job_id: job.id, message: err instanceof Error ? err.message : String(err) });
      await finishJob(store, job.id, owner, {
        state: 'failed',
        error: { code: 'query_failed', message: 'The job failed on the server. Submitting it again will not help.' },
      }).catch(() => undefined);
    } finally {
      clearInterval(timer);
      running.delete(job.id);
    }
  };

  /** Records how a run ended: its answer, its cancellation, or nothing when it is no longer ours. */
  const settle = async (
    job: JobRow,
    run: Running,
    result: CallToolResult | undefined,
    ending: RunEnding | undefined,
  ): Promise<void> => {
    if (run.stop === 'lost') return;
    if (run.stop === 'released' || ending?.code === 'shutting_down') {
      await releaseJob(store, job.id, owner);
      return;
    }
    if (run.stop === 'cancelled' || ending?.outcome === 'cancelled' || !result || !ending) {
      await finishJob(store, job.id, owner, { state: 'cancelled' });
      return;
    }
    if (ending.outcome === 'ok') {
      await finishJob(store, job.id, owner, { state: 'completed', result });
      return;
    }
    const message = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    await finishJob(store, job.id, owner, {
      state: 'failed',
      result,
      error: { code: ending.code ?? 'query_failed', message },
    });
  };

  const start = (job: JobRow): void => {
    void execute(job);
  };

  /** Claims quiet jobs (all, or the one named) while this replica has room, and runs them. */
  const canRun = (): boolean => !closed && (options.ready?.() ?? true);
  const takeOver = async (id?: string): Promise<void> => {
    if (!canRun()) return;
    const room = settings.maxRunning - running.size;
    if (room <= 0) return;
    const claimed = await claimStale(store, owner, settings, {
      limit: room,
      running: [...running.keys()],
      ...(id === undefined ? {} : { id }),
    });
    for (const job of claimed) {
      logger.info('job taken over', { job_id: job.id, tool: job.tool, attempt: job.attempts });
      start(job);
    }
  };

  // The sweeper: expired jobs deleted, quiet ones taken over, a few times per lease.
  const sweep = async (): Promise<void> => {
    const deleted = await deleteExpired(store);
    if (deleted > 0) logger.debug('expired jobs deleted', { count: deleted });
    await takeOver();
  };
  const sweeper = setInterval(
    () => void sweep().catch((err: unknown) => logger.warn('job sweep failed', { message: String(err) })),
    Math.max(500, Math.floor(leaseMs / 3)),
  );
  sweeper.unref();

  // Cancels announced by any replica reach the one running the job at once.
  let listener: pg.Client | undefined;
  const openListener = (): pg.Client =>
    new pg.Client({ connectionString: options.url, application_name: 'querygate-jobs-listen' });
  const listen = async (): Promise<void> => {
    if (closed) return;
    const client = openListener();
    client.on('notification', (message) => {
      if (message.channel === CANCEL_CHANNEL && message.payload) stopRun(message.payload, 'cancelled');
    });
    client.on('error', (err) => {
      logger.warn('job cancel listener lost; reconnecting (heartbeats still see cancels)', { message: err.message });
      listener = undefined;
      client.end().catch(() => undefined);
      setTimeout(() => void listen().catch(() => undefined), 1000).unref();
    });
    await client.connect();
    // Behind a pooler in transaction mode a LISTEN is made on a server connection the next client gets:
    // the notifications never come back here (PgBouncer drops them). Said once, and not attempted.
    const pooler = await findPooler(client, async () => {
      const second = openListener();
      await second.connect();
      return second;
    });
    if (pooler.pooled && pooler.mode === 'transaction') {
      logger.warn(
        'the job role connects through a pooler in transaction mode, where LISTEN cannot hear: cancels will arrive with the heartbeat (within about a second) instead of at once; give QUERYGATE_JOBS_URL a direct or session-mode connection to hear them at once',
      );
      await client.end();
      return;
    }
    await client.query(`listen ${CANCEL_CHANNEL}`);
    listener = client;
    if (closed) await client.end();
  };
  void listen().catch((err: unknown) => {
    logger.warn('could not listen for job cancels; heartbeats still see them', { message: String(err) });
    setTimeout(() => void listen().catch(() => undefined), 1000).unref();
  });

  return {
    settings,
    pollIntervalMs: Math.min(2000, Math.max(250, heartbeatMs * 2)),
    submit: async (caller, tool, args) => {
      // 128 random bits: a job id is not guessable, though it is checked against its caller as well.
      const id = randomBytes(16).toString('base64url');
      const job = await insertJob(store, {
        id,
        caller,
        tool,
        args,
        owner,
        ttlSeconds: settings.ttlSeconds,
        maxInFlight: settings.maxPerCaller,
      });
      if ('inFlight' in job) return job;
      if (!canRun() || running.size >= settings.maxRunning) {
        // No room here: another replica (or this one, later) takes it over as a quiet job.
        await releaseJob(store, id, owner);
      } else {
        start(job);
      }
      return job;
    },
    get: async (reader, id) => {
      const job = await findJob(store, id, reader);
      if (job && (job.state === 'pending' || job.state === 'running') && !running.has(id)) {
        await takeOver(id);
        return findJob(store, id, reader);
      }
      return job;
    },
    take: (id) => takeOver(id),
    cancel: async (reader, id) => {
      const job = await requestCancel(store, id, reader);
      // Heard here at once; other replicas hear it through NOTIFY or their next heartbeat.
      if (job) stopRun(id, 'cancelled');
      return job;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(sweeper);
      for (const id of running.keys()) stopRun(id, 'released');
      const deadline = Date.now() + 2000;
      while (running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      await listener?.end().catch(() => undefined);
      await store.destroy();
    },
  };
}
