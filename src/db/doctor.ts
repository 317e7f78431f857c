/**
 * The safety self-check: connects as the configured reader and proves it can read no more than the
 * templates need and can change nothing. `querygate doctor` prints it; `serve` runs it at start-up.
 */
import pg from 'pg';
import { widestArguments } from '../lib/widest-arguments.js';
import type { Pack, PersonalColumn } from '../pack.js';
import { ConfigError } from '../errors.js';
import { hiddenByDataScope } from '../registry/access.js';
import { createRegistry } from '../registry/index.js';
import type { Registry } from '../registry/interface.js';
import { builderContext, type QueryContext } from '../registry/types.js';
import type { ReaderDatabase } from './connect.js';
import { classificationChecks, personalDataChecks } from './personal-data-checks.js';
import { JOB_SCHEMA } from './job-role.js';
import { READER_TEMP_FILE_LIMIT } from './reader-role.js';
import { findPooler } from './pooler.js';

export interface SafetyCheck {
  readonly name: string;
  /** False makes the role unsafe: doctor exits 1 and serve refuses it. */
  readonly ok: boolean;
  /**
   * A finding that does not make the role unsafe but is worth knowing (reported as WARN): what the
   * reader could do if its password were used outside the server.
   */
  readonly warning?: boolean;
  /**
   * A failure outside querygate's own database (another database of the cluster): doctor fails it,
   * but serve only reports it, since querygate's connections never go there and a running replica
   * should not stop serving because someone created a database beside it.
   */
  readonly outsideDatabase?: boolean;
  /** What was found, when it is worth saying. */
  readonly detail?: string;
  /** The statement (run as an admin) that fixes a failure or clears a warning. */
  readonly fix?: string;
}

const DANGEROUS_ROLES = [
  'pg_read_server_files',
  'pg_write_server_files',
  'pg_execute_server_program',
  'pg_read_all_data',
  'pg_write_all_data',
];

/** What the served packs let the reader read: their schemas, and the personal columns in them. */
export interface ReaderScope {
  readonly schemas: readonly string[];
  /** The declared personal columns ("schema.table.column") whose raw data the reader must not reach. */
  readonly personal: Readonly<Record<string, PersonalColumn>>;
  /**
   * The columns ("schema.table.column") the packs declare as not personal: with `personal`, every
   * column the reader can read in `schemas`; a readable column in neither fails (none when unset).
   */
  readonly notPersonal?: readonly string[];
}

/** The scope of a server that serves these packs. */
export function readerScopeOf(packs: readonly Pack[]): ReaderScope {
  return {
    schemas: [...new Set(packs.flatMap((p) => p.readerSchemas))],
    personal: Object.assign({}, ...packs.map((p) => p.personalColumns)) as Record<string, PersonalColumn>,
    notPersonal: packs.flatMap((p) => p.notPersonalColumns ?? []),
  };
}

/**
 * Runs every check over one plain connection as the reader, without the startup parameters the
 * server adds, so that the role's own settings are what is checked. `sampleValues` (doctor's) also
 * reads the values of the columns declared not personal; `serve` judges them by name only, so that
 * its start reads no table a writer may hold locked, and costs the same at any size.
 */
