/**
 * The rows of reports left running, as the job role reads and writes them: when each schedule was first
 * seen, each due run (claimed once, whichever replica sees it first), and each delivery of a run.
 * Every replica runs the same statements; the primary keys and row locks make each run and each
 * delivery happen once. Plain functions over the job store's handle.
 */
import { createHash } from 'node:crypto';
import { sql, type ColumnType, type Generated, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DataScope } from '../lib/data-scope.js';
import type { JobStore, JobTables } from '../jobs/store.js';
import type { EditionTables } from '../history/editions.js';

type Json<T> = ColumnType<T, string, string>;

export const RUN_STATES = ['running', 'delivering', 'done', 'failed', 'skipped', 'undelivered'] as const;
export type RunState = (typeof RUN_STATES)[number];

interface SchedulesTable {
  name: string;
  since: Generated<Date>;
}

interface RunsTable {
  schedule: string;
  due_at: Date;
  scope_key: string;
  job_id: string | null;
  state: RunState;
  edition_id: string | null;
  error: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

interface DeliveriesTable {
  schedule: string;
  due_at: Date;
  scope_key: string;
  destination: string;
  idempotency_key: string;
  state: 'pending' | 'delivered' | 'failed';
  attempts: Generated<number>;
  next_attempt_at: Generated<Date>;
  delivered_at: Date | null;
  last_error: string | null;
}

type RunTables = {
  'querygate_jobs.schedules': SchedulesTable;
  'querygate_jobs.schedule_runs': RunsTable;
  'querygate_jobs.report_deliveries': DeliveriesTable;
};
export type ScheduleTables = JobTables & EditionTables & RunTables;
export type ScheduleStore = Kysely<ScheduleTables>;

/** The job store's handle, with the tables of schedules and of the history beside the jobs. */
export function scheduleStoreOf(jobs: JobStore): ScheduleStore {
  return jobs.withTables<EditionTables & RunTables>();
}
export type RunRow = Selectable<RunsTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type { Json };

const SCHEDULES = 'querygate_jobs.schedules' as const;
const RUNS = 'querygate_jobs.schedule_runs' as const;
const DELIVERIES = 'querygate_jobs.report_deliveries' as const;
const JOBS = 'querygate_jobs.jobs' as const;

/** A stable name for one due run and, with `destination`, one delivery of it: the webhook's idempotency key. */
export function runKey(schedule: string, dueAt: Date, scopeKey: string, destination = ''): string {
  return createHash('sha256')
    .update(`${schedule}\n${dueAt.toISOString()}\n${scopeKey}\n${destination}`)
    .digest('base64url')
    .slice(0, 32);
}

/**
 * When a schedule was first seen (now, the first time any replica sees it), and its newest due run:
 * due times after both are the ones still to run.
 */
export async function scheduleMark(
  db: ScheduleStore,
  name: string,
): Promise<{ since: Date; lastDue: Date | undefined }> {
  await db
    .insertInto(SCHEDULES)
    .values({ name })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db
    .selectFrom(SCHEDULES)
    .leftJoin(RUNS, `${RUNS}.schedule`, `${SCHEDULES}.name`)
    .select([`${SCHEDULES}.since`, (eb) => eb.fn.max(`${RUNS}.due_at`).as('last_due')])
    .where(`${SCHEDULES}.name`, '=', name)
    .groupBy(`${SCHEDULES}.since`)
    .executeTakeFirstOrThrow();
  return { since: row.since, lastDue: row.last_due === null ? undefined : new Date(row.last_due as Date) };
}

export interface DueRun {
  readonly schedule: string;
  readonly dueAt: Date;
  readonly scopeKey: string;
  readonly dataScope: DataScope | undefined;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly ttlSeconds: number;
}

/** What becomes of one scope's run at a due time: it runs, or it is recorded as one that will not. */
export type DueEntry =
  | { readonly run: DueRun }
  | {
      readonly unrun: { readonly schedule: string; readonly dueAt: Date; readonly scopeKey: string };
      readonly state: 'skipped' | 'failed';
      readonly error: string;
    };

/**
 * Claims the runs of one due time, every scope's, in one transaction: each run's row, and the job that
 * runs its report (or the row of a run that will not run: let go by `missed: skip`, or refused before
 * it ran). A run's key is its primary key, so of all the replicas that see it due, one inserts it and
 * the others insert nothing; and a replica that dies half-way claims none of the scopes, so the newest
 * due time claimed always has all of them. Gives the ids of the jobs inserted, left without an owner
 * for the job service to claim.
 */
export async function claimDue(db: ScheduleStore, entries: readonly DueEntry[]): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    const jobs: string[] = [];
    for (const entry of entries) {
      if ('unrun' in entry) {
        const { schedule, dueAt, scopeKey } = entry.unrun;
        await tx
          .insertInto(RUNS)
          .values({
            schedule,
            due_at: dueAt,
            scope_key: scopeKey,
            job_id: null,
            state: entry.state,
            error: entry.error,
          })
          .onConflict((oc) => oc.columns(['schedule', 'due_at', 'scope_key']).doNothing())
          .execute();
        continue;
      }
      const { run } = entry;
      const jobId = `schedule-${runKey(run.schedule, run.dueAt, run.scopeKey)}`;
      const inserted = await tx
        .insertInto(RUNS)
        .values({ schedule: run.schedule, due_at: run.dueAt, scope_key: run.scopeKey, job_id: jobId, state: 'running' })
        .onConflict((oc) => oc.columns(['schedule', 'due_at', 'scope_key']).doNothing())
        .returning('job_id')
        .executeTakeFirst();
      if (!inserted) continue;
      await tx
        .insertInto(JOBS)
        .values({
          id: jobId,
          caller: `schedule:${run.schedule}`,
          data_scope: run.dataScope === undefined ? null : JSON.stringify(run.dataScope),
          subject: null,
          client_id: null,
          tool: run.tool,
          arguments: JSON.stringify(run.args),
          state: 'pending',
          attempts: 0,
          owner: null,
          heartbeat_at: null,
          expires_at: sql<Date>`now() + make_interval(secs => ${run.ttlSeconds})`,
        })
        .execute();
      jobs.push(jobId);
    }
    return jobs;
  });
}

