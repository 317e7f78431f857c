/** Database handles: the pooled reader the tools run through, and short-lived admin connections. */
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
} from 'kysely';
import { createHash } from 'node:crypto';
import { connect as connectSocket } from 'node:net';
import pg from 'pg';
import { InfraError } from '../lib/errors.js';
import { memoize } from '../lib/memo.js';
import type { Logger } from '../lib/logger.js';
import { isBehindPooler } from './pooler.js';
import { readFreshness, type ReplicaFreshness } from './replica-lag.js';

export interface ReaderOptions {
  readonly statementTimeoutMs: number;
  readonly poolMax: number;
  /** Shown in pg_stat_activity; defaults to "querygate". */
  readonly applicationName?: string;
  /** On a hot standby: the replay lag past which answers are stale (see replica-lag.ts); undefined: no bound. */
  readonly maxReplicaLagSeconds?: number | undefined;
}

/** SQL text and its bind parameters, as Kysely's compile() gives them. */
export type Statement = Pick<CompiledQuery, 'sql' | 'parameters'>;

/**
 * A result as PostgreSQL sends it: the column names, and each row as an array of the columns' text
 * (null for SQL NULL). Nothing is parsed into Dates or numbers on the way: the registry converts each
 * declared column once, to the JSON type it declares.
 */
export interface RawResult {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly (string | null)[])[];
  /** On a hot standby: how fresh the data is, read just before the statement (replay only moves forward). */
  readonly freshness?: ReplicaFreshness;
}

export interface ReaderDatabase {
  /** Builds and compiles queries; it has no connection and cannot run anything. */
  readonly compiler: Kysely<unknown>;
  /** Runs one compiled statement on a pooled reader connection; an abort cancels it on the server. */
  execute(query: Statement, signal?: AbortSignal): Promise<RawResult>;
  readonly pool: pg.Pool;
  close(): Promise<void>;
}

/** A Kysely that only compiles: templates are built with it, and nothing can be executed through it. */
export function createCompiler<DB = unknown>(): Kysely<DB> {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
}

/**
 * A pool of reader connections. Read-only mode and the timeouts are the server's own: sent as startup
 * parameters, then set again and read back on every new connection before its first call, so they
 * hold whatever the role's defaults say. Each call is a single named statement in its own implicit
 * transaction, and that transaction is READ ONLY. A connection that reaches PostgreSQL through a
 * pooler (see pooler.ts) instead runs each call in a READ ONLY transaction of its own that sets the
 * limits with SET LOCAL, with an unnamed statement: in transaction mode a session setting or a named
 * statement would stay on a server connection that other clients share (42P05 for the next one).
 */
