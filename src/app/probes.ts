import type { Config } from '../config.js';
import { createReadinessProbe } from '../db/readiness.js';
import type { Logger } from '../lib/logger.js';

/** The longest a readiness probe takes, connecting included: Kubernetes' default probe timeout is 1 s. */
export const PROBE_TIMEOUT_MS = 1000;

/** One check at a time, its answer kept for a second: /readyz cannot be used to load the database. */
function atMostOnceASecond(check: () => Promise<boolean>): () => Promise<boolean> {
  let last = { at: 0, ok: false };
  let running: Promise<boolean> | undefined;
  return async () => {
    if (Date.now() - last.at < 1000) return last.ok;
    running ??= check().then((ok) => {
      last = { at: Date.now(), ok };
      running = undefined;
      return ok;
    });
    return running;
  };
}

/** What /readyz and /metrics ask, each on a connection of its own. */
export interface Probes {
  probeReady(): Promise<boolean>;
  probeJobStore(): Promise<'ok' | 'unavailable' | undefined>;
  probeReplicaLag(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * One probe at a time, at most one a second, on one connection of its own: /readyz is
 * unauthenticated and must not take connections from tool calls, nor wait behind them.
 */
export function createProbes(
  config: Config,
  urls: { readonly readerUrl: string; readonly jobsUrl: string | undefined },
  ready: () => boolean,
  logger: Logger,
): Probes {
  const probe = createReadinessProbe(urls.readerUrl, { timeoutMs: PROBE_TIMEOUT_MS }, logger);
  const checkReader = atMostOnceASecond(() => probe.check());
  // A standby further behind than QUERYGATE_MAX_REPLICA_LAG_SECONDS is unready: its answers miss recent data.
  const withinLag = (): boolean => {
    const lag = probe.lagSeconds();
    return config.maxReplicaLagSeconds === undefined || lag === undefined || lag <= config.maxReplicaLagSeconds;
  };
  const probeReady = async (): Promise<boolean> => ready() && (await checkReader()) && withinLag();
  const probeReplicaLag = async (): Promise<number | undefined> =>
    (await checkReader()) ? probe.lagSeconds() : undefined;
  // The job store is probed the same way, as the job role: reported beside readiness, not part of
  // it, since every replica shares it and the other tools serve without it.
  const jobsProbe =
    urls.jobsUrl === undefined
      ? undefined
      : createReadinessProbe(urls.jobsUrl, { timeoutMs: PROBE_TIMEOUT_MS }, logger);
  const checkJobs = jobsProbe && atMostOnceASecond(() => jobsProbe.check());
  const probeJobStore = async (): Promise<'ok' | 'unavailable' | undefined> =>
    checkJobs && ((await checkJobs()) ? 'ok' : 'unavailable');
  return {
    probeReady,
    probeJobStore,
    probeReplicaLag,
    close: async () => {
      await probe.close();
      await jobsProbe?.close();
    },
  };
}
