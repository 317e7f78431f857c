import { CALLER_NAME } from './lib/caller-ids.js';
import { withCredentials } from './db/connect.js';
import { ConfigError } from './lib/errors.js';
import type { LogLevel } from './lib/logger.js';

/** Everything the server reads from its environment, parsed once at start-up. */
export interface Config {
  /** Reader connection string; undefined selects the embedded default. */
  readonly databaseUrl: string | undefined;
  /** Admin connection string, used only by `migrate` and `seed`. */
  readonly adminDatabaseUrl: string | undefined;
  /** Folder of the embedded default database. */
  readonly dataDir: string | undefined;
  /** IANA time zone in which dates given to tools are read. */
  readonly timeZone: string;
  /** Server-side limit on one statement, in milliseconds. */
  readonly statementTimeoutMs: number;
  /** Largest number of pooled reader connections. */
  readonly poolMax: number;
  /** On a hot standby: the replay lag, in seconds, past which the server is unready and answers are stale; undefined: no bound. */
  readonly maxReplicaLagSeconds: number | undefined;
  /** Key of the keyed hash that turns internal ids into opaque tokens. */
  readonly tokenKey: string | undefined;
  /** Name of the read-only role created by the migrations. */
  readonly readerRole: string;
  /** Password `migrate` and `seed` give the reader role, when set. */
  readonly readerPassword: string | undefined;
  /** Name of the role that reads and writes the job store, created by the migrations. */
  readonly jobsRole: string;
  /** Password `migrate` and `seed` give the job role, when set; with DATABASE_URL it makes the job store's URL. */
  readonly jobsPassword: string | undefined;
  /** Connection string of the job role; undefined: DATABASE_URL with the job role's credentials, if known. */
  readonly jobsUrl: string | undefined;
  /** How long a job is kept after it is submitted, in seconds; then it is deleted. */
  readonly jobTtlSeconds: number;
  /** Jobs one caller may have pending or running at once, counted in the job store (across replicas). */
  readonly maxJobsPerCaller: number;
  /** How long a running job's heartbeat holds its replica's claim, in seconds; then another takes it over. */
  readonly jobLeaseSeconds: number;
  /** Log verbosity on stderr. */
  readonly logLevel: LogLevel;
  /** OpenTelemetry traces: off, or exported over OTLP/HTTP to the OTEL_EXPORTER_OTLP_* endpoint. */
  readonly tracing: 'off' | 'otlp';
  /** Tool calls per caller per minute. */
  readonly rateLimitPerMinute: number;
  /** Tool calls one caller may have running at once. */
  readonly maxConcurrentPerCaller: number;
  /** Tool calls waiting for a database connection before more are refused as busy. */
  readonly maxQueued: number;
  /** Longest wait for a database connection before a call is refused as busy, in milliseconds. */
  readonly queueTimeoutMs: number;
  /** subscriptions/listen streams one caller may hold open at once. */
  readonly maxSubscriptionsPerCaller: number;
  /** subscriptions/listen streams open at once over all callers. */
  readonly maxSubscriptions: number;
  /** Longest a subscriptions/listen stream stays open before it ends and the client listens again, in seconds. */
  readonly subscriptionLifetimeSeconds: number;
  /** Audit log file (appended, mode 0600); undefined writes audit lines to stderr. */
  readonly auditLog: string | undefined;
  /** The Chromium that prints PDF reports; undefined looks where Debian, Ubuntu and Google install it. */
  readonly chromium: string | undefined;
  /** One bearer token for every tool. */
  readonly httpToken: string | undefined;
  /** JSON file of named bearer tokens with optional toolsets. */
  readonly httpTokensFile: string | undefined;
  /** Failed authentications one source address may make per minute before it gets 429. */
  readonly authFailuresPerMinute: number;
  /** Proxies in front whose X-Forwarded-For entries are believed for the source address. */
  readonly trustProxyHops: number;
  /** Bearer token a scraper of /metrics must send; without it, /metrics answers anyone who reaches the port. */
  readonly metricsToken: string | undefined;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  /** How long a stopping server waits for calls in flight. */
  readonly shutdownTimeoutMs: number;
  /** The packs served: shipped packs by name, others by the path of their compiled module. */
  readonly packs: readonly string[];
  /** The configuration file (JSON or YAML): packs, toolsets and limits, reloaded while serving. */
  readonly configFile: string | undefined;
  /** The name of this process's caller over stdio (`stdio:<name>`); unset: a random one of its own. */
  readonly stdioCaller: string | undefined;
  /** The embedded database's port on 127.0.0.1; unset: a free one, chosen at each start. */
  readonly embeddedPort: number | undefined;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export const DEFAULT_READER_ROLE = 'querygate_reader';
export const DEFAULT_JOBS_ROLE = 'querygate_jobs';

/** The packs served when neither QUERYGATE_PACKS nor the configuration file names any. */
export const DEFAULT_PACKS: readonly string[] = ['sales'];

/** Parses the environment; throws a ConfigError naming the variable on the first bad value. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const timeZone = env.QUERYGATE_TIME_ZONE ?? 'UTC';
  if (!isTimeZone(timeZone)) {
    throw new ConfigError(`QUERYGATE_TIME_ZONE: "${timeZone}" is not an IANA time zone`);
  }
  const logLevel = (env.QUERYGATE_LOG_LEVEL ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`QUERYGATE_LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const readerRole = roleName(env, 'QUERYGATE_READER_ROLE', DEFAULT_READER_ROLE);
  const jobsRole = roleName(env, 'QUERYGATE_JOBS_ROLE', DEFAULT_JOBS_ROLE);
  if (jobsRole === readerRole) {
    throw new ConfigError('QUERYGATE_JOBS_ROLE: must differ from the reader role, which may write nothing');
  }
  const databaseUrl = nonEmpty(env.DATABASE_URL);
  const jobsPassword = nonEmpty(env.QUERYGATE_JOBS_PASSWORD);
  return {
    databaseUrl,
    adminDatabaseUrl: nonEmpty(env.ADMIN_DATABASE_URL),
    dataDir: nonEmpty(env.QUERYGATE_DATA_DIR),
    timeZone,
    statementTimeoutMs: positiveInt(env, 'QUERYGATE_STATEMENT_TIMEOUT_MS', 5000),
    poolMax: positiveInt(env, 'QUERYGATE_POOL_MAX', 10),
    maxReplicaLagSeconds:
      nonEmpty(env.QUERYGATE_MAX_REPLICA_LAG_SECONDS) === undefined
        ? undefined
        : positiveInt(env, 'QUERYGATE_MAX_REPLICA_LAG_SECONDS', 0),
    tokenKey: nonEmpty(env.QUERYGATE_TOKEN_KEY),
    readerRole,
    readerPassword: nonEmpty(env.QUERYGATE_READER_PASSWORD),
    jobsRole,
    jobsPassword,
    jobsUrl:
      nonEmpty(env.QUERYGATE_JOBS_URL) ??
      (databaseUrl !== undefined && jobsPassword !== undefined
        ? jobsUrlFrom(databaseUrl, jobsRole, jobsPassword)
        : undefined),
    jobTtlSeconds: positiveInt(env, 'QUERYGATE_JOB_TTL_SECONDS', 3600),
    maxJobsPerCaller: positiveInt(env, 'QUERYGATE_MAX_JOBS_PER_CALLER', 2),
    jobLeaseSeconds: positiveInt(env, 'QUERYGATE_JOB_LEASE_SECONDS', 15),
    logLevel,
    tracing: oneOf(env, 'QUERYGATE_TRACING', ['off', 'otlp'] as const, 'off'),
    rateLimitPerMinute: positiveInt(env, 'QUERYGATE_RATE_LIMIT', 60),
    maxConcurrentPerCaller: positiveInt(env, 'QUERYGATE_MAX_CONCURRENT', 4),
    maxQueued: positiveInt(env, 'QUERYGATE_MAX_QUEUE', 32),
    queueTimeoutMs: positiveInt(env, 'QUERYGATE_QUEUE_TIMEOUT_MS', 2000),
    maxSubscriptionsPerCaller: positiveInt(env, 'QUERYGATE_MAX_STREAMS_PER_CALLER', 8),
    maxSubscriptions: positiveInt(env, 'QUERYGATE_MAX_STREAMS', 200),
    subscriptionLifetimeSeconds: positiveInt(env, 'QUERYGATE_STREAM_LIFETIME_SECONDS', 3600),
    auditLog: nonEmpty(env.QUERYGATE_AUDIT_LOG),
    chromium: nonEmpty(env.QUERYGATE_CHROMIUM),
    httpToken: present(env, 'QUERYGATE_HTTP_TOKEN'),
    httpTokensFile: nonEmpty(env.QUERYGATE_HTTP_TOKENS_FILE),
    authFailuresPerMinute: positiveInt(env, 'QUERYGATE_AUTH_FAILURES_PER_MINUTE', 10),
    trustProxyHops: wholeNumber(env, 'QUERYGATE_TRUST_PROXY_HOPS', 0),
    metricsToken: token(env, 'QUERYGATE_METRICS_TOKEN'),
    allowedHosts: list(env.QUERYGATE_ALLOWED_HOSTS),
    allowedOrigins: list(env.QUERYGATE_ALLOWED_ORIGINS),
    shutdownTimeoutMs: positiveInt(env, 'QUERYGATE_SHUTDOWN_TIMEOUT_MS', 10_000),
    packs: env.QUERYGATE_PACKS === undefined ? DEFAULT_PACKS : nonEmptyList(env, 'QUERYGATE_PACKS'),
    configFile: nonEmpty(env.QUERYGATE_CONFIG),
    stdioCaller: callerName(env, 'QUERYGATE_STDIO_CALLER'),
    embeddedPort: portNumber(env, 'QUERYGATE_EMBEDDED_PORT'),
  };
}

/** A TCP port a process without privileges may listen on, or undefined when unset. */
function portNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return undefined;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1024 || port > 65535) {
    throw new ConfigError(`${name}: must be a whole number from 1024 to 65535 (or unset, to choose a free port)`);
  }
  return port;
}