export function connectReader(url: string, options: ReaderOptions, logger: Logger): ReaderDatabase {
  const limits: SessionLimits = {
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
  };
  const config: pg.PoolConfig = {
    connectionString: url,
    max: options.poolMax,
    application_name: options.applicationName ?? 'querygate',
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    // A client-side backstop for a network that stops answering; the server-side timeout fires first.
    query_timeout: options.statementTimeoutMs + 2000,
    connectionTimeoutMillis: 5000,
    // Prepared statements save parsing; a custom plan per call keeps the plan as good as an unprepared
    // query's (a generic plan once halved the speed of a ranking join).
    // UTC and ISO dates make timestamptz text the one format the registry converts (it checks).
    options:
      '-c default_transaction_read_only=on -c plan_cache_mode=force_custom_plan -c TimeZone=UTC -c DateStyle=ISO,MDY',
    // Once per connection, not per call: a pool connection that fails it is closed and never used.
    onConnect: async (client) => {
      // A standby is known per connection, and only its calls pay a query for their freshness.
      if ((await client.query<{ standby: boolean }>('select pg_is_in_recovery() as standby')).rows[0]!.standby) {
        if (!standbyLogged) logger.info('the reader reads a hot standby: answers say how fresh its data is');
        standbyLogged = true;
        standbys.add(client);
      }
      if (!(await isBehindPooler(client))) return enforceLimits(client, limits, logger);
      pooled.add(client);
      if (!poolerLogged)
        logger.info('the reader connects through a pooler: each call sets its limits in its own transaction');
      poolerLogged = true;
    },
  };
  const pooled = new WeakSet<pg.ClientBase>();
  const standbys = new WeakSet<pg.ClientBase>();
  // Connections handed to calls and not yet given back.
  let checkedOut = 0;
  let poolerLogged = false;
  let standbyLogged = false;
  const beginPooled = pooledBegin(limits);
  const pool = new pg.Pool(config);
  // An idle connection that dies (database restart) must not crash the server.
  pool.on('error', (err) => logger.warn('idle database connection lost', { message: err.message }));

  return {
    compiler: createCompiler(),
    pool,
    execute: async (query, signal) => {
      signal?.throwIfAborted();
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        // Every connection the pool may open was open and taken by a call: a wait for one, not a
        // database that does not answer (connections still being opened would not count here).
        throw checkedOut >= options.poolMax ? new InfraError('busy', err) : err;
      }
      checkedOut += 1;
      let cancelled = false;
      const cancel = (): void => {
        cancelled = true;
        cancelRunningQuery(client, logger);
      };
      signal?.addEventListener('abort', cancel, { once: true });
      const throughPooler = pooled.has(client);
      let inTransaction = false;
      try {
        if (throughPooler) {
          // The first statement waits for a server connection of the pooler's: one that does not come
          // within a statement's time is a full pooler (busy), not a slow query.
          await client
            .query({ text: beginPooled, query_timeout: options.statementTimeoutMs } as pg.QueryConfig)
            .catch((err: unknown) => {
              throw err instanceof Error && err.message === 'Query read timeout' ? new InfraError('busy', err) : err;
            });
          inTransaction = true;
        }
        const freshness = standbys.has(client) ? await readFreshness(client, options.maxReplicaLagSeconds) : undefined;
        // Named, so each connection parses and plans a statement once and then only binds and runs it;
        // unnamed through a pooler, where a name would outlive the call on a shared server connection.
        const result = await client.query<(string | null)[]>({
          ...(throughPooler ? {} : { name: statementName(query.sql) }),
          text: query.sql,
          values: query.parameters as unknown[],
          rowMode: 'array',
          types: RAW_TEXT,
        });
        if (inTransaction) await client.query('commit');
        inTransaction = false;
        // A cancel request is asynchronous: a connection it was sent for is not reused, so that it
        // cannot hit the next caller's query.
        checkedOut -= 1;
        client.release(cancelled ? true : undefined);
        return {
          columns: result.fields.map((field) => field.name),
          rows: result.rows,
          ...(freshness ? { freshness } : {}),
        };
      } catch (err) {
        // A connection that failed mid-query is not trusted again; one left in a transaction is rolled back first.
        const rolledBack =
          !inTransaction ||
          (await client.query('rollback').then(
            () => true,
            () => false,
          ));
        checkedOut -= 1;
        client.release(cancelled || !rolledBack || isConnectionError(err) ? true : undefined);
        throw err;
      } finally {
        signal?.removeEventListener('abort', cancel);
      }
    },
    close: () => pool.end(),
  };
}

/** Settings every reader connection must hold: read-only mode, and these two timeouts in milliseconds. */
interface SessionLimits {
  readonly statement_timeout: number;
  readonly idle_in_transaction_session_timeout: number;
}

/**
 * Sets the server's limits on a new connection, then reads them back in a second statement. A role's
 * defaults are only defaults (the role itself, or an admin, may change them), and a pooler may drop
 * startup parameters or run the second statement on another server connection; a connection that
 * does not hold these values is refused, not used unbounded. Both statements are cheap on a new
 * backend (no catalog view such as pg_settings to build).
 */
async function enforceLimits(client: pg.ClientBase, limits: SessionLimits, logger: Logger): Promise<void> {
  await client.query(
    `select set_config('default_transaction_read_only', 'on', false), set_config('statement_timeout', $1, false),
            set_config('idle_in_transaction_session_timeout', $2, false)`,
    [`${limits.statement_timeout}ms`, `${limits.idle_in_transaction_session_timeout}ms`],
  );
  const { rows } = await client.query<[string, string, string]>({
    text: `select current_setting('default_transaction_read_only'), current_setting('statement_timeout'),
                  current_setting('idle_in_transaction_session_timeout')`,
    rowMode: 'array',
  });
  const [readOnly, statementTimeout, idleTimeout] = rows[0]!;
  const wrong = [
    ...(readOnly === 'on' ? [] : ['default_transaction_read_only']),
    ...(milliseconds(statementTimeout) === limits.statement_timeout ? [] : ['statement_timeout']),
    ...(milliseconds(idleTimeout) === limits.idle_in_transaction_session_timeout
      ? []
      : ['idle_in_transaction_session_timeout']),
  ];
  if (wrong.length > 0) {
    logger.error('a reader connection did not keep the limits the server set; it is closed', { settings: wrong });
    throw new Error(`reader connection refused: ${wrong.join(', ')} did not keep the value the server set`);
  }
}

