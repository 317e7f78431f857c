/** Database handles: the pooled reader the tools run through, and short-lived admin connections. */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from '../logger.js';
import type { ReportingDatabase } from './schema.js';

export interface ReaderOptions {
  readonly statementTimeoutMs: number;
  readonly poolMax: number;
  /** Shown in pg_stat_activity; defaults to "querygate". */
  readonly applicationName?: string;
}

export interface ReaderDatabase {
  readonly db: Kysely<ReportingDatabase>;
  close(): Promise<void>;
}

/**
 * A pool of reader connections. Read-only mode and the timeouts are sent as startup parameters,
 * so they hold on every connection even if the role's own settings were dropped.
 */
export function connectReader(url: string, options: ReaderOptions, logger: Logger): ReaderDatabase {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolMax,
    application_name: options.applicationName ?? 'querygate',
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    // A client-side backstop for a network that stops answering; the server-side timeout fires first.
    query_timeout: options.statementTimeoutMs + 2000,
    connectionTimeoutMillis: 5000,
    options: '-c default_transaction_read_only=on',
  });
  // An idle connection that dies (database restart) must not crash the server.
  pool.on('error', (err) => logger.warn('idle database connection lost', { message: err.message }));
  const db = new Kysely<ReportingDatabase>({ dialect: new PostgresDialect({ pool }) });
  return { db, close: () => db.destroy() };
}

/** One admin connection for migrations, seeding and set-up; the caller ends it. */
export async function connectAdmin(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: 'querygate-admin' });
  await client.connect();
  return client;
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
