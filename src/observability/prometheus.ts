/**
 * What /metrics serves, in Prometheus' text format: tool calls counted from their audit entries, the
 * HTTP edge's refusals and failed authentications as the transport tells them, and the reader pool
 * and the job store read at scrape time. Each server has a registry of its own, never prom-client's
 * global one, so that several servers can run in one process. prom-client is loaded by the first
 * createMetrics: a server without /metrics (over stdio) does not hold it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuditEntry, AuditLog } from './audit.js';
import { countJobsByState, JOB_STATES, type JobState, type JobStore } from '../jobs/store.js';
import type { Logger } from '../lib/logger.js';

/** Why the HTTP edge refused a request before it reached MCP: the `reason` label of querygate_refusals_total. */
const HTTP_REFUSALS = [
  'http_rate_limited',
  'http_body_too_large',
  'http_host_not_allowed',
  'http_origin_not_allowed',
  'http_unauthorized',
  'http_forbidden',
  'http_auth_throttled',
  'http_auth_unavailable',
] as const;
export type HttpRefusal = (typeof HTTP_REFUSALS)[number];
/** Tool calls the limits refused (audit outcome `refused`), by their error code. */
const CALL_REFUSALS = ['call_rate_limited', 'call_busy'] as const;

export interface Metrics {
  /** Counts a tool call from its audit entry (see countedAudit). */
  recordCall(entry: AuditEntry): void;
  refusal(reason: HttpRefusal): void;
  /** A request whose credentials were refused, by why (snake_case, never anything of the token). */
  authFailure(reason: string): void;
  /** Whether a scrape's Authorization header carries the metrics token; any does when none is set. */
  authorizes(authorization: string | undefined): boolean;
  /** Whether a metrics token is set: a scrape is then an authentication, throttled and audited as one. */
  readonly tokenRequired: boolean;
  /** Every series, with the pool and the job store read now. */
  scrape(): Promise<{ readonly contentType: string; readonly text: string }>;
}

/** The pg Pool's counts: `totalCount` is every open connection, idle or checked out. */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

export interface MetricsOptions {
  readonly pool: PoolCounts;
  /** The job store, read as the job role; no job series without one. */
  readonly jobs?: JobStore;
  /** A hot standby's replay lag in seconds (undefined on a primary, or when it does not answer: no sample). */
  readonly replicaLag?: () => Promise<number | undefined>;
  readonly token?: string;
  readonly logger: Logger;
}

/** From a millisecond answer to a report of a minute; the statement timeout is 5 s by default. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Calls that ran, whose time says how long an answer takes; refusals and rejections are counted but not timed. */
const TIMED: ReadonlySet<AuditEntry['outcome']> = new Set(['ok', 'failed', 'cancelled']);

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

