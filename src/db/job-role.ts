/**
 * The job store: a schema of its own (querygate_jobs), owned by the admin, holding the state of the
 * reports run as jobs, and the one role that may read and write it. The job role is a leaf login
 * role with no rights but CONNECT and the rows of the job table: it reads no pack schema, owns
 * nothing and creates nothing; the reader gets no right on the job schema. Both are made at prepare
 * time through the admin connection, idempotently, in every database querygate is prepared in.
 */
import { sql, type Kysely } from 'kysely';
import { ensureLeafRole } from './reader-role.js';

/** The schema of the job store; the job table is `querygate_jobs.jobs`. */
export const JOB_SCHEMA = 'querygate_jobs';

export async function ensureJobStore(db: Kysely<unknown>, role: string): Promise<void> {
  const jobs = sql.id(role);
  const schema = sql.id(JOB_SCHEMA);
  await db.transaction().execute(async (tx) => {
    const config = await ensureLeafRole(tx, role);
    if (!config.some((c) => c.startsWith('statement_timeout='))) {
      await sql`alter role ${jobs} set statement_timeout = '5s'`.execute(tx);
    }
    if (!config.some((c) => c.startsWith('idle_in_transaction_session_timeout='))) {
      await sql`alter role ${jobs} set idle_in_transaction_session_timeout = '10s'`.execute(tx);
    }
    const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(tx);
    await sql`grant connect on database ${sql.id(rows[0]!.name)} to ${jobs}`.execute(tx);

    await sql`create schema if not exists ${schema}`.execute(tx);
    await sql`revoke all on schema ${schema} from public`.execute(tx);
    // One row per job. `owner` is the replica running it, `heartbeat_at` its lease: a row whose
    // heartbeat is older than the lease is taken over by another replica (src/jobs/store.ts).
    await sql`
      create table if not exists ${schema}.jobs (
        id text primary key,
        caller text not null,
        tool text not null,
        arguments jsonb not null,
        state text not null check (state in ('pending', 'running', 'completed', 'failed', 'cancelled')),
        progress_done integer not null default 0,
        progress_total integer,
        progress_message text,
        result jsonb,
        error jsonb,
        cancel_requested boolean not null default false,
        attempts integer not null default 0,
        owner text,
        heartbeat_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        expires_at timestamptz not null
      )`.execute(tx);
    // Added after the first job stores were made: a job keeps its caller's data scope and identity.
    await sql`
      alter table ${schema}.jobs
        add column if not exists data_scope jsonb,
        add column if not exists subject text,
        add column if not exists client_id text`.execute(tx);
    await sql`revoke all on ${schema}.jobs from public`.execute(tx);
    await sql`create index if not exists jobs_in_flight on ${schema}.jobs (caller) where state in ('pending', 'running')`.execute(
      tx,
    );
    await sql`create index if not exists jobs_expiry on ${schema}.jobs (expires_at)`.execute(tx);
    await sql`grant usage on schema ${schema} to ${jobs}`.execute(tx);
    await sql`grant select, insert, update, delete on ${schema}.jobs to ${jobs}`.execute(tx);
    // Call rates shared by the replicas (src/jobs/rates.ts): one row per caller.
    await sql`
      create table if not exists ${schema}.rate_limits (
        key text primary key,
        tat timestamptz not null
      )`.execute(tx);
    await sql`revoke all on ${schema}.rate_limits from public`.execute(tx);
    await sql`grant select, insert, update, delete on ${schema}.rate_limits to ${jobs}`.execute(tx);
    await ensureReportTables(tx, schema, jobs);
  });
}

/**
 * The tables of reports left running (src/schedules/, src/history/), beside the jobs that run them:
 * - `schedules`: when each declared schedule was first seen, so that a missed run is known as one;
 * - `schedule_runs`: one row per due run (schedule, instant due, scope), inserted by the replica that
 *   claims it, so that a run happens once however many replicas see it due;
 * - `report_deliveries`: one row per run and destination, claimed with FOR UPDATE SKIP LOCKED and marked
 *   delivered in the transaction that claimed it, its idempotency key sent to webhooks;
 * - `report_editions`: every report produced, its answer kept whole, so that a rerun can say what it restates.
 */
async function ensureReportTables(
  tx: Kysely<unknown>,
  schema: ReturnType<typeof sql.id>,
  jobs: ReturnType<typeof sql.id>,
): Promise<void> {
  await sql`
    create table if not exists ${schema}.schedules (
      name text primary key,
      since timestamptz not null default now()
    )`.execute(tx);
  await sql`
    create table if not exists ${schema}.schedule_runs (
      schedule text not null,
      due_at timestamptz not null,
      scope_key text not null default '',
      job_id text,
      state text not null check (state in ('running', 'delivering', 'done', 'failed', 'skipped', 'undelivered')),
      edition_id text,
      error text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      primary key (schedule, due_at, scope_key)
    )`.execute(tx);
  await sql`
    create table if not exists ${schema}.report_deliveries (
      schedule text not null,
      due_at timestamptz not null,
      scope_key text not null default '',
      destination text not null,
      idempotency_key text not null unique,
      state text not null check (state in ('pending', 'delivered', 'failed')),
      attempts integer not null default 0,
      next_attempt_at timestamptz not null default now(),
      delivered_at timestamptz,
      last_error text,
      primary key (schedule, due_at, scope_key, destination)
    )`.execute(tx);
  await sql`create index if not exists report_deliveries_due on ${schema}.report_deliveries (next_attempt_at) where state = 'pending'`.execute(
    tx,
  );
  await sql`
    create table if not exists ${schema}.report_editions (
      id text primary key,
      report text not null,
      start_date text,
      end_date text,
      scope_key text not null default '',
      data_scope jsonb,
      arguments jsonb not null,
      -- json, not jsonb: the text kept as it was sent, its keys in their order, so that a show is byte for byte the same
      answer json not null,
      hash text not null,
      data_through timestamptz,
      ran_at timestamptz not null default now(),
      source text not null,
      restates text
    )`.execute(tx);
  await sql`create index if not exists report_editions_period on ${schema}.report_editions (report, start_date, end_date, scope_key, ran_at)`.execute(
    tx,
  );
  await sql`create index if not exists report_editions_ran on ${schema}.report_editions (ran_at)`.execute(tx);
  for (const table of ['schedules', 'schedule_runs', 'report_deliveries', 'report_editions']) {
    await sql`revoke all on ${sql.id(JOB_SCHEMA, table)} from public`.execute(tx);
    await sql`grant select, insert, update, delete on ${sql.id(JOB_SCHEMA, table)} to ${jobs}`.execute(tx);
  }
}
