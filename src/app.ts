/**
 * Assembles a running querygate from its configuration: the database (given or embedded), the reader
 * pool, the start-up safety check and readiness, admission limits and the audit log.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createAuditLog } from './audit.js';
import type { Grants } from './auth/index.js';
import type { Config } from './config.js';
import type { ConfigFile, OAuthSettings } from './config-file.js';
import { contentOf } from './content.js';
import { connectReader, redactUrl } from './db/connect.js';
import {
  checkJobRoleSafety,
  checkReaderSafety,
  formatReport,
  JOB_ROLE_CHECK,
  readerScopeOf,
  type SafetyCheck,
} from './db/doctor/index.js';
import { createReadinessProbe } from './db/readiness.js';
import { zoneRulesAgreement, type ZoneRulesAgreement } from './db/zone-rules.js';
import { ConfigError, classifyDatabaseError } from './errors.js';
import { createCallLimits, createSubscriptionLimits, createTokenBuckets } from './limits.js';
import { yesterdayUtc } from './lib/date-range.js';
import { createTokenizer } from './lib/masking.js';
import { openLiveConfig } from './live-config.js';
import { hiddenByDataScope } from './registry/access.js';
import type { Logger } from './logger.js';
import { countedAudit, createMetrics, type Metrics } from './metrics.js';
import type { Pack } from './pack.js';
import { startJobService } from './jobs/service.js';
import { runThrough } from './registry/jobs.js';
import { createSharedRates } from './jobs/rates.js';
import { VERSION } from './protocol/identity.js';
import { createTracing } from './tracing.js';
import { openJobStore } from './jobs/store.js';
import { describeServer, type ServerDeps } from './server.js';

/** YYYY-MM-DD of the day a year before an instant: the zone rules are compared from there for two years. */
function aYearAgo(now: Date): string {
  return new Date(now.getTime() - 365 * 86_400_000).toISOString().slice(0, 10);
}

/** Tells the operator where PostgreSQL's zone rules differ from the ones querygate cuts days with. */
function reportZoneRules(timeZone: string, agreement: ZoneRulesAgreement, logger: Logger): void {
  const nodeZoneData = process.versions.tz ?? 'unknown';
  if (!agreement.known) {
    logger.info('the database does not know the reporting time zone; querygate does not need it', {
      time_zone: timeZone,
    });
  } else if (agreement.disagreeing.length > 0) {
    logger.warn(
      'Node and the database disagree on when some days start in the reporting time zone; querygate uses Node\'s rules, so a check with "at time zone" in psql may differ on those days (update the older of the two)',
      {
        time_zone: timeZone,
        node_zone_data: nodeZoneData,
        days: agreement.disagreeing.length,
        first: agreement.disagreeing[0],
        last: agreement.disagreeing.at(-1),
      },
    );
  }
}

