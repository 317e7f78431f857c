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
  });
}
