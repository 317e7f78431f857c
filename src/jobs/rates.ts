/**
 * Call rates shared by every replica, kept in the job store: one row per caller holding its
 * theoretical arrival time (GCRA, the token bucket's exact equivalent): a call is let through when
 * that time is at most the bucket's depth ahead of now, and moves it one interval on. One statement
 * a call, with the row locked for its duration, so replicas deciding at once still count every call.
 * Times are the database's. When the job store cannot be reached the replica falls back on its own
 * bucket, so a database hiccup lets each replica its full rate rather than stopping every call.
 */
import { sql } from 'kysely';
import type { RateLimiter, TokenBucket } from '../lib/limits.js';
import type { Logger } from '../lib/logger.js';
import type { JobStore } from './store.js';

/** Rows whose time has passed by this much hold a full bucket, the same as no row: they are deleted. */
const PRUNE_AFTER = '10 minutes';
const PRUNE_EVERY_MS = 60_000;
const WARN_EVERY_MS = 60_000;

export function createSharedRates(
  store: JobStore,
  options: { readonly perMinute: number; readonly fallback: TokenBucket; readonly logger: Logger },
): RateLimiter {
  /** Milliseconds between two calls at the steady rate, and how far ahead a full burst may run. */
  const interval = 60_000 / options.perMinute;
  const depth = interval * (options.perMinute - 1);
  let lastPrune = 0;
  let lastWarning = 0;
  const fellBack = (err: unknown): void => {
    if (Date.now() - lastWarning < WARN_EVERY_MS) return;
    lastWarning = Date.now();
    options.logger.warn('shared rate limits unavailable: this replica counts calls on its own', {
      message: (err as Error).message,
    });
  };
  const prune = (): void => {
    if (Date.now() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = Date.now();
    void sql`delete from querygate_jobs.rate_limits where tat < now() - ${PRUNE_AFTER}::interval`
      .execute(store)
      .catch(() => undefined);
  };
  return {
    take: async (key) => {
      try {
        // The CTE's select sees the row as it was before the statement: on a refusal, how far ahead it is.
        const { rows } = await sql<{ allowed: boolean; ahead_ms: number | null }>`
          with taken as (
            insert into querygate_jobs.rate_limits as r (key, tat)
            values (${key}, clock_timestamp() + ${interval} * interval '1 millisecond')
            on conflict (key) do update
              set tat = greatest(r.tat, clock_timestamp()) + ${interval} * interval '1 millisecond'
              where greatest(r.tat, clock_timestamp()) <= clock_timestamp() + ${depth} * interval '1 millisecond'
            returning 1
          )
          select exists (select from taken) as allowed,
                 (select extract(epoch from (tat - clock_timestamp())) * 1000
                    from querygate_jobs.rate_limits where key = ${key})::float8 as ahead_ms`.execute(store);
        prune();
        const { allowed, ahead_ms } = rows[0]!;
        if (allowed) return 0;
        return Math.max(1, Math.ceil(((ahead_ms ?? 0) - depth) / 1000));
      } catch (err) {
        fellBack(err);
        return options.fallback.take(key);
      }
    },
    refund: async (key) => {
      try {
        await sql`update querygate_jobs.rate_limits set tat = tat - ${interval} * interval '1 millisecond'
                  where key = ${key}`.execute(store);
      } catch (err) {
        fellBack(err);
        options.fallback.refund(key);
      }
    },
  };
}