export interface App {
  readonly deps: ServerDeps;
  readonly packs: readonly Pack[];
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
  /** For /metrics: the calls, counted from the audit log, with the reader pool and the job store. */
  readonly metrics: Metrics;
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

/** The longest a readiness probe takes, connecting included: Kubernetes' default probe timeout is 1 s. */
export const PROBE_TIMEOUT_MS = 1000;
/** Runs a job may have: a job whose replicas stopped this many times before it ended is failed. */
export const MAX_JOB_ATTEMPTS = 3;
/** After the shutdown timeout: how long cancelled calls get to end, and the pool to close. */
export const STOP_GRACE_MS = 1000;

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

export interface OpenDatabase {
  readonly readerUrl: string;
  /** The job store's connection string (the job role); undefined when none is configured. */
  readonly jobsUrl: string | undefined;
  /** The embedded database's own token key, made with its data folder. */
  readonly tokenKey: string | undefined;
  stop(): Promise<void>;
}

/**
 * The reader's database: DATABASE_URL, or the embedded default, created with the packs' migrations
 * and seeded with their demo data on first start. An abort (a signal during start-up) stops the
 * embedded database between its steps and gives up.
 */
export async function openDatabase(
  config: Config,
  packs: readonly Pack[],
  logger: Logger,
  signal?: AbortSignal,
): Promise<OpenDatabase> {
  if (config.databaseUrl !== undefined) {
    return {
      readerUrl: config.databaseUrl,
      jobsUrl: config.jobsUrl,
      tokenKey: undefined,
      stop: async () => undefined,
    };
  }
  const { defaultDataDir, startEmbedded } = await import('./db/embedded.js');
  const embedded = await startEmbedded(
    {
      dataDir: config.dataDir ?? defaultDataDir(),
      readerRole: config.readerRole,
      jobsRole: config.jobsRole,
      packs,
      seedIfEmpty: { until: yesterdayUtc() },
      signal,
    },
    logger,
  );
  return {
    readerUrl: embedded.readerUrl,
    jobsUrl: config.jobsUrl ?? embedded.jobsUrl,
    tokenKey: embedded.tokenKey,
    stop: () => embedded.stop(),
  };
}

export interface AppOptions {
  /** The packs to serve, loaded (see packs.ts). */
  readonly packs: readonly Pack[];
  /** The `path` each pack loaded from the configuration file was given there, by pack name. */
  readonly packPaths?: ReadonlyMap<string, string>;
  /** The configuration file as read when the packs were loaded. */
  readonly configFile?: ConfigFile;
  readonly allowUnsafeRole: boolean;
  /** Called when the database, reachable at last, turns out to be unsafe: the server must not go on. */
  readonly onFatal: (error: Error) => void;
  /** Aborted by a stop signal during start-up: start-up then stops what it started and throws. */
  readonly signal?: AbortSignal;
}

const MAX_BACKOFF_MS = 30_000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

export async function startApp(config: Config, logger: Logger, options: AppOptions): Promise<App> {
  const { packs } = options;
  // Before the database: a pack whose documentation or prompts are broken stops the server at once.
  const content = contentOf(packs);
  const live = openLiveConfig(
    config,
    packs.map((pack) => ({
      pack: pack.name,
      ...(options.packPaths?.has(pack.name) ? { path: options.packPaths.get(pack.name) } : {}),
      ...(pack.smallGroupThreshold === undefined ? {} : { smallGroupThreshold: pack.smallGroupThreshold }),
      templates: pack.templates,
      ...(pack.reports ? { reports: pack.reports } : {}),
    })),
    logger,
    options.configFile,
    // The embedded database always has its job store; a database of your own, when its URL is known.
    { jobs: config.databaseUrl === undefined || config.jobsUrl !== undefined },
  );
  // Off by default; with QUERYGATE_TRACING=otlp, each call and each statement it runs is a span.
  const tracing = config.tracing === 'otlp' ? createTracing(process.env, logger, VERSION) : undefined;
  const registry = tracing ? tracing.registry(live.registry) : live.registry;
  // Said once: a scoped caller is shown fewer tools, and nothing else would tell the operator which.
  for (const [dimension, tools] of hiddenByDataScope(live.registry)) {
    if (tools.length > 0) {
      logger.warn(`data scope ${dimension}: hidden from callers scoped on it, since they do not apply it`, { tools });
    }
  }
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
  // The job store also keeps the call rates, so that replicas share them: N replicas allow the rate once, not N times.
  const jobStore = database.jobsUrl === undefined ? undefined : openJobStore(database.jobsUrl);
  const limits = createCallLimits({
    ...(jobStore
      ? {
          rates: createSharedRates(jobStore, {
            perMinute: config.rateLimitPerMinute,
            fallback: createTokenBuckets(config.rateLimitPerMinute),
            logger,
          }),
        }
      : {}),
    callsPerMinute: config.rateLimitPerMinute,
    maxConcurrentPerCaller: config.maxConcurrentPerCaller,
    maxActive: config.poolMax,
    maxQueued: config.maxQueued,
    maxQueueWaitMs: config.queueTimeoutMs,
  });

  let ready = false;
  let retry: NodeJS.Timeout | undefined;
  const target = redactUrl(readerUrl);
  const judge = (checks: SafetyCheck[]): void => {
    // A warning with a fix is worth acting on; one without (what any direct session may SET) is a
    // property of PostgreSQL, said once at info rather than warned about on every start.
    for (const check of checks.filter((c) => c.ok && c.warning)) {
      const log = check.fix ? logger.warn : logger.info;
      log.call(logger, `reader role: ${check.name}`, { detail: check.detail, fix: check.fix });
    }
    for (const check of checks.filter((c) => !c.ok && c.outsideDatabase)) {
      logger.error(`reader role, outside this database: ${check.name} fails; serving, but fix it`, {
        detail: check.detail,
        fix: check.fix,
      });
    }
    if (checks.every((c) => c.ok || c.outsideDatabase)) {
      ready = true;
      logger.info('reader role checked: safe', { database: target });
      return;
    }
    const report = formatReport(target, checks, []);
    const unsafe = checks.some((c) => !c.ok && !c.outsideDatabase && !c.name.startsWith(JOB_ROLE_CHECK))
      ? 'reader role'
      : 'job role';
    if (!options.allowUnsafeRole) {
      throw new ConfigError(`the ${unsafe} is unsafe; refusing to serve (override: --allow-unsafe-role)\n${report}`);
    }
    logger.error(`UNSAFE ${unsafe.toUpperCase()}: serving anyway because --allow-unsafe-role was given`, {
      failed: checks.filter((c) => !c.ok && !c.outsideDatabase).map((c) => c.name),
    });
    process.stderr.write(`${report}\n`);
    ready = true;
  };
  const attempt = async (delayMs: number): Promise<void> => {
    let checks: SafetyCheck[];
    try {
      checks = [
        ...(await checkReaderSafety(readerUrl, scope)),
        ...(database.jobsUrl === undefined ? [] : await checkJobRoleSafety(database.jobsUrl, scope)),
      ];
      // The checks' plain connection is not the pool's: a pooler may refuse the pool's startup parameters.
      await reader.execute({ sql: 'select 1', parameters: [] });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      logger.warn('database unavailable; calls fail until it answers', {
        code: classifyDatabaseError(err).code,
        reason,
        retry_in_ms: delayMs,
      });
      retry = setTimeout(() => {
        attempt(Math.min(delayMs * 2, MAX_BACKOFF_MS)).catch((fatal: Error) => options.onFatal(fatal));
      }, delayMs);
      return;
    }
    // A diagnostic only: whatever happens to it, the server's readiness does not depend on it.
    await zoneRulesAgreement(reader, live.ctx.timeZone, aYearAgo(new Date()), 731).then(
      (agreement) => reportZoneRules(live.ctx.timeZone, agreement, logger),
      (err: unknown) => logger.warn('could not compare the zone rules with the database', { reason: String(err) }),
    );
    judge(checks);
  };
  await attempt(1000);

  logger.info('serving', {
    database: target,
    packs: packs.map((p) => p.name),
    time_zone: live.ctx.timeZone,
    tools: registry.tools.length,
    ready,
  });
  live.watch();
  // One probe at a time, at most one a second, on one connection of its own: /readyz is
  // unauthenticated and must not take connections from tool calls, nor wait behind them.
  const probe = createReadinessProbe(readerUrl, { timeoutMs: PROBE_TIMEOUT_MS }, logger);
  const checkReader = atMostOnceASecond(() => probe.check());
  // A standby further behind than QUERYGATE_MAX_REPLICA_LAG_SECONDS is unready: its answers miss recent data.
  const withinLag = (): boolean => {
    const lag = probe.lagSeconds();
    return config.maxReplicaLagSeconds === undefined || lag === undefined || lag <= config.maxReplicaLagSeconds;
  };
  const probeReady = async (): Promise<boolean> => ready && (await checkReader()) && withinLag();
  const probeReplicaLag = async (): Promise<number | undefined> =>
    (await checkReader()) ? probe.lagSeconds() : undefined;
  // The job store is probed the same way, as the job role: reported beside readiness, not part of
  // it, since every replica shares it and the other tools serve without it.
  const jobsProbe =
    database.jobsUrl === undefined
      ? undefined
      : createReadinessProbe(database.jobsUrl, { timeoutMs: PROBE_TIMEOUT_MS }, logger);
  const checkJobs = jobsProbe && atMostOnceASecond(() => jobsProbe.check());
  const probeJobStore = async (): Promise<'ok' | 'unavailable' | undefined> =>
    checkJobs && ((await checkJobs()) ? 'ok' : 'unavailable');

  const metrics = createMetrics({
    pool: reader.pool,
    replicaLag: probeReplicaLag,
    ...(jobStore ? { jobs: jobStore } : {}),
    ...(config.metricsToken === undefined ? {} : { token: config.metricsToken }),
    logger,
  });
  // Aborted at the shutdown deadline: the registry cancels every call still running.
  const stopping = new AbortController();
  const deps: ServerDeps = {
    registry,
    identity: describeServer(packs),
    content,
    db: tracing ? tracing.database(reader) : reader,
    tokenize: createTokenizer(tokenKey),
    logger,
    audit: countedAudit(audit, metrics),
    limits,
    subscriptions: createSubscriptionLimits({
      perCaller: config.maxSubscriptionsPerCaller,
      total: config.maxSubscriptions,
      maxLifetimeMs: config.subscriptionLifetimeSeconds * 1000,
    }),
    ctx: live.ctx,
    isReady: () => ready,
    shutdown: stopping.signal,
  };
  const jobs =
    database.jobsUrl === undefined || jobStore === undefined
      ? undefined
      : startJobService({
          store: jobStore,
          url: database.jobsUrl,
          settings: {
            ttlSeconds: config.jobTtlSeconds,
            maxPerCaller: config.maxJobsPerCaller,
            leaseSeconds: config.jobLeaseSeconds,
            maxAttempts: MAX_JOB_ATTEMPTS,
            maxRunning: config.poolMax,
          },
          run: runThrough(registry, deps),
          logger,
          ready: () => ready,
        });
  if (jobs === undefined) {
    logger.info(
      'no job store: the reports that run as jobs are served synchronously only; set QUERYGATE_JOBS_URL, or QUERYGATE_JOBS_PASSWORD beside DATABASE_URL',
    );
  }
  const served: ServerDeps = jobs === undefined ? deps : { ...deps, jobs };
  let draining: Promise<void> | undefined;
  const drain = (): Promise<void> =>
    (draining ??= (async () => {
      clearTimeout(retry);
      // Jobs running here are let go at once, for another replica to take over, rather than drained.
      await jobs?.close();
      if (await limits.drain(config.shutdownTimeoutMs)) return;
      logger.warn('stopping: cancelling the calls still running', { active: limits.active });
      stopping.abort();
      if (!(await limits.drain(STOP_GRACE_MS))) {
        logger.warn('stopping with calls still running', { active: limits.active });
      }
    })());
  return {
    packs,
    probeReady,
    probeJobStore,
    probeReplicaLag,
    metrics,
    drain,
    grants: { toolsets: live.toolsets, scopes: live.scopes },
    oauth: live.current().oauth,
    subjectKey: createHmac('sha256', tokenKey).update('querygate subjects').digest(),
    sessionKey: createHmac('sha256', tokenKey).update('querygate mcp session ids').digest(),
    deps: served,
    stop: async () => {
      live.close();
      await drain();
      // pool.end() waits for connections still checked out; a stalled database must not hold the exit.
      await Promise.race([reader.close().catch(() => undefined), delay(STOP_GRACE_MS)]);
      await probe.close();
      await jobsProbe?.close();
      // The last spans go out, but a collector that does not answer must not hold the exit.
      await Promise.race([tracing?.shutdown().catch(() => undefined), delay(STOP_GRACE_MS)]);
      audit.close();
      await database.stop().catch(() => undefined);
    },
  };
}
