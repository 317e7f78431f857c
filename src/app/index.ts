/**
 * Assembles a running querygate from its configuration: the registry served, the database (given or
 * embedded), the reader pool, admission limits and the audit log, the start-up safety check that
 * gates readiness, the probes, the job service and the drain. Each part is a file of src/app/;
 * startApp is their list, in the order they start.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createAuditLog } from '../observability/audit.js';
import type { Grants } from '../auth/index.js';
import type { Config } from '../config.js';
import type { ConfigFile, OAuthSettings } from '../config-file/index.js';
import { contentOf } from '../content/index.js';
import { connectReader, redactUrl } from '../db/connect.js';
import { readerScopeOf } from '../db/doctor/index.js';
import { createSubscriptionLimits } from '../lib/limits.js';
import { createTokenizer } from '../lib/masking.js';
import type { Logger } from '../lib/logger.js';
import { countedAudit, createMetrics, type Metrics } from '../observability/prometheus.js';
import type { Pack } from '../pack.js';
import { openJobStore, type JobStore } from '../jobs/store.js';
import { describeServer, type ServerDeps } from '../server.js';
import { callLimitsOf } from './call-limits.js';
import { openDatabase } from './database.js';
import { createDrain, STOP_GRACE_MS } from './drain.js';
import { jobServiceOf } from './job-service.js';
import { createProbes } from './probes.js';
import { createRoleGate } from './role-gate.js';
import type { Scheduler } from '../schedules/scheduler.js';
import { schedulerOf } from './schedules.js';
import { servedRegistryOf } from './served-registry.js';

export { openDatabase, type OpenDatabase } from './database.js';
export { STOP_GRACE_MS } from './drain.js';
export { MAX_JOB_ATTEMPTS } from './job-service.js';
export { PROBE_TIMEOUT_MS } from './probes.js';

export interface App {
  readonly deps: ServerDeps;
  readonly packs: readonly Pack[];
  /** The job store's handle (undefined without one): the report command keeps its editions there. */
  readonly jobStore: JobStore | undefined;
  /** Key of legacy HTTP session ids, derived from the token key so that replicas share it. */
  readonly sessionKey: Uint8Array;
  /**
   * For /readyz: the role was checked and the database answers now, on a connection of the probe's
   * own (at most one probe a second, each answered within PROBE_TIMEOUT_MS).
   */
  probeReady(): Promise<boolean>;
  /** For /readyz, beside readiness: whether the job store answers now (undefined without one). */
  probeJobStore(): Promise<'ok' | 'unavailable' | undefined>;
  /** For /readyz and /metrics: a hot standby's replay lag in seconds, as the probe last found it (undefined on a primary). */
  probeReplicaLag(): Promise<number | undefined>;
  /**
   * For /metrics: the calls, counted from the audit log, with the reader pool and the job store.
   * Undefined unless asked for (AppOptions.metrics): over stdio nothing could scrape it.
   */
  readonly metrics: Metrics | undefined;
  /**
   * Waits for the calls in flight, up to QUERYGATE_SHUTDOWN_TIMEOUT_MS; then cancels those still
   * running, which end with `shutting_down`, and gives them STOP_GRACE_MS to let go of their connections.
   */
  drain(): Promise<void>;
  /** Drains, then closes the pool, the probe connection, the audit log and the embedded database. */
  stop(): Promise<void>;
  /** The toolsets and scopes of the configuration file in force, for the tokens that name them. */
  readonly grants: Grants;
  /** The OAuth settings of the configuration file, if it has them. */
  readonly oauth: OAuthSettings | undefined;
  /** Key of the hash that stands for OAuth subjects, derived from the token key so that replicas share it. */
  readonly subjectKey: Uint8Array;
}