export async function createMetrics(options: MetricsOptions): Promise<Metrics> {
  const { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } = await import('prom-client');
  const registry = new Registry();
  const registers = [registry];

  const calls = new Counter({
    name: 'querygate_tool_calls_total',
    help: 'Tool calls by tool and outcome (ok, rejected, refused, failed, cancelled, unknown_tool), one per audit line.',
    labelNames: ['tool', 'outcome'],
    registers,
  });
  const durations = new Histogram({
    name: 'querygate_tool_call_duration_seconds',
    help: 'Time of the tool calls that ran (outcome ok, failed or cancelled), by tool.',
    labelNames: ['tool'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const refusals = new Counter({
    name: 'querygate_refusals_total',
    help: 'Refusals by reason: call_rate_limited and call_busy for tool calls, http_* for requests refused at the HTTP edge.',
    labelNames: ['reason'],
    registers,
  });
  // Every reason from the start, at zero: a rate over a series that appears with its first refusal misses it.
  for (const reason of [...CALL_REFUSALS, ...HTTP_REFUSALS]) refusals.inc({ reason }, 0);
  const authFailures = new Counter({
    name: 'querygate_auth_failures_total',
    help: 'Requests whose credentials were refused, by reason.',
    labelNames: ['reason'],
    registers,
  });
  const { pool } = options;
  // Set together just before each scrape, so that in use and idle add up to the open connections.
  const poolConnections = new Gauge({
    name: 'querygate_reader_pool_connections',
    help: "The reader pool's open connections, by state (in_use, idle).",
    labelNames: ['state'],
    registers,
  });
  const poolOpen = new Gauge({
    name: 'querygate_reader_pool_open_connections',
    help: "The reader pool's open connections.",
    registers,
  });
  const poolWaiting = new Gauge({
    name: 'querygate_reader_pool_waiting_requests',
    help: 'Requests waiting for a reader connection.',
    registers,
  });

  if (options.replicaLag) {
    const replicaLag = options.replicaLag;
    new Gauge({
      name: 'querygate_replica_lag_seconds',
      help: "How far the reader's hot standby is behind its primary (see QUERYGATE_MAX_REPLICA_LAG_SECONDS); absent on a primary.",
      registers,
      async collect() {
        this.reset();
        const lag = await replicaLag();
        if (lag !== undefined) this.set(lag);
      },
    });
  }

  if (options.jobs) {
    const jobs = options.jobs;
    // At most one query a second, however often /metrics is scraped: it may be open to anyone on the port.
    let last: { at: number; counts: Promise<Record<JobState, number>> } | undefined;
    const countJobs = (): Promise<Record<JobState, number>> => {
      if (!last || Date.now() - last.at >= 1000) last = { at: Date.now(), counts: countJobsByState(jobs) };
      return last.counts;
    };
    new Gauge({
      name: 'querygate_jobs',
      help: 'Jobs in the job store (every replica shares it), by state; absent when the job store does not answer.',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        try {
          const counts = await countJobs();
          for (const state of JOB_STATES) this.set({ state }, counts[state]);
        } catch (err) {
          // The other series are still worth a scrape; the missing one tells the store did not answer.
          options.logger.warn('metrics: could not count the jobs by state', {
            message: err instanceof Error ? err.message : String(err),
          });
        }
      },
    });
  }

  const token = options.token === undefined ? undefined : sha256(options.token);
  let processMetrics = false;
  return {
    recordCall: (entry) => {
      // An unknown tool's name is whatever a client sent: it gets no series of its own.
      const tool = entry.outcome === 'unknown_tool' ? {} : { tool: entry.tool };
      calls.inc({ ...tool, outcome: entry.outcome });
      if (TIMED.has(entry.outcome)) durations.observe({ tool: entry.tool }, entry.duration_ms / 1000);
      if (entry.outcome === 'refused') refusals.inc({ reason: `call_${entry.error_code}` });
    },
    refusal: (reason) => refusals.inc({ reason }),
    authFailure: (reason) => authFailures.inc({ reason }),
    tokenRequired: token !== undefined,
    authorizes: (authorization) => {
      if (token === undefined) return true;
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      return match !== null && timingSafeEqual(sha256(match[1]!), token);
    },
    scrape: async () => {
      // Only once scraped: their event loop monitor then wakes the process every 10 ms, which a
      // server nobody scrapes (over stdio) need not pay for.
      if (!processMetrics) collectDefaultMetrics({ register: registry, prefix: 'querygate_' });
      processMetrics = true;
      const { totalCount, idleCount, waitingCount } = pool;
      poolConnections.set({ state: 'in_use' }, totalCount - idleCount);
      poolConnections.set({ state: 'idle' }, idleCount);
      poolOpen.set(totalCount);
      poolWaiting.set(waitingCount);
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

/** The audit log, each entry also counted: the registry writes audit lines and needs to know no more. */
export function countedAudit(log: AuditLog, metrics: Metrics): AuditLog {
  return {
    write: (entry) => {
      log.write(entry);
      metrics.recordCall(entry);
    },
    ...(log.writeAuthFailure ? { writeAuthFailure: (entry) => log.writeAuthFailure!(entry) } : {}),
    close: () => log.close(),
  };
}
