/**
 * The job store: the rows of querygate_jobs.jobs, read and written as the job role only. Every
 * replica reads and writes the same rows, so a job submitted on one is polled, cancelled or taken
 * over on another. Times are the database's (now()), so replicas whose clocks differ agree on leases
 * and expiry. Plain functions over the store's handle, each one statement or one short transaction.
 */
import { Kysely, PostgresDialect, sql, type ColumnType, type Generated, type Selectable } from 'kysely';
import pg from 'pg';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sameScope, scopeOf, type DataScope } from '../lib/data-scope.js';
import type { Caller } from '../lib/caller.js';

export const JOB_STATES = ['pending', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** What a job's failure says: a stable code and the message a client may read (never SQL or a stack). */
export interface JobError {
  readonly code: string;
  readonly message: string;
}

/** A jsonb column: read as the value, written as its JSON text. */
type Json<T> = ColumnType<T, string, string>;

interface JobsTable {
  id: string;
  caller: string;
  /** The caller's data scope when it submitted: every run of the job answers within it. */
  data_scope: Json<DataScope | null> | null;
  /** Who the caller was, and its OAuth client, for the audit lines of the job's runs. */
  subject: string | null;
  client_id: string | null;
  tool: string;
  arguments: Json<Record<string, unknown>>;
  state: JobState;
  progress_done: Generated<number>;
  progress_total: number | null;
  progress_message: string | null;
  /** The tool's answer, when it gave one: its structured result, or its isError result. */
  result: Json<CallToolResult | null> | null;
  error: Json<JobError | null> | null;
  cancel_requested: Generated<boolean>;
  attempts: Generated<number>;
  owner: string | null;
  heartbeat_at: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  expires_at: Date;
}

interface RateLimitsTable {
  /** What is counted: `calls:<caller>`. */
  key: string;
  /** When the next call would be due at the steady rate (GCRA's theoretical arrival time). */
  tat: Date;
}

export interface JobTables {
  'querygate_jobs.jobs': JobsTable;
  'querygate_jobs.rate_limits': RateLimitsTable;
}

export type JobRow = Selectable<JobsTable>;
export type JobStore = Kysely<JobTables>;

const JOBS = 'querygate_jobs.jobs' as const;
const IN_FLIGHT: JobState[] = ['pending', 'running'];

/** The job role's pool: a few connections, bounded in time, each statement its own transaction. */
export function openJobStore(url: string, options: { readonly poolMax?: number } = {}): JobStore {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax ?? 4,
    application_name: 'querygate-jobs',
    statement_timeout: 5000,
    idle_in_transaction_session_timeout: 10_000,
    connectionTimeoutMillis: 5000,
  });
  pool.on('error', () => undefined); // an idle connection lost (a restart) is replaced on the next use
  return new Kysely<JobTables>({ dialect: new PostgresDialect({ pool }) });
}

export interface NewJob {
  readonly id: string;
  /** Who submits it: its id owns the job; its data scope, subject and client are kept for its runs. */
  readonly caller: Caller;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /** The replica that will run it. */
  readonly owner: string;
  readonly ttlSeconds: number;
  /** Jobs one caller may have pending or running at once. */
  readonly maxInFlight: number;
}

/**
 * Records a job, pending and claimed by `owner`, unless its caller already has `maxInFlight` jobs
 * pending or running: then gives how many. The count and the insert hold a lock on the caller's
 * name for their transaction, so two replicas cannot both let a caller past the bound.
 */
