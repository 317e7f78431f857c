/**
 * The readiness probe's own database connection. It is kept apart from the reader pool so that a
 * pool full of long calls does not make a busy replica look unready, and it is bounded in time so
 * that a stalled database makes /readyz answer "not ready" instead of hanging the prober.
 */
import pg from 'pg';
import type { Logger } from '../lib/logger.js';
import { readFreshness } from './replica-lag.js';

export interface ReadinessProbe {
  /** True when the database answered on the probe connection within the time limit. */
  check(): Promise<boolean>;
  /** A hot standby's replay lag in seconds, as the last check that answered found it; undefined on a primary. */
  lagSeconds(): number | undefined;
  close(): Promise<void>;
}

export interface ReadinessOptions {
  /** Longest a check may take, connecting included; also the probe's statement timeout. */
  readonly timeoutMs: number;
}

/**
 * One connection, opened on the first check, reused while it works, and dropped (to be opened again
 * by the next check) when it fails or misses the time limit.
 */
export function createReadinessProbe(url: string, options: ReadinessOptions, logger: Logger): ReadinessProbe {
  let client: pg.Client | undefined;
  let closed = false;
  let lag: number | undefined;

  const drop = (broken: pg.Client): void => {
    if (client === broken) client = undefined;
    // end() destroys the socket when a query is still waiting for its answer, so a stalled
    // connection is not left open; it is not awaited, since a stalled peer would never confirm.
    broken.end().catch(() => undefined);
  };

  const open = async (): Promise<pg.Client> => {
    const fresh = new pg.Client({
      connectionString: url,
      application_name: 'querygate-probe',
      connectionTimeoutMillis: options.timeoutMs,
      statement_timeout: options.timeoutMs,
      idle_in_transaction_session_timeout: options.timeoutMs,
      options: '-c default_transaction_read_only=on',
    });
    // A connection the database closes while idle (a restart) is replaced on the next check.
    fresh.on('error', (err) => {
      logger.debug('readiness probe connection lost', { message: err.message });
      drop(fresh);
    });
    client = fresh;
    await fresh.connect();
    return fresh;
  };

  const probe = async (): Promise<boolean> => {
    const current = client ?? (await open());
    try {
      lag = (await readFreshness(current, undefined))?.lagSeconds;
      return true;
    } catch (err) {
      drop(current);
      throw err;
    }
  };

  return {
    check: async () => {
      if (closed) return false;
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), options.timeoutMs);
      });
      const answered = probe().catch((err: unknown) => {
        logger.debug('readiness probe failed', { message: err instanceof Error ? err.message : String(err) });
        return false;
      });
      const ok = await Promise.race([answered, deadline]);
      clearTimeout(timer);
      if (!ok && client) drop(client);
      return ok;
    },
    lagSeconds: () => lag,
    close: async () => {
      closed = true;
      if (client) drop(client);
    },
  };
}