/** Runs whose job has ended (or is gone), for a replica to settle: keep the edition, queue the deliveries. */
export async function runsToSettle(db: ScheduleStore): Promise<RunRow[]> {
  return db
    .selectFrom(RUNS)
    .leftJoin(JOBS, `${JOBS}.id`, `${RUNS}.job_id`)
    .selectAll(RUNS)
    .where(`${RUNS}.state`, '=', 'running')
    .where((eb) =>
      eb.or([eb(`${JOBS}.id`, 'is', null), eb(`${JOBS}.state`, 'in', ['completed', 'failed', 'cancelled'])]),
    )
    .limit(20)
    .execute();
}

/** The run locked for its settling, with its job's ending; undefined when another replica holds it or settled it. */
export async function lockRunToSettle(
  tx: Transaction<ScheduleTables>,
  run: RunRow,
): Promise<
  | {
      state: string | null;
      result: unknown;
      error: { message: string } | null;
      dataScope: DataScope | null;
      args: Record<string, unknown> | null;
    }
  | undefined
> {
  const locked = await tx
    .selectFrom(RUNS)
    .select('state')
    .where('schedule', '=', run.schedule)
    .where('due_at', '=', run.due_at)
    .where('scope_key', '=', run.scope_key)
    .where('state', '=', 'running')
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
  if (!locked) return undefined;
  const job =
    run.job_id === null
      ? undefined
      : await tx.selectFrom(JOBS).selectAll().where('id', '=', run.job_id).executeTakeFirst();
  return {
    state: job?.state ?? null,
    result: job?.result ?? null,
    error: job?.error ?? null,
    dataScope: job?.data_scope ?? null,
    args: job?.arguments ?? null,
  };
}

export async function setRunState(
  tx: Kysely<ScheduleTables>,
  run: Pick<RunRow, 'schedule' | 'due_at' | 'scope_key'>,
  set: { readonly state: RunState; readonly editionId?: string; readonly error?: string },
): Promise<void> {
  await tx
    .updateTable(RUNS)
    .set({
      state: set.state,
      ...(set.editionId === undefined ? {} : { edition_id: set.editionId }),
      ...(set.error === undefined ? {} : { error: set.error }),
      updated_at: sql<Date>`now()`,
    })
    .where('schedule', '=', run.schedule)
    .where('due_at', '=', run.due_at)
    .where('scope_key', '=', run.scope_key)
    .execute();
}

