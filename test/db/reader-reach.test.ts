/**
 * Issue 8, item 6: the reader role judged by what it can really do, in a cluster of this suite's own
 * (an embedded PostgreSQL in a temporary folder), so that reopening databases to PUBLIC and changing
 * the role's defaults cannot touch the other suites, which share one cluster and one reader role.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { withCredentials, withDatabase } from '../../src/db/connect.js';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { setRolePassword } from '../../src/db/reader-password.js';
import { silentLogger } from '../../src/lib/logger.js';
import { runCli } from '../support/cli.js';
import { checkNamed, parseChecks, type ReportedCheck } from '../support/doctor-report.js';
import { startHarness, textOf } from '../support/harness.js';
import { claimTestPort } from '../support/ports.js';
import { eventually } from '../support/scratch.js';
import { startStartupProxy, type StartupProxy } from '../support/startup-proxy.js';
import { salesPack } from '../../pack/index.js';

const reader = `"${DEFAULT_READER_ROLE}"`;
let dataDir: string;
let database: EmbeddedDatabase;
/** An admin connection to the cluster's `postgres` database, from which the others are managed. */
let server: pg.Client;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'querygate-reader-reach-'));
  await chmod(dataDir, 0o755); // as root, postgres runs as the postgres user and must enter it
  database = await startEmbedded(
    {
      dataDir,
      port: await claimTestPort(), // inside QUERYGATE_TEST_PORTS when set
      readerRole: DEFAULT_READER_ROLE,
      packs: [salesPack],
      seedIfEmpty: { until: '2025-06-30', counts: { sales: 300 } },
    },
    silentLogger,
  );
  server = new pg.Client({ connectionString: withDatabase(database.adminUrl, 'postgres') });
  await server.connect();
});
afterAll(async () => {
  await server?.end();
  await database?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const doctor = async (): Promise<{ code: number | null; stdout: string; checks: ReportedCheck[] }> => {
  const { code, stdout, stderr } = await runCli(['doctor'], { DATABASE_URL: database.readerUrl });
  expect(stdout, stderr).toMatch(/querygate doctor/);
  return { code, stdout, checks: parseChecks(stdout) };
};

/** The databases other than its own that the reader may connect to, and those it may create temporary tables in. */
async function reach(): Promise<{ connect: string[]; temporary: string[] }> {
  const { rows } = await server.query<{ name: string; temporary: boolean }>(
    `select datname as name, has_database_privilege($1, oid, 'TEMPORARY') as temporary
       from pg_database
      where datname <> 'querygate' and datallowconn and has_database_privilege($1, oid, 'CONNECT')
      order by datname`,
    [DEFAULT_READER_ROLE],
  );
  return { connect: rows.map((r) => r.name), temporary: rows.filter((r) => r.temporary).map((r) => r.name) };
}

/** Connects as the reader to another database, turns read-only mode off and writes a temporary table there. */
async function writeTemporaryTableIn(name: string): Promise<number> {
  const client = new pg.Client({ connectionString: withDatabase(database.readerUrl, name) });
  await client.connect();
  try {
    await client.query('set default_transaction_read_only = off');
    await client.query('set statement_timeout = 0');
    await client.query('create temporary table filler as select g from generate_series(1, 1000) as g');
    return (await client.query<{ n: number }>('select count(*)::int as n from filler')).rows[0]!.n;
  } finally {
    await client.end();
  }
}

describe('item 6: the cluster outside the reader database', () => {
  const opened = ['other_db', 'role_db'];
  afterAll(async () => {
    for (const name of opened) await server?.query(`drop database if exists ${name} with (force)`);
  });

  it('item 6: the embedded set-up leaves the reader no other database, and doctor passes', async () => {
    expect(await reach()).toEqual({ connect: [], temporary: [] });
    const { code, stdout, checks } = await doctor();
    expect(code, stdout).toBe(0);
    expect(checkNamed(checks, 'connects to no other database')).toMatchObject({ status: 'PASS', detail: '' });
    expect(checkNamed(checks, 'no TEMPORARY on another database')).toMatchObject({ status: 'PASS', detail: '' });
    expect(stdout).toMatch(/role is safe/);
  });

  it('item 6: doctor reports each other database and TEMPORARY with the REVOKE that works, and passes once fixed', async () => {
    // A cluster as most are: postgres as initdb left it (PUBLIC may connect and create temporary
    // tables), a second database with the same defaults, and a third open to the role itself only.
    await server.query('grant connect, temporary on database postgres to public');
    await server.query(`grant connect on database postgres to ${reader}`);
    await server.query('create database other_db');
    await server.query('create database role_db with allow_connections = false');
    await server.query('revoke connect, temporary on database role_db from public');
    await server.query(`grant connect, temporary on database role_db to ${reader}`);
    await server.query('alter database role_db with allow_connections = true');
    expect(await reach()).toEqual({
      connect: ['other_db', 'postgres', 'role_db'],
      temporary: ['other_db', 'postgres', 'role_db'],
    });
    // What it really can do there: leave read-only mode and write a table.
    expect(await writeTemporaryTableIn('other_db')).toBe(1000);
    expect(await writeTemporaryTableIn('role_db')).toBe(1000);
    // Revoking from the role alone changes nothing while PUBLIC holds the right.
    await server.query(`revoke temporary on database other_db from ${reader}`);
    expect(await writeTemporaryTableIn('other_db')).toBe(1000);

    const unsafe = await doctor();
    expect(unsafe.code, unsafe.stdout).toBe(1);
    expect(unsafe.stdout).toMatch(/UNSAFE/);
    const connect = checkNamed(unsafe.checks, 'connects to no other database');
    expect(connect.status).toBe('WARN');
    expect(connect.detail).toContain('other_db, postgres, role_db');
    expect(connect.fix).toBe(
      `REVOKE CONNECT ON DATABASE "other_db" FROM PUBLIC; REVOKE CONNECT ON DATABASE "postgres" FROM PUBLIC, ${reader}; REVOKE CONNECT ON DATABASE "role_db" FROM ${reader};`,
    );
    const temporary = checkNamed(unsafe.checks, 'no TEMPORARY on another database');
    expect(temporary.status).toBe('FAIL');
    expect(temporary.detail).toContain('other_db, postgres, role_db');
    expect(temporary.fix).toBe(
      `REVOKE TEMPORARY ON DATABASE "other_db" FROM PUBLIC; REVOKE TEMPORARY ON DATABASE "postgres" FROM PUBLIC; REVOKE TEMPORARY ON DATABASE "role_db" FROM ${reader};`,
    );

    // serve still starts: querygate's connections never go to those databases, and a replica must
    // not stop because a database was created beside it; it logs the failure with its fix.
    const served = await runCli(['serve'], { DATABASE_URL: database.readerUrl });
    expect(served.code, served.stderr).toBe(0);
    expect(served.stderr).toContain('outside this database: no TEMPORARY on another database fails');
    expect(served.stderr).toContain('REVOKE TEMPORARY ON DATABASE');

    // The fixes, run exactly as printed.
    for (const statement of temporary.fix!.split(/(?<=;) /)) await server.query(statement);
    expect(await reach()).toEqual({ connect: ['other_db', 'postgres', 'role_db'], temporary: [] });
    await expect(writeTemporaryTableIn('other_db')).rejects.toMatchObject({ code: '42501' });
    const warned = await doctor();
    expect(warned.code, warned.stdout).toBe(0);
    expect(checkNamed(warned.checks, 'no TEMPORARY on another database').status).toBe('PASS');
    expect(checkNamed(warned.checks, 'connects to no other database').status).toBe('WARN');

    for (const statement of connect.fix!.split(/(?<=;) /)) await server.query(statement);
    expect(await reach()).toEqual({ connect: [], temporary: [] });
    await expect(writeTemporaryTableIn('role_db')).rejects.toMatchObject({ code: '42501' });
    const fixed = await doctor();
    expect(fixed.code, fixed.stdout).toBe(0);
    expect(checkNamed(fixed.checks, 'connects to no other database')).toMatchObject({ status: 'PASS', detail: '' });
    expect(fixed.stdout).toMatch(/role is safe/);
  });
});

describe('item 6: what the reader can change about its own session', () => {
  it('item 6: doctor names the settings a direct session can change, and temp_file_limit holds against it', async () => {
    const { checks } = await doctor();
    const settings = checkNamed(checks, 'settings a direct session can change');
    expect(settings.status).toBe('WARN');
    for (const name of ['statement_timeout', 'default_transaction_read_only', 'work_mem']) {
      expect(settings.detail).toContain(name);
    }
    const limit = checkNamed(checks, 'temp_file_limit is set and cannot be lifted');
    expect(limit).toMatchObject({ status: 'PASS', detail: '(is 1GB)' });

    // As the reader itself: its own limits are its to change, temp_file_limit is not.
    const direct = new pg.Client({ connectionString: database.readerUrl });
    await direct.connect();
    try {
      await direct.query('set statement_timeout = 0');
      await direct.query('set default_transaction_read_only = off');
      const { rows } = await direct.query<{ kb: string }>(
        "select setting as kb from pg_settings where name = 'temp_file_limit'",
      );
      expect(Number(rows[0]!.kb)).toBe(1024 * 1024);
      await expect(direct.query('set temp_file_limit = -1')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await direct.end();
    }
  });
});

describe('item 6: temp_file_limit when the admin is not a superuser', () => {
  const admin = 'querygate_plain_admin';
  const role = 'querygate_reader_plain';
  const name = 'plain_admin_db';
  afterAll(async () => {
    await server?.query(`drop database if exists ${name} with (force)`);
    for (const r of [role, admin]) await server?.query(`drop role if exists ${r}`);
  });

  it('item 6: the migrations still complete, and doctor warns that temp_file_limit is unset with the statement to run', async () => {
    await server.query(`create role ${admin} login createrole createdb password 'plain-admin-pw'`);
    await server.query(`create database ${name} with owner = ${admin} allow_connections = false`);
    await server.query(`revoke connect, temporary on database ${name} from public`);
    await server.query(`alter database ${name} with allow_connections = true`);
    const adminUrl = withCredentials(withDatabase(database.adminUrl, name), admin, 'plain-admin-pw');
    await migrateToLatest(adminUrl, salesPack, role, silentLogger);
    const { rows } = await server.query<{ config: string[] | null }>(
      'select rolconfig as config from pg_roles where rolname = $1',
      [role],
    );
    expect(rows[0]!.config).toEqual(expect.arrayContaining(['default_transaction_read_only=on']));
    expect((rows[0]!.config ?? []).some((entry) => entry.startsWith('temp_file_limit='))).toBe(false);

    const password = 'plain-reader-pw';
    await setRolePassword(server, role, password);
    const readerUrl = withCredentials(withDatabase(database.readerUrl, name), role, password);
    const before = await runCli(['doctor'], { DATABASE_URL: readerUrl });
    const limit = checkNamed(parseChecks(before.stdout), 'temp_file_limit is set and cannot be lifted');
    expect(limit).toMatchObject({ status: 'WARN', fix: `ALTER ROLE "${role}" SET temp_file_limit = '1GB';` });

    await server.query(limit.fix!);
    const after = await runCli(['doctor'], { DATABASE_URL: readerUrl });
    expect(checkNamed(parseChecks(after.stdout), 'temp_file_limit is set and cannot be lifted')).toMatchObject({
      status: 'PASS',
      detail: '(is 1GB)',
    });
  });
});

describe("item 6: the server's own limits on every connection", () => {
  let proxy: StartupProxy;
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
    // The role's defaults turned off, as an admin (or a pooler's own role set-up) might leave them.
    for (const setting of [
      'statement_timeout = 0',
      'default_transaction_read_only = off',
      'idle_in_transaction_session_timeout = 0',
    ]) {
      await admin.query(`alter role ${reader} set ${setting}`);
    }
    const url = new URL(database.readerUrl);
    proxy = await startStartupProxy({ host: url.hostname, port: Number(url.port) });
  });
  afterAll(async () => {
    await proxy?.close();
    for (const setting of [
      "statement_timeout = '5s'",
      'default_transaction_read_only = on',
      "idle_in_transaction_session_timeout = '10s'",
    ]) {
      await admin?.query(`alter role ${reader} set ${setting}`);
    }
    await admin?.end();
  });

  const throughProxy = (): string => {
    const url = new URL(database.readerUrl);
    url.port = String(proxy.port);
    return url.toString();
  };

  it('item 6: behind a pooler that drops startup parameters, with the role defaults off, each connection holds them and a long call is cancelled by the server', async () => {
    // The premise: through the proxy, a client's own startup parameters are lost and the role's
    // defaults are what a new session gets.
    const plain = new pg.Client({ connectionString: throughProxy(), statement_timeout: 1000 });
    await plain.connect();
    try {
      const { rows } = await plain.query<{ timeout: string; ro: string }>(
        "select current_setting('statement_timeout') as timeout, current_setting('default_transaction_read_only') as ro",
      );
      expect(rows[0]).toEqual({ timeout: '0', ro: 'off' });
    } finally {
      await plain.end();
    }

    const application = 'querygate-item-6';
    const harness = await startHarness({
      readerUrl: throughProxy(),
      statementTimeoutMs: 1000,
      poolMax: 3,
      applicationName: application,
    });
    try {
      // Three calls at once hold three connections: each one has the server's values.
      const sessions = await Promise.all(
        [1, 2, 3].map(() =>
          harness.reader.execute({
            sql: `select pg_backend_pid()::text, current_setting('statement_timeout'), current_setting('default_transaction_read_only'),
                         current_setting('idle_in_transaction_session_timeout'), pg_sleep(0.3)::text`,
            parameters: [],
          }),
        ),
      );
      const rows = sessions.map((s) => s.rows[0]!);
      expect(new Set(rows.map((r) => r[0])).size).toBe(3);
      for (const row of rows) expect(row.slice(1, 4)).toEqual(['1s', 'on', '2s']);

      await admin.query('begin');
      await admin.query('lock table sales.orders in access exclusive mode');
      try {
        const waiting = async (): Promise<number> =>
          (
            await server.query<{ n: number }>(
              "select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
              [application],
            )
          ).rows[0]!.n;
        const result = await harness.call('query_recent_orders', { start_date: '2025-06-01', end_date: '2025-06-07' });
        expect(result.isError).toBe(true);
        expect(textOf(result)).toContain('code: timeout');
        // The server gave the query up itself, while the lock is still held: not only the client.
        await eventually('the query to be cancelled on the server', async () => (await waiting()) === 0, 10_000);
      } finally {
        await admin.query('rollback');
      }
    } finally {
      await harness.close();
    }
  });
});