export async function checkReaderSafety(
  readerUrl: string,
  scope: ReaderScope,
  options: { readonly sampleValues?: boolean } = {},
): Promise<SafetyCheck[]> {
  const client = await connectAsRole(readerUrl);
  try {
    const checks = await runChecks(client, scope, options.sampleValues ?? false);
    checks.push(await poolerCheck(client, readerUrl));
    return checks;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Says how the reader reaches PostgreSQL, and what querygate does differently behind a pooler. */
async function poolerCheck(client: pg.Client, url: string): Promise<SafetyCheck> {
  const finding = await findPooler(client, () => connectAsRole(url));
  return {
    name: 'how the reader reaches PostgreSQL',
    ok: true,
    detail: !finding.pooled
      ? 'directly'
      : `through a pooler in ${finding.mode} mode (the backend pid is not the one the connection announced): ` +
        'each call runs in a READ ONLY transaction of its own that sets its limits with SET LOCAL, with unnamed ' +
        'statements, so that no setting or statement outlives the call on a server connection others share',
  };
}

/** The name of the check that the server's own reader connection (its startup parameters, its limits) opens. */
export const READER_CONNECTION_CHECK = "the server's reader connection opens";

/**
 * Opens a connection of the server's reader pool and runs one statement on it: the role's checks
 * use a plain connection, and a pooler may accept that one and refuse the server's startup parameters.
 */
export async function readerConnectionCheck(reader: ReaderDatabase): Promise<SafetyCheck> {
  try {
    await reader.execute({ sql: 'select 1', parameters: [] });
    return { name: READER_CONNECTION_CHECK, ok: true };
  } catch (err) {
    return {
      name: READER_CONNECTION_CHECK,
      ok: false,
      detail: `failed: ${err instanceof Error ? err.message : String(err)}`,
      fix: 'behind PgBouncer (session or transaction mode): ignore_startup_parameters = statement_timeout, idle_in_transaction_session_timeout, options',
    };
  }
}

/**
 * One plain connection as the role checked, without the startup parameters the server adds, so that
 * the role's own settings are what is checked.
 */
async function connectAsRole(url: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: url,
    application_name: 'querygate-doctor',
    connectionTimeoutMillis: 5000,
    // Client-side, so that the role's own statement_timeout is still what the checks read: a stalled
    // database fails the check (serve retries it) instead of holding start-up for ever.
    query_timeout: 15_000,
  });
  await client.connect();
  return client;
}

/** The prefix of the job role's checks in a report, which lists them after the reader's. */
export const JOB_ROLE_CHECK = 'job role: ';

/**
 * Proves the job role safe, over one plain connection as that role: a leaf that owns nothing, reads
 * and writes nothing outside the job store (no pack schema, no pack table), creates nothing, and can
 * read and write the job table. Each check's name starts with JOB_ROLE_CHECK.
 */