export async function insertJob(db: JobStore, job: NewJob): Promise<JobRow | { inFlight: number }> {
  return db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`querygate_jobs:${job.caller.id}`}))`.execute(tx);
    const { count } = await tx
      .selectFrom(JOBS)
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('caller', '=', job.caller.id)
      .where('state', 'in', IN_FLIGHT)
      .where('expires_at', '>', sql<Date>`now()`)
      .executeTakeFirstOrThrow();
    if (Number(count) >= job.maxInFlight) return { inFlight: Number(count) };
    return tx
      .insertInto(JOBS)
      .values({
        id: job.id,
        caller: job.caller.id,
        data_scope: job.caller.dataScope === undefined ? null : JSON.stringify(job.caller.dataScope),
        subject: job.caller.subject ?? null,
        client_id: job.caller.clientId ?? null,
        tool: job.tool,
        arguments: JSON.stringify(job.args),
        state: 'pending',
        attempts: 1,
        owner: job.owner,
        heartbeat_at: sql<Date>`now()`,
        expires_at: sql<Date>`now() + make_interval(secs => ${job.ttlSeconds})`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/**
 * The caller a job runs as, on whichever replica runs it: its id, and the data scope, subject and
 * client it submitted with. Its toolset was checked when it submitted.
 */
export function jobCaller(job: JobRow): Caller {
  return {
    id: job.caller,
    ...(job.data_scope === null ? {} : { dataScope: job.data_scope }),
    ...(job.subject === null ? {} : { subject: job.subject }),
    ...(job.client_id === null ? {} : { clientId: job.client_id }),
  };
}

/** Who asks for a job: the caller as it is now, and whether it may now run a given report as a job. */
export interface JobReader {
  readonly caller: Caller;
  /** Whether this caller's toolset and data scope let it run (and so submit) the report `tool` as a job now. */
  readonly mayRun: (tool: string) => boolean;
}

/**
 * The one rule for reading, polling and cancelling a job (the job tools and tasks alike): the job is
 * the caller's, it was submitted under the data scope the caller holds now, and the caller may still
 * run its report. Any other job is as unknown as one that never was: a narrower token, or the same
 * subject with another scope, never reads what a wider grant computed.
 */
export function readableBy(job: JobRow, reader: JobReader): boolean {
  return (
    job.caller === reader.caller.id &&
    sameScope(scopeOf({ dataScope: job.data_scope ?? undefined }), scopeOf(reader.caller)) &&
    reader.mayRun(job.tool)
  );
}

/** A caller's job, unless it expired or the caller may not read it (readableBy). */
export async function findJob(db: JobStore, id: string, reader: JobReader): Promise<JobRow | undefined> {
  const row = await db
    .selectFrom(JOBS)
    .selectAll()
    .where('id', '=', id)
    .where('caller', '=', reader.caller.id)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row && readableBy(row, reader) ? row : undefined;
}

/** The progress of a job still held by `owner`, told so far. */
export interface Progress {
  readonly done: number;
  readonly total: number;
  readonly message: string;
}

/**
 * Renews `owner`'s lease on a job it runs (and records its progress, or marks it running); gives
 * whether a cancel was asked for, or undefined when the job is no longer this replica's (taken over
 * after a missed lease, cancelled while pending, or expired).
 */
export async function renewLease(
  db: JobStore,
  id: string,
  owner: string,
  update: { readonly running?: boolean; readonly progress?: Progress } = {},
): Promise<{ cancelRequested: boolean } | undefined> {
  const row = await db
    .updateTable(JOBS)
    .set({
      heartbeat_at: sql<Date>`now()`,
      ...(update.running ? { state: 'running' as const } : {}),
      ...(update.progress
        ? {
            progress_done: update.progress.done,
            progress_total: update.progress.total,
            progress_message: update.progress.message,
            updated_at: sql<Date>`now()`,
          }
        : {}),
    })
    .where('id', '=', id)
    .where('owner', '=', owner)
    .where('state', 'in', IN_FLIGHT)
    .returning('cancel_requested')
    .executeTakeFirst();
  return row && { cancelRequested: row.cancel_requested };
}

/** Ends a job `owner` still holds, with its answer or its error; false when it no longer holds it. */
export async function finishJob(
  db: JobStore,
  id: string,
  owner: string,
  end: { readonly state: 'completed' | 'failed' | 'cancelled'; result?: CallToolResult; error?: JobError },
): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable(JOBS)
    .set({
      state: end.state,
      result: end.result === undefined ? null : JSON.stringify(end.result),
      error: end.error === undefined ? null : JSON.stringify(end.error),
      owner: null,
      heartbeat_at: null,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('owner', '=', owner)
    .where('state', 'in', IN_FLIGHT)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** Lets go of a job without ending it (a replica stopping): another replica takes it over at once. */
export async function releaseJob(db: JobStore, id: string, owner: string): Promise<void> {
  await db
    .updateTable(JOBS)
    .set({ owner: null, heartbeat_at: null, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('owner', '=', owner)
    .where('state', 'in', IN_FLIGHT)
    .execute();
}

/**
 * Asks for a caller's job to be cancelled: the flag is in the row, so whichever replica runs it sees
 * it (at once, through NOTIFY on the channel below, or at its next heartbeat). A job not yet running
 * is cancelled here and now; a finished one is left exactly as it was. Gives the job as it stands, or
 * undefined for no job the caller may read (readableBy).
 */
export async function requestCancel(db: JobStore, id: string, reader: JobReader): Promise<JobRow | undefined> {
  return db.transaction().execute(async (tx) => {
    const found = await tx
      .selectFrom(JOBS)
      .selectAll()
      .where('id', '=', id)
      .where('caller', '=', reader.caller.id)
      .where('expires_at', '>', sql<Date>`now()`)
      .forUpdate()
      .executeTakeFirst();
    if (!found || !readableBy(found, reader)) return undefined;
    if (!IN_FLIGHT.includes(found.state)) return found;
    const row = await tx
      .updateTable(JOBS)
      .set({
        cancel_requested: true,
        state: sql<JobState>`case when state = 'pending' then 'cancelled' else state end`,
        owner: sql<string | null>`case when state = 'pending' then null else owner end`,
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    if (row.state === 'running') await sql`select pg_notify(${CANCEL_CHANNEL}, ${id})`.execute(tx);
    return row;
  });
}

/** The channel on which a cancel is announced, with the job's id as its payload. */
export const CANCEL_CHANNEL = 'querygate_job_cancel';

export interface Takeover {
  /** How long a heartbeat holds a claim. */
  readonly leaseSeconds: number;
  /** Runs a job may have; a job whose last run was lost after these many is failed. */
  readonly maxAttempts: number;
}

/**
 * Claims jobs whose replica went quiet (no heartbeat within the lease, or let go on stopping), at most
 * `limit` of them (or the one named by `id`): each is `owner`'s now, one attempt more, and no other
 * replica can claim it at the same time (the update takes the row; SKIP LOCKED passes over rows
 * another replica is claiming). Jobs past their attempts, or cancelled while nobody ran them, are
 * ended first.
 */
export async function claimStale(
  db: JobStore,
  owner: string,
  takeover: Takeover,
  pick: { readonly limit: number; readonly id?: string; readonly running?: readonly string[] },
): Promise<JobRow[]> {
  const stale = sql<boolean>`(heartbeat_at is null or heartbeat_at < now() - make_interval(secs => ${takeover.leaseSeconds}))`;
  const quiet = db
    .selectFrom(JOBS)
    .select('id')
    .where('state', 'in', IN_FLIGHT)
    .where('expires_at', '>', sql<Date>`now()`)
    .where(stale)
    .$if(pick.id !== undefined, (q) => q.where('id', '=', pick.id!))
    // A job this replica runs is not quiet, however late its heartbeat (a busy machine): never claimed twice.
    .$if((pick.running ?? []).length > 0, (q) => q.where('id', 'not in', pick.running!));
  await db
    .updateTable(JOBS)
    .set({ state: 'cancelled', owner: null, heartbeat_at: null, updated_at: sql<Date>`now()` })
    .where('id', 'in', quiet.where('cancel_requested', '=', true))
    .execute();
  await db
    .updateTable(JOBS)
    .set({
      state: 'failed',
      owner: null,
      heartbeat_at: null,
      updated_at: sql<Date>`now()`,
      error: JSON.stringify({
        code: 'abandoned',
        message: `The replicas running this job stopped ${takeover.maxAttempts} times before it finished; submit it again.`,
      } satisfies JobError),
    })
    .where('id', 'in', quiet.where('attempts', '>=', takeover.maxAttempts))
    .execute();
  return db
    .updateTable(JOBS)
    .set({
      owner,
      attempts: sql<number>`attempts + 1`,
      heartbeat_at: sql<Date>`now()`,
      updated_at: sql<Date>`now()`,
    })
    .where(
      'id',
      'in',
      quiet
        .where('cancel_requested', '=', false)
        .where('attempts', '<', takeover.maxAttempts)
        .limit(pick.limit)
        .forUpdate()
        .skipLocked(),
    )
    .where(stale)
    .returningAll()
    .execute();
}

/** Deletes the jobs past their expiry, whatever their state; gives how many. */
export async function deleteExpired(db: JobStore): Promise<number> {
  const { numDeletedRows } = await db
    .deleteFrom(JOBS)
    .where('expires_at', '<=', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(numDeletedRows);
}

/** How many jobs the store holds in each state, leaving out the expired ones it has not deleted yet. */
export async function countJobsByState(db: JobStore): Promise<Record<JobState, number>> {
  const rows = await db
    .selectFrom(JOBS)
    .select(['state', (eb) => eb.fn.countAll<string>().as('count')])
    .where('expires_at', '>', sql<Date>`now()`)
    .groupBy('state')
    .execute();
  const counts = Object.fromEntries(JOB_STATES.map((state) => [state, 0])) as Record<JobState, number>;
  for (const row of rows) counts[row.state] = Number(row.count);
  return counts;
}