/** Queues a run's deliveries, one per destination, each with its idempotency key. */
export async function queueDeliveries(
  tx: Kysely<ScheduleTables>,
  run: Pick<RunRow, 'schedule' | 'due_at' | 'scope_key'>,
  destinations: readonly string[],
): Promise<void> {
  if (destinations.length === 0) return;
  await tx
    .insertInto(DELIVERIES)
    .values(
      destinations.map((destination) => ({
        schedule: run.schedule,
        due_at: run.due_at,
        scope_key: run.scope_key,
        destination,
        idempotency_key: runKey(run.schedule, run.due_at, run.scope_key, destination),
        state: 'pending' as const,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/**
 * Claims one delivery that is due, for the transaction's length: FOR UPDATE SKIP LOCKED, so that
 * another replica passes over it while it is being sent. The transaction that claims it records its
 * end, so a delivery recorded as sent was sent, and one whose replica died is claimed again.
 */
export async function claimDelivery(
  tx: Transaction<ScheduleTables>,
): Promise<(DeliveryRow & { edition_id: string | null }) | undefined> {
  // Sending may take longer than the job role's idle bound allows a transaction to wait.
  await sql`set local idle_in_transaction_session_timeout = '120s'`.execute(tx);
  // Aliased: FOR UPDATE OF names the delivery row alone, and PostgreSQL takes no schema there.
  return tx
    .selectFrom(`${DELIVERIES} as d`)
    .innerJoin(`${RUNS} as r`, (join) =>
      join
        .onRef('r.schedule', '=', 'd.schedule')
        .onRef('r.due_at', '=', 'd.due_at')
        .onRef('r.scope_key', '=', 'd.scope_key'),
    )
    .selectAll('d')
    .select('r.edition_id')
    .where('d.state', '=', 'pending')
    .where('d.next_attempt_at', '<=', sql<Date>`now()`)
    .orderBy('d.next_attempt_at')
    .limit(1)
    .forUpdate('d')
    .skipLocked()
    .executeTakeFirst();
}

export async function endDelivery(
  tx: Kysely<ScheduleTables>,
  delivery: DeliveryRow,
  end:
    | { readonly delivered: true }
    | { readonly delivered: false; readonly error: string; readonly retryInSeconds: number | undefined },
): Promise<void> {
  await tx
    .updateTable(DELIVERIES)
    .set(
      end.delivered
        ? { state: 'delivered', attempts: sql<number>`attempts + 1`, delivered_at: sql<Date>`now()`, last_error: null }
        : {
            state: end.retryInSeconds === undefined ? 'failed' : 'pending',
            attempts: sql<number>`attempts + 1`,
            last_error: end.error,
            next_attempt_at: sql<Date>`now() + make_interval(secs => ${end.retryInSeconds ?? 0})`,
          },
    )
    .where('idempotency_key', '=', delivery.idempotency_key)
    .execute();
  // The run ends with its last delivery: done, or undelivered when any failed for good.
  const open = await tx
    .selectFrom(DELIVERIES)
    .select((eb) => [
      eb.fn.countAll<string>().filterWhere('state', '=', 'pending').as('pending'),
      eb.fn.countAll<string>().filterWhere('state', '=', 'failed').as('failed'),
    ])
    .where('schedule', '=', delivery.schedule)
    .where('due_at', '=', delivery.due_at)
    .where('scope_key', '=', delivery.scope_key)
    .executeTakeFirstOrThrow();
  if (Number(open.pending) === 0) {
    await setRunState(tx, delivery, { state: Number(open.failed) > 0 ? 'undelivered' : 'done' });
  }
}

/** Each schedule's runs of its newest due time (one per scope), for `report schedule list`. */
export async function latestRuns(db: ScheduleStore): Promise<RunRow[]> {
  const newest = db
    .selectFrom(RUNS)
    .select(['schedule', (eb) => eb.fn.max('due_at').as('due_at')])
    .groupBy('schedule');
  return db
    .selectFrom(RUNS)
    .innerJoin(newest.as('newest'), (join) =>
      join.onRef('newest.schedule', '=', `${RUNS}.schedule`).onRef('newest.due_at', '=', `${RUNS}.due_at`),
    )
    .selectAll(RUNS)
    .orderBy(`${RUNS}.schedule`)
    .orderBy(`${RUNS}.scope_key`)
    .execute();
}

/** A run's deliveries, for `report schedule list` and the tests. */
export async function deliveriesOf(
  db: ScheduleStore,
  run: Pick<RunRow, 'schedule' | 'due_at' | 'scope_key'>,
): Promise<DeliveryRow[]> {
  return db
    .selectFrom(DELIVERIES)
    .selectAll()
    .where('schedule', '=', run.schedule)
    .where('due_at', '=', run.due_at)
    .where('scope_key', '=', run.scope_key)
    .orderBy('destination')
    .execute();
}
