/**
 * How far a hot standby's data is behind its primary. A standby that has replayed all the WAL it
 * received is as fresh as its clock says; one with WAL left to replay (paused, or slow) holds the data
 * of its last replayed commit, and is behind by the time since that commit. The bound is an upper
 * one: after an idle spell the last commit is old, so a standby that just fell behind may be said
 * further behind than it is, never less.
 */
import type pg from 'pg';

/** One row: whether the server is in recovery, its clock, its last replayed commit and whether replay has caught up. */
export const FRESHNESS_SQL = `select pg_is_in_recovery() as standby,
  extract(epoch from clock_timestamp())::float8 as now,
  extract(epoch from pg_last_xact_replay_timestamp())::float8 as replayed,
  coalesce(pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn(), false) as caught_up`;

/** A standby's freshness, as an answer or /readyz tells it. */
export interface ReplicaFreshness {
  /** Every commit before this instant (ISO 8601) is in the data; undefined when the standby replayed no commit yet. */
  readonly asOf?: string;
  /** How far behind the primary, in seconds (Infinity: unknown, and so unbounded). */
  readonly lagSeconds: number;
  /** Behind by more than the operator's bound. */
  readonly stale: boolean;
}

/** Reads the server's freshness on `client`; undefined on a primary. */
export async function readFreshness(
  client: pg.ClientBase,
  maxLagSeconds: number | undefined,
): Promise<ReplicaFreshness | undefined> {
  const { rows } = await client.query<{ standby: boolean; now: number; replayed: number | null; caught_up: boolean }>(
    FRESHNESS_SQL,
  );
  const row = rows[0]!;
  if (!row.standby) return undefined;
  const asOfEpoch = row.caught_up ? row.now : row.replayed;
  const lagSeconds = row.caught_up ? 0 : row.replayed === null ? Infinity : Math.max(0, row.now - row.replayed);
  return {
    ...(asOfEpoch === null ? {} : { asOf: new Date(asOfEpoch * 1000).toISOString() }),
    lagSeconds,
    stale: maxLagSeconds !== undefined && lagSeconds > maxLagSeconds,
  };
}