/**
 * The statement that opens a call's transaction behind a pooler, with the limits set for it alone.
 * The values are the server's configured integers (never a caller's), checked here, since SET takes no parameters.
 */
function pooledBegin(limits: SessionLimits): string {
  const ms = (value: number): number => {
    if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`not a positive integer timeout: ${value}`);
    return value;
  };
  return [
    'begin transaction read only',
    `set local statement_timeout = ${ms(limits.statement_timeout)}`,
    `set local idle_in_transaction_session_timeout = ${ms(limits.idle_in_transaction_session_timeout)}`,
    `set local timezone = 'UTC'`,
    `set local datestyle = 'ISO, MDY'`,
  ].join('; ');
}

const TIME_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** A time setting as SHOW prints it ("5s", "1500ms", "2min", "0"), in milliseconds. */
function milliseconds(shown: string): number | undefined {
  const match = /^(\d+)(ms|s|min|h|d)?$/.exec(shown);
  return match ? Number(match[1]) * TIME_UNITS[match[2] ?? 'ms']! : undefined;
}

/** Every column as the text PostgreSQL sent: no Date, BigInt or float parsing for values about to be converted again. */
const RAW_TEXT = { getTypeParser: () => (text: string) => text } as unknown as pg.CustomTypesConfig;

const statementName = memoize(
  (sql: string): string => `qg_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`,
  1000,
);

/**
 * Anything but an SQL error from a healthy session (a timeout, say) leaves the connection suspect; so
 * do a prepared statement a pooler lost (26000) or already holds from another client (42P05), and one
 * whose result type changed under it (0A000).
 */
function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return (
    typeof code !== 'string' ||
    !/^[0-9A-Z]{5}$/.test(code) ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    code === '26000' ||
    code === '42P05' ||
    code === '0A000'
  );
}

/**
 * Sends PostgreSQL's CancelRequest for whatever `client` is running: a 16-byte packet on a new
 * connection, carrying the backend's pid and secret key (protocol 3.0), as libpq's PQcancel does.
 */
function cancelRunningQuery(client: pg.PoolClient, logger: Logger): void {
  const backend = client as unknown as {
    processID: number | null;
    secretKey: number | null;
    host: string;
    port: number;
  };
  if (backend.processID === null || backend.secretKey === null) return;
  logger.debug('cancelling an abandoned query', { backend_pid: backend.processID });
  const packet = Buffer.alloc(16);
  packet.writeInt32BE(16, 0);
  packet.writeInt32BE(80877102, 4);
  packet.writeInt32BE(backend.processID, 8);
  packet.writeInt32BE(backend.secretKey, 12);
  const socket = backend.host.startsWith('/')
    ? connectSocket(`${backend.host}/.s.PGSQL.${backend.port}`)
    : connectSocket(backend.port, backend.host);
  socket.setTimeout(5000, () => socket.destroy());
  socket.on('error', (err) => logger.warn('could not cancel a query', { message: err.message }));
  socket.on('connect', () => socket.end(packet));
}

/** One admin connection for migrations, seeding and set-up; the caller ends it. */
export async function connectAdmin(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'querygate-admin' });
  await client.connect();
  return client;
}

/** A task on one admin connection (a pack's seed, say), which is ended whatever the task does. */
export async function withAdmin<T>(url: string, task: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = await connectAdmin(url);
  try {
    return await task(admin);
  } finally {
    await admin.end();
  }
}

/** An admin Kysely handle over a single-connection pool, for the migrator. */
export function adminKysely(url: string): Kysely<unknown> {
  return new Kysely<unknown>({
    dialect: new PostgresDialect({
      pool: new pg.Pool({ connectionString: url, max: 1, application_name: 'querygate-admin' }),
    }),
  });
}

/** Replaces the database name of a connection string. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/** The same connection string with the user and password replaced. */
export function withCredentials(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(user);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/** A connection string with its password hidden, for logs. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable connection string)';
  }
}