export interface AppOptions {
  /** The packs to serve, loaded (see packs.ts). */
  readonly packs: readonly Pack[];
  /** The `path` each pack loaded from the configuration file was given there, by pack name. */
  readonly packPaths?: ReadonlyMap<string, string>;
  /** The configuration file as read when the packs were loaded. */
  readonly configFile?: ConfigFile;
  readonly allowUnsafeRole: boolean;
  /** Whether to count calls for /metrics (serving over HTTP); prom-client is loaded only then. */
  readonly metrics?: boolean;
  /** Called when the database, reachable at last, turns out to be unsafe: the server must not go on. */
  readonly onFatal: (error: Error) => void;
  /** Aborted by a stop signal during start-up: start-up then stops what it started and throws. */
  readonly signal?: AbortSignal;
  /** Whether to run the configuration file's schedules (a serving replica, not a one-off command). */
  readonly schedules?: boolean;
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

export async function startApp(config: Config, logger: Logger, options: AppOptions): Promise<App> {
  const { packs } = options;
  // Before the database: a pack whose documentation or prompts are broken stops the server at once.
  const content = contentOf(packs);
  const { live, tracing, registry } = await servedRegistryOf(config, packs, options, logger);
  const scope = readerScopeOf(packs);
  const audit = createAuditLog(config.auditLog);
  const database = await openDatabase(config, packs, logger, options.signal);
  const readerUrl = database.readerUrl;
  let tokenKey = live.tokenKey ?? config.tokenKey ?? database.tokenKey;
  if (tokenKey === undefined) {
    logger.warn('QUERYGATE_TOKEN_KEY is not set: the tokens that stand for internal ids change on every restart');
    tokenKey = randomBytes(32).toString('base64url');
  }

  const reader = connectReader(readerUrl, config, logger);
  const jobStore = database.jobsUrl === undefined ? undefined : openJobStore(database.jobsUrl);
  const limits = callLimitsOf(config, jobStore, logger);

  const target = redactUrl(readerUrl);
  const gate = createRoleGate(
    {
      readerUrl,
      target,
      jobsUrl: database.jobsUrl,
      scope,
      reader,
      timeZone: live.ctx.timeZone,
      allowUnsafeRole: options.allowUnsafeRole,
      onFatal: options.onFatal,
    },
    logger,
  );
  await gate.start();

  logger.info('serving', {
    database: target,
    packs: packs.map((p) => p.name),
    time_zone: live.ctx.timeZone,
    tools: registry.tools.length,
    ready: gate.ready(),
  });
  live.watch();
  const probes = createProbes(config, database, gate.ready, logger);

  const metrics = options.metrics
    ? await createMetrics({
        pool: reader.pool,
        replicaLag: probes.probeReplicaLag,
        ...(jobStore ? { jobs: jobStore } : {}),
        ...(config.metricsToken === undefined ? {} : { token: config.metricsToken }),
        logger,
      })
    : undefined;
  // Aborted at the shutdown deadline: the registry cancels every call still running.
  const stopping = new AbortController();
  const deps: ServerDeps = {
    registry,
    identity: describeServer(packs),
    content,
    db: tracing ? tracing.database(reader) : reader,
    tokenize: createTokenizer(tokenKey),
    logger,
    audit: metrics ? countedAudit(audit, metrics) : audit,
    limits,
    subscriptions: createSubscriptionLimits({
      perCaller: config.maxSubscriptionsPerCaller,
      total: config.maxSubscriptions,
      maxLifetimeMs: config.subscriptionLifetimeSeconds * 1000,
    }),
    ctx: live.ctx,
    isReady: gate.ready,
    unready: gate.unready,
    shutdown: stopping.signal,
  };
  const jobs = jobServiceOf(config, { jobStore, jobsUrl: database.jobsUrl }, deps, gate.ready, logger);
  const served: ServerDeps = jobs === undefined ? deps : { ...deps, jobs };
  let scheduler: Scheduler | undefined;
  try {
    scheduler = options.schedules
      ? schedulerOf(
          config,
          options.configFile,
          packs.flatMap((p) => p.reports ?? []).filter((r) => registry.tools.some((t) => t.name === r.name)),
          { jobStore, jobs, timeZone: live.ctx.timeZone, dimensions: registry.dataScopeDimensions },
          logger,
        )
      : undefined;
  } catch (err) {
    gate.stop();
    await jobs?.close();
    await reader.close().catch(() => undefined);
    await probes.close();
    await database.stop().catch(() => undefined);
    throw err;
  }
  const drain = createDrain(
    {
      limits,
      jobs,
      stopping,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
      beforeDrain: async () => {
        gate.stop();
        await scheduler?.close();
      },
    },
    logger,
  );
  return {
    packs,
    probeReady: probes.probeReady,
    probeJobStore: probes.probeJobStore,
    probeReplicaLag: probes.probeReplicaLag,
    metrics,
    drain,
    grants: { toolsets: live.toolsets, scopes: live.scopes },
    oauth: live.current().oauth,
    subjectKey: createHmac('sha256', tokenKey).update('querygate subjects').digest(),
    sessionKey: createHmac('sha256', tokenKey).update('querygate mcp session ids').digest(),
    deps: served,
    jobStore,
    stop: async () => {
      live.close();
      await drain();
      // pool.end() waits for connections still checked out; a stalled database must not hold the exit.
      await Promise.race([reader.close().catch(() => undefined), delay(STOP_GRACE_MS)]);
      await probes.close();
      // The last spans go out, but a collector that does not answer must not hold the exit.
      await Promise.race([tracing?.shutdown().catch(() => undefined), delay(STOP_GRACE_MS)]);
      audit.close();
      await database.stop().catch(() => undefined);
    },
  };
}