export async function checkJobRoleSafety(jobsUrl: string, scope: ReaderScope): Promise<SafetyCheck[]> {
  const client = await connectAsRole(jobsUrl);
  try {
    const { role, database, checks } = await leafRoleChecks(client);
    checks.push(await ownsNothing(client, role));
    const { rows: reachable } = await client.query<{ target: string }>(
      `select format('%I.%I', n.nspname, c.relname) as target
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind in ('r', 'p', 'v', 'm', 'f')
          and n.nspname not in ($1, 'pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%'
          and (has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')
               or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                            and has_column_privilege(c.oid, a.attnum, 'SELECT, INSERT, UPDATE')))
        order by 1`,
      [JOB_SCHEMA],
    );
    checks.push(
      noneFound(
        `reads and writes nothing outside ${JOB_SCHEMA}`,
        reachable.map((r) => r.target),
        (target) => `REVOKE ALL ON ${target} FROM PUBLIC, ${role};`,
      ),
    );
    const { rows: packSchemas } = await client.query<{ schema: string }>(
      `select format('%I', nspname) as schema from pg_namespace
        where nspname = any ($1::text[]) and has_schema_privilege(oid, 'USAGE') order by 1`,
      [scope.schemas],
    );
    checks.push(
      noneFound(
        `no access to the packs' schemas (${scope.schemas.join(', ')})`,
        packSchemas.map((r) => r.schema),
        (schema) => `REVOKE USAGE ON SCHEMA ${schema} FROM PUBLIC, ${role};`,
      ),
    );
    checks.push(...(await createsNothing(client, role, database)));
    const { rows: store } = await client.query<{ usable: boolean }>(
      `select to_regclass($1) is not null
              and has_table_privilege(to_regclass($1), 'SELECT') and has_table_privilege(to_regclass($1), 'INSERT')
              and has_table_privilege(to_regclass($1), 'UPDATE') and has_table_privilege(to_regclass($1), 'DELETE') as usable`,
      [`${JOB_SCHEMA}.jobs`],
    );
    checks.push({
      name: `reads and writes ${JOB_SCHEMA}.jobs`,
      ok: store[0]!.usable,
      ...(store[0]!.usable
        ? {}
        : { detail: 'the job store is missing or closed to it', fix: 'run querygate migrate as an admin' }),
    });
    return checks.map((check) => ({ ...check, name: `${JOB_ROLE_CHECK}${check.name}` }));
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function runChecks(client: pg.Client, scope: ReaderScope, sampleValues: boolean): Promise<SafetyCheck[]> {
  const { role, database, superuser, checks } = await leafRoleChecks(client);
  const { rows: dangerous } = await client.query<{ name: string }>(
    `select name from unnest($1::text[]) as name where pg_has_role(current_user, name, 'MEMBER')`,
    [DANGEROUS_ROLES],
  );
  checks.push({
    name: 'no server-file, program or all-data roles',
    ok: dangerous.length === 0,
    ...(dangerous.length
      ? {
          detail: superuser ? 'a superuser holds them all' : dangerous.map((m) => m.name).join(', '),
          fix: superuser
            ? `ALTER ROLE ${role} NOSUPERUSER;`
            : dangerous.map((m) => `REVOKE ${m.name} FROM ${role};`).join(' '),
        }
      : {}),
  });
  checks.push(await ownsNothing(client, role));

  const { rows: readable } = await client.query<{ target: string }>(
    `select format('%I.%I', n.nspname, c.relname) as target
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p', 'v', 'm', 'f')
        and n.nspname <> all ($1::text[]) and n.nspname not in ('pg_catalog', 'information_schema')
        and n.nspname not like 'pg\\_toast%'
        and (has_table_privilege(c.oid, 'SELECT')
             or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                          and has_column_privilege(c.oid, a.attnum, 'SELECT')))
      order by 1`,
    [scope.schemas],
  );
  checks.push(
    noneFound(
      `reads nothing outside the ${scope.schemas.join(', ')} schema${scope.schemas.length > 1 ? 's' : ''}`,
      readable.map((t) => t.target),
      (target) => `REVOKE ALL ON ${target} FROM PUBLIC, ${role};`,
    ),
  );

  const { rows: functions } = await client.query<{ fn: string }>(
    `select p.oid::regprocedure::text as fn from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname = 'pg_catalog'
        and p.proname in ('pg_read_file', 'pg_read_binary_file', 'pg_ls_dir', 'pg_stat_file', 'lo_import', 'lo_export',
                          'pg_ls_logdir', 'pg_ls_waldir', 'pg_ls_tmpdir', 'pg_ls_archive_statusdir', 'pg_reload_conf',
                          'pg_rotate_logfile')
        and has_function_privilege(p.oid, 'EXECUTE')
      order by 1`,
  );
  checks.push(
    noneFound(
      'cannot call file-reading or admin functions',
      superuser ? [] : functions.map((f) => f.fn),
      (fn) => `REVOKE EXECUTE ON FUNCTION ${fn} FROM PUBLIC, ${role};`,
    ),
  );

  const { rows: writable } = await client.query<{ target: string; privileges: string }>(
    `select format('%I.%I', n.nspname, c.relname) as target, string_agg(p.privilege, ', ' order by p.privilege) as privileges
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       cross join unnest(array['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) as p (privilege)
      where c.relkind in ('r', 'p', 'v', 'm', 'f')
        and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%'
        and (has_table_privilege(c.oid, p.privilege)
             or (p.privilege in ('INSERT', 'UPDATE') and exists (
                   select 1 from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                      and has_column_privilege(c.oid, a.attnum, p.privilege))))
      group by 1 order by 1`,
  );
  checks.push({
    name: 'no INSERT/UPDATE/DELETE/TRUNCATE on any table',
    ok: writable.length === 0,
    ...(writable.length
      ? {
          detail: writable.map((w) => `${w.privileges} on ${w.target}`).join('; '),
          fix: writable.map((w) => `REVOKE ${w.privileges} ON ${w.target} FROM ${role};`).join(' '),
        }
      : {}),
  });

  checks.push(...(await createsNothing(client, role, database)));
  checks.push(await noJobSchemaAccess(client, role));
  checks.push(...(await checkOtherDatabases(client, role)));

  checks.push(...(await personalDataChecks(client, role, scope.personal)));
  checks.push(...(await classificationChecks(client, scope, sampleValues)));

  const setting = async (name: string): Promise<string> =>
    (await client.query<{ value: string }>('select current_setting($1) as value', [name])).rows[0]!.value;
  const readOnly = await setting('default_transaction_read_only');
  checks.push({
    name: 'default_transaction_read_only = on',
    ok: readOnly === 'on',
    ...(readOnly !== 'on'
      ? { detail: `is ${readOnly}`, fix: `ALTER ROLE ${role} SET default_transaction_read_only = on;` }
      : {}),
  });
  const timeoutMs = Number(
    (await client.query<{ ms: string }>(`select setting as ms from pg_settings where name = 'statement_timeout'`))
      .rows[0]!.ms,
  );
  checks.push({
    name: 'statement_timeout is set, at most 60 s',
    ok: timeoutMs > 0 && timeoutMs <= 60_000,
    detail: timeoutMs === 0 ? 'is 0 (none)' : `is ${await setting('statement_timeout')}`,
    ...(timeoutMs === 0 || timeoutMs > 60_000 ? { fix: `ALTER ROLE ${role} SET statement_timeout = '5s';` } : {}),
  });
  const idle = await setting('idle_in_transaction_session_timeout');
  checks.push({
    name: 'idle_in_transaction_session_timeout is set',
    ok: idle !== '0',
    ...(idle === '0'
      ? { detail: 'is 0 (none)', fix: `ALTER ROLE ${role} SET idle_in_transaction_session_timeout = '10s';` }
      : {}),
  });

  checks.push(...(await checkOwnSettings(client, role)));

  const probes = await writeProbes(client, scope.schemas);
  checks.push(await tryWrite(client, 'a write in a default transaction fails', 'begin', role, probes));
  checks.push(await tryWrite(client, 'a write in a READ WRITE transaction fails', 'begin read write', role, probes));
  return checks;
}

/**
 * What every role of querygate's must be: not a superuser, no BYPASSRLS, unable to create roles or
 * databases or to replicate, and a leaf (a member of no other role: any role it is a member of could
 * be SET ROLE'd to, whatever NOINHERIT says, and has_table_privilege does not see through a NOINHERIT
 * membership). Gives the checks and what the later ones need: the role and database, quoted.
 */
async function leafRoleChecks(
  client: pg.Client,
): Promise<{ role: string; database: string; superuser: boolean; checks: SafetyCheck[] }> {
  const checks: SafetyCheck[] = [];
  const { rows: roleRows } = await client.query<{
    role: string;
    database: string;
    rolsuper: boolean;
    rolbypassrls: boolean;
    rolcreaterole: boolean;
    rolcreatedb: boolean;
    rolreplication: boolean;
  }>(
    `select current_user as role, current_database() as database, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolreplication
       from pg_roles where rolname = current_user`,
  );
  const r = roleRows[0]!;
  const role = client.escapeIdentifier(r.role);
  const flag = (name: string, bad: boolean, attribute: string): void => {
    checks.push({ name, ok: !bad, ...(bad ? { fix: `ALTER ROLE ${role} ${attribute};` } : {}) });
  };
  flag('not a superuser', r.rolsuper, 'NOSUPERUSER');
  flag('no BYPASSRLS', r.rolbypassrls, 'NOBYPASSRLS');
  flag(
    'cannot create roles, databases or replicate',
    r.rolcreaterole || r.rolcreatedb || r.rolreplication,
    'NOCREATEROLE NOCREATEDB NOREPLICATION',
  );
  const { rows: memberships } = await client.query<{ name: string }>(
    `with recursive member_of (oid) as (
       select m.roleid from pg_auth_members m join pg_roles r on r.oid = m.member where r.rolname = current_user
       union
       select m.roleid from pg_auth_members m join member_of on m.member = member_of.oid)
     select format('%I', r.rolname) as name from member_of join pg_roles r on r.oid = member_of.oid order by 1`,
  );
  checks.push(
    noneFound(
      'member of no other role',
      r.rolsuper ? [] : memberships.map((m) => m.name),
      (name) => `REVOKE ${name} FROM ${role};`,
    ),
  );
  return { role, database: client.escapeIdentifier(r.database), superuser: r.rolsuper, checks };
}

async function ownsNothing(client: pg.Client, role: string): Promise<SafetyCheck> {
  const { rows: owned } = await client.query<{ object: string }>(
    `select format('%I.%I', n.nspname, c.relname) as object from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relowner = (select oid from pg_roles where rolname = current_user)
     union all
     select format('schema %I', nspname) from pg_namespace where nspowner = (select oid from pg_roles where rolname = current_user)
     order by 1`,
  );
  return noneFound(
    'owns no tables, views or schemas',
    owned.map((o) => o.object),
    () => `REASSIGN OWNED BY ${role} TO <an admin role>;`,
  );
}

/** No CREATE on any schema, no temporary tables, no CREATE on the database: a role that makes nothing. */
async function createsNothing(client: pg.Client, role: string, database: string): Promise<SafetyCheck[]> {
  const { rows: creatable } = await client.query<{ schema: string }>(
    `select format('%I', nspname) as schema from pg_namespace
      where has_schema_privilege(oid, 'CREATE') and nspname not like 'pg\\_temp%' and nspname not like 'pg\\_toast%'
      order by 1`,
  );
  const creates = noneFound(
    'no CREATE on any schema',
    creatable.map((c) => c.schema),
    (schema) => `REVOKE CREATE ON SCHEMA ${schema} FROM PUBLIC, ${role};`,
  );

  const { rows: dbRights } = await client.query<{ temp: boolean; create: boolean }>(
    `select has_database_privilege(current_database(), 'TEMPORARY') as temp,
            has_database_privilege(current_database(), 'CREATE') as create`,
  );
  const temporary: SafetyCheck = {
    name: 'no temporary tables',
    ok: !dbRights[0]!.temp,
    ...(dbRights[0]!.temp ? { fix: `REVOKE TEMPORARY ON DATABASE ${database} FROM PUBLIC, ${role};` } : {}),
  };
  const createDatabase: SafetyCheck = {
    name: 'no CREATE on the database',
    ok: !dbRights[0]!.create,
    ...(dbRights[0]!.create ? { fix: `REVOKE CREATE ON DATABASE ${database} FROM PUBLIC, ${role};` } : {}),
  };
  return [creates, temporary, createDatabase];
}

/**
 * The reader has no right on the job store: the job table holds every caller's arguments and
 * results, and only the job role may read it.
 */
async function noJobSchemaAccess(client: pg.Client, role: string): Promise<SafetyCheck> {
  const { rows } = await client.query<{ target: string }>(
    `select format('schema %I', n.nspname) as target from pg_namespace n
      where n.nspname = $1 and (has_schema_privilege(n.oid, 'USAGE') or has_schema_privilege(n.oid, 'CREATE'))
     union all
     select format('%I.%I', n.nspname, c.relname) from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'S')
        and has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
     order by 1`,
    [JOB_SCHEMA],
  );
  return noneFound(
    `no access to the job store (${JOB_SCHEMA})`,
    rows.map((r) => r.target),
    (target) =>
      target.startsWith('schema ')
        ? `REVOKE ALL ON SCHEMA ${target.slice(7)} FROM PUBLIC, ${role};`
        : `REVOKE ALL ON ${target} FROM PUBLIC, ${role};`,
  );
}

/**
 * The cluster's other databases, as the reader reaches them: roles belong to the cluster, and every
 * database grants CONNECT and TEMPORARY to PUBLIC unless an admin revoked them. CONNECT alone is a
 * warning (several querygate databases may share one reader role); TEMPORARY is a failure, since
 * temporary tables are written to disk and no setting bounds their size. Each fix revokes the right
 * from whoever holds it: revoking it from the role alone changes nothing while PUBLIC holds it.
 */
async function checkOtherDatabases(client: pg.Client, role: string): Promise<SafetyCheck[]> {
  const { rows } = await client.query<{
    database: string;
    temp: boolean;
    connectPublic: boolean;
    connectRole: boolean;
    tempPublic: boolean;
    tempRole: boolean;
  }>(
    `with d as (
       select d.datname, d.oid, a.grantee, a.privilege_type
         from pg_database d
         left join lateral aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a on true
        where d.datname <> current_database() and d.datallowconn and has_database_privilege(d.oid, 'CONNECT'))
     select datname as database, has_database_privilege(d.oid, 'TEMPORARY') as temp,
            bool_or(privilege_type = 'CONNECT' and grantee = 0) as "connectPublic",
            bool_or(privilege_type = 'CONNECT' and grantee = r.oid) as "connectRole",
            bool_or(privilege_type = 'TEMPORARY' and grantee = 0) as "tempPublic",
            bool_or(privilege_type = 'TEMPORARY' and grantee = r.oid) as "tempRole"
       from d cross join (select oid from pg_roles where rolname = current_user) r
      group by datname, d.oid order by datname`,
  );
  // A right held some other way (a superuser, a role the reader is a member of) is named by the
  // checks above; revoking from both is then the best statement to give.
  const from = (fromPublic: boolean, fromRole: boolean): string =>
    [...(fromPublic ? ['PUBLIC'] : []), ...(fromRole ? [role] : [])].join(', ') || `PUBLIC, ${role}`;
  const temporary = rows.filter((r) => r.temp);
  return [
    {
      name: 'connects to no other database',
      ok: true,
      ...(rows.length
        ? {
            warning: true,
            detail: `can connect to ${rows.map((r) => r.database).join(', ')}`,
            fix: rows
              .map(
                (r) =>
                  `REVOKE CONNECT ON DATABASE ${client.escapeIdentifier(r.database)} FROM ${from(r.connectPublic, r.connectRole)};`,
              )
              .join(' '),
          }
        : {}),
    },
    {
      name: 'no TEMPORARY on another database',
      ok: temporary.length === 0,
      outsideDatabase: true,
      ...(temporary.length
        ? {
            detail: `can create temporary tables in ${temporary.map((r) => r.database).join(', ')}`,
            fix: temporary
              .map(
                (r) =>
                  `REVOKE TEMPORARY ON DATABASE ${client.escapeIdentifier(r.database)} FROM ${from(r.tempPublic, r.tempRole)};`,
              )
              .join(' '),
          }
        : {}),
    },
  ];
}

/**
 * What the reader may change about its own session. Every parameter of context "user" can be SET by
 * any role, and no grant or role setting can stop it: statement_timeout, read-only mode and work_mem
 * bind querygate's own connections (the server sets them on each) but not a person who connects
 * with the reader's password. temp_file_limit can be set only by a superuser, so, set on the role,
 * it bounds the temporary files of every session of the reader.
 */
async function checkOwnSettings(client: pg.Client, role: string): Promise<SafetyCheck[]> {
  const { rows } = await client.query<{ name: string }>(
    `select name from pg_settings where context = 'user' order by name`,
  );
  const userSettable = new Set(rows.map((r) => r.name));
  // What bounds such a session anyway: how many of them the role may open at once.
  const { rows: connRows } = await client.query<{ connections: number }>(
    `select rolconnlimit as connections from pg_roles where rolname = current_user`,
  );
  const connectionLimit = connRows[0]!.connections;
  const named = [
    'statement_timeout',
    'default_transaction_read_only',
    'idle_in_transaction_session_timeout',
    'work_mem',
  ].filter((name) => userSettable.has(name));
  const checks: SafetyCheck[] = [
    {
      name: 'settings a direct session can change',
      ok: true,
      warning: true,
      detail:
        `${named.join(', ')} and ${userSettable.size - named.length} more, held only on the server's own connections;` +
        ` a direct session is bounded by temp_file_limit and the role's connection limit (${connectionLimit < 0 ? 'none' : connectionLimit})`,
    },
  ];

  const { rows: limitRows } = await client.query<{ setting: string; shown: string; version: number }>(
    `select setting, current_setting('temp_file_limit') as shown, current_setting('server_version_num')::int as version
       from pg_settings where name = 'temp_file_limit'`,
  );
  const limit = limitRows[0]!;
  // Since PostgreSQL 15 a superuser may GRANT SET on a superuser-only parameter.
  const liftable =
    limit.version >= 150_000 &&
    (await client.query<{ liftable: boolean }>(`select has_parameter_privilege('temp_file_limit', 'SET') as liftable`))
      .rows[0]!.liftable;
  const unlimited = limit.setting === '-1';
  checks.push({
    name: 'temp_file_limit is set and cannot be lifted',
    ok: true,
    ...(liftable
      ? {
          warning: true,
          detail: 'the reader holds SET on it',
          fix: `REVOKE SET ON PARAMETER temp_file_limit FROM ${role};`,
        }
      : unlimited
        ? {
            warning: true,
            detail: 'is -1 (none); only a superuser can set it',
            fix: `ALTER ROLE ${role} SET temp_file_limit = '${READER_TEMP_FILE_LIMIT}';`,
          }
        : { detail: `is ${limit.shown}` }),
  });
  return checks;
}

/** A check that passes when nothing offends; otherwise it names the offenders and the fix for each. */
function noneFound(name: string, offenders: readonly string[], fix: (offender: string) => string): SafetyCheck {
  if (offenders.length === 0) return { name, ok: true };
  return { name, ok: false, detail: offenders.join(', '), fix: [...new Set(offenders.map(fix))].join(' ') };
}

/**
 * The writes to attempt: a table in public and in each of the packs' schemas, and an UPDATE and a
 * DELETE (matching no row) on the first relation the reader reads in each schema. A write the
 * role may not do fails on privilege or on read-only mode before any row is looked at.
 */
async function writeProbes(client: pg.Client, schemas: readonly string[]): Promise<string[]> {
  const { rows } = await client.query<{ target: string; col: string }>(
    `select distinct on (n.nspname) format('%I.%I', n.nspname, c.relname) as target, format('%I', a.attname) as col
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p', 'v', 'f')
        and has_table_privilege(c.oid, 'SELECT')
      order by n.nspname, c.relname, a.attnum`,
    [schemas],
  );
  return [
    'create table public.querygate_doctor_probe (x int)',
    ...schemas.map((schema) => `create table ${client.escapeIdentifier(schema)}.querygate_doctor_probe (x int)`),
    ...rows.flatMap(({ target, col }) => [
      `update ${target} set ${col} = ${col} where false`,
      `delete from ${target} where false`,
    ]),
  ];
}

/** Attempts writes inside a transaction that is always rolled back; each must be refused, by the BEGIN or the write. */
async function tryWrite(
  client: pg.Client,
  name: string,
  begin: string,
  role: string,
  attempts: readonly string[],
): Promise<SafetyCheck> {
  const succeeded: string[] = [];
  for (const statement of attempts) {
    try {
      // Inside the try: a server that refuses the BEGIN itself (a hot standby refuses READ WRITE) refuses the write.
      await client.query(begin);
      await client.query(statement);
      succeeded.push(statement.split(' (')[0]!.replace(/ where false$/, ''));
    } catch {
      // refused: what we want
    } finally {
      await client.query('rollback');
    }
  }
  return {
    name,
    ok: succeeded.length === 0,
    ...(succeeded.length
      ? {
          detail: `succeeded (and was rolled back): ${succeeded.join('; ')}`,
          fix: `ALTER ROLE ${role} SET default_transaction_read_only = on; and revoke the privileges listed above`,
        }
      : {}),
  };
}

export interface PlanCost {
  readonly tool: string;
  /** The planner's highest total cost over the template's widest calls; undefined when EXPLAIN failed. */
  readonly totalCost?: number;
  /** The pack's ceiling: a cost above it fails. */
  readonly maxCost: number;
  /** The arguments of the costliest call. */
  readonly args?: unknown;
  readonly error?: string;
}

/**
 * EXPLAINs each template of each pack over its widest calls (see widest-arguments.ts), ending on
 * `lastDay`, and keeps the costliest: a template whose plan costs more than its pack allows fails.
 */
export async function explainPacks(
  reader: ReaderDatabase,
  packs: readonly Pack[],
  ctx: QueryContext,
  lastDay: string,
): Promise<PlanCost[]> {
  const costs: PlanCost[] = [];
  for (const pack of packs) {
    for (const template of pack.templates) {
      let worst: PlanCost = { tool: template.name, maxCost: pack.maxPlanCost, totalCost: 0 };
      try {
        for (const args of widestArguments(template, lastDay)) {
          const compiled = template.query(reader.compiler, args, builderContext(template, ctx)).limit(101).compile();
          const { rows } = await reader.execute({ ...compiled, sql: `explain (format json) ${compiled.sql}` });
          const plan = (JSON.parse(rows[0]![0]!) as Array<{ Plan: { 'Total Cost': number } }>)[0]!.Plan;
          if (plan['Total Cost'] >= (worst.totalCost ?? 0)) worst = { ...worst, totalCost: plan['Total Cost'], args };
        }
      } catch (err) {
        worst = {
          tool: template.name,
          maxCost: pack.maxPlanCost,
          error: err instanceof Error ? err.message : String(err),
        };
      }
      costs.push(worst);
    }
  }
  return costs;
}

/**
 * The registry's start-up checks of every served template (treatments, selections, bound values,
 * examples), so that doctor fails a template `serve` would refuse, with the same message.
 */
export function templatesCheck(packs: readonly Pack[]): SafetyCheck {
  const name = "every template passes the registry's checks";
  try {
    createRegistry(packs.flatMap((pack) => pack.templates));
    return { name, ok: true };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return {
      name,
      ok: false,
      detail: err.message,
      fix: 'change the template as the message says; serve refuses it until then',
    };
  }
}

/**
 * What each declared data-scope dimension hides from a caller scoped on it: the tools that do not
 * apply it, and the reports (and their jobs) that run one of them. A warning when it hides any, since
 * nothing tells a scoped caller, or its operator, that they are missing.
 */
export function dataScopeChecks(packs: readonly Pack[]): SafetyCheck[] {
  return packs.flatMap((pack) => {
    if ((pack.dataScope ?? []).length === 0) return [];
    let registry: Registry;
    try {
      registry = createRegistry(pack.templates, { reports: pack.reports ?? [], jobs: true });
    } catch (err) {
      if (err instanceof ConfigError) return []; // templatesCheck fails it with the message
      throw err;
    }
    return [...hiddenByDataScope(registry)].map(([dimension, tools]): SafetyCheck => {
      const name = `data scope ${dimension} (pack ${pack.name}) hides no tool from a caller scoped on it`;
      if (tools.length === 0) return { name, ok: true };
      return {
        name,
        ok: true,
        warning: true,
        detail: `hides ${tools.join(', ')}`,
        fix: `apply ${dimension} in each template a scoped caller should see (dataScope: ['${dimension}'], binding ctx.dataScope); a report is hidden while one of its templates is`,
      };
    });
  });
}

/** A plan that failed, or costs more than its pack allows. */
export function planFails(plan: PlanCost): boolean {
  return plan.totalCost === undefined || plan.totalCost > plan.maxCost;
}

/** A readable report: one line per check, with the fix under each failure. */
export function formatReport(target: string, checks: readonly SafetyCheck[], plans: readonly PlanCost[]): string {
  const lines = [`querygate doctor: ${target}`, ''];
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const check of checks) {
    const status = !check.ok ? 'FAIL' : check.warning ? 'WARN' : 'PASS';
    lines.push(`  ${status}  ${check.name.padEnd(width)}${check.detail ? `  (${check.detail})` : ''}`.trimEnd());
    if (status !== 'PASS' && check.fix) lines.push(`        fix: ${check.fix}`);
  }
  if (plans.length) {
    lines.push('', '  query plans over the widest allowed range (90 days):');
    for (const plan of plans) {
      lines.push(
        plan.totalCost === undefined
          ? `  FAIL  ${plan.tool.padEnd(width)}  EXPLAIN failed: ${plan.error}`
          : plan.totalCost > plan.maxCost
            ? `  FAIL  ${plan.tool.padEnd(width)}  cost ${plan.totalCost.toFixed(2)}, above the pack's ceiling ${plan.maxCost} (arguments ${JSON.stringify(plan.args)}); add an index or a rollup, or narrow the template`
            : `  PLAN  ${plan.tool.padEnd(width)}  cost ${plan.totalCost.toFixed(2)} (ceiling ${plan.maxCost})`,
      );
    }
  }
  const failed = checks.filter((c) => !c.ok).length + plans.filter(planFails).length;
  const roles = checks.some((c) => c.name.startsWith(JOB_ROLE_CHECK))
    ? 'reader role and the job role are'
    : 'reader role is';
  const warned = checks.filter((c) => c.ok && c.warning).length;
  const connection = checks.find((c) => c.name === READER_CONNECTION_CHECK && !c.ok);
  lines.push(
    '',
    connection
      ? `CONNECTION FAILED: the server's reader connection did not open (${connection.detail}); fix the connection and run doctor again.`
      : failed === 0
        ? `The ${roles} safe${warned ? `, with ${warned} warning(s)` : ''}.`
        : `UNSAFE: ${failed} check(s) failed. Apply the fixes as an admin.`,
  );
  return lines.join('\n');
}