/** DATABASE_URL with the job role's name and password instead of the reader's. */
function jobsUrlFrom(databaseUrl: string, role: string, password: string): string {
  try {
    return withCredentials(databaseUrl, role, password);
  } catch {
    throw new ConfigError('DATABASE_URL: is not a connection URL, so the job store needs QUERYGATE_JOBS_URL');
  }
}

function roleName(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const role = env[name] ?? fallback;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role)) throw new ConfigError(`${name}: must be a lower-case SQL identifier`);
  return role;
}

function callerName(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = nonEmpty(env[name]);
  if (value !== undefined && !CALLER_NAME.test(value)) {
    throw new ConfigError(
      `${name}: "${value.slice(0, 64)}" is not a caller name (letters, digits, _ . - only, at most 64)`,
    );
  }
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** A secret that, when set at all, must not be blank: a blank token must not mean "no authentication". */
function present(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new ConfigError(`${name}: is set but blank; unset it or give a token`);
  return value;
}

/** A bearer token: unset, or at least as long as the HTTP clients' tokens must be. */
function token(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = present(env, name);
  if (value !== undefined && value.length < 16) throw new ConfigError(`${name}: must be at least 16 characters`);
  return value;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function nonEmptyList(env: NodeJS.ProcessEnv, name: string): string[] {
  const values = list(env[name]);
  if (values.length === 0) throw new ConfigError(`${name}: names no pack; unset it to serve the default pack`);
  return values;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  if (!/^[1-9][0-9]{0,8}$/.test(raw)) {
    throw new ConfigError(`${name}: "${raw}" is not a positive integer`);
  }
  return Number(raw);
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, values: readonly T[], fallback: T): T {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  if (!values.includes(raw as T)) throw new ConfigError(`${name}: must be one of ${values.join(', ')}`);
  return raw as T;
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return fallback;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(raw)) throw new ConfigError(`${name}: "${raw}" is not a whole number`);
  return Number(raw);
}

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
