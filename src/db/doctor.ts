/**
 * The safety self-check: connects as the configured reader and proves it can read no more than the
 * templates need and can change nothing. `querygate doctor` prints it; `serve` runs it at start-up.
 */
import pg from 'pg';
import type { Kysely } from 'kysely';
import type { AnyTemplate, QueryContext } from '../registry.js';
import type { ReaderDatabase } from './connect.js';
import type { ReportingDatabase } from './schema.js';

export interface SafetyCheck {
  readonly name: string;
  readonly ok: boolean;
  /** What was found, when it is worth saying. */
  readonly detail?: string;
  /** The statement (run as an admin) that fixes a failure. */
  readonly fix?: string;
}

const DANGEROUS_ROLES = [
  'pg_read_server_files',
  'pg_write_server_files',
  'pg_execute_server_program',
  'pg_read_all_data',
  'pg_write_all_data',
];

/**
 * Runs every check over one plain connection as the reader, without the startup parameters the
 * server adds, so that the role's own settings are what is checked.
 */
export async function checkReaderSafety(readerUrl: string): Promise<SafetyCheck[]> {
  const client = new pg.Client({
    connectionString: readerUrl,
    application_name: 'querygate-doctor',
    connectionTimeoutMillis: 5000,
  });
  await client.connect();
  try {
    return await runChecks(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function runChecks(client: pg.Client): Promise<SafetyCheck[]> {
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
    `select name from unnest($1::text[]) as name where pg_has_role(current_user, name, 'MEMBER')`,
    [DANGEROUS_ROLES],
  );
  checks.push({
    name: 'no server-file, program or all-data roles',
    ok: memberships.length === 0,
    ...(memberships.length
      ? {
          detail: memberships.map((m) => m.name).join(', '),
          fix: memberships.map((m) => `REVOKE ${m.name} FROM ${role};`).join(' '),
        }
      : {}),
  });

  const { rows: writable } = await client.query<{ target: string; privileges: string }>(
    `select format('%I.%I', n.nspname, c.relname) as target, string_agg(p.privilege, ', ' order by p.privilege) as privileges
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       cross join unnest(array['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) as p (privilege)
      where c.relkind in ('r', 'p', 'v', 'm', 'f')
        and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%'
        and has_table_privilege(c.oid, p.privilege)
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

  const { rows: creatable } = await client.query<{ schema: string }>(
    `select format('%I', nspname) as schema from pg_namespace
      where has_schema_privilege(oid, 'CREATE') and nspname not like 'pg\\_temp%' and nspname not like 'pg\\_toast%'
      order by 1`,
  );
  checks.push({
    name: 'no CREATE on any schema',
    ok: creatable.length === 0,
    ...(creatable.length
      ? {
          detail: creatable.map((c) => c.schema).join(', '),
          fix: creatable.map((c) => `REVOKE CREATE ON SCHEMA ${c.schema} FROM PUBLIC, ${role};`).join(' '),
        }
      : {}),
  });

  const { rows: temp } = await client.query<{ temp: boolean }>(
    `select has_database_privilege(current_database(), 'TEMPORARY') as temp`,
  );
  const database = client.escapeIdentifier(r.database);
  checks.push({
    name: 'no temporary tables',
    ok: !temp[0]!.temp,
    ...(temp[0]!.temp ? { fix: `REVOKE TEMPORARY ON DATABASE ${database} FROM PUBLIC, ${role};` } : {}),
  });

  const { rows: raw } = await client.query<{ readable: boolean }>(
    `select coalesce(bool_or(has_column_privilege(c.oid, a.attname, 'SELECT')), false) as readable
       from pg_class c join pg_namespace n on n.oid = c.relnamespace join pg_attribute a on a.attrelid = c.oid
      where n.nspname = 'sales' and c.relname = 'customers' and a.attname in ('name', 'email', 'phone')`,
  );
  checks.push({
    name: 'cannot read raw personal data (sales.customers)',
    ok: !raw[0]!.readable,
    ...(raw[0]!.readable ? { fix: `REVOKE ALL ON sales.customers FROM PUBLIC, ${role};` } : {}),
  });

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
  const timeout = await setting('statement_timeout');
  checks.push({
    name: 'statement_timeout is set',
    ok: timeout !== '0',
    detail: timeout === '0' ? 'is 0 (none)' : `is ${timeout}`,
    ...(timeout === '0' ? { fix: `ALTER ROLE ${role} SET statement_timeout = '5s';` } : {}),
  });

  checks.push(await tryWrite(client, 'a write in a default transaction fails', 'begin', role));
  checks.push(await tryWrite(client, 'a write in a READ WRITE transaction fails', 'begin read write', role));
  return checks;
}

/** Attempts writes inside a transaction that is always rolled back; each must be refused. */
async function tryWrite(client: pg.Client, name: string, begin: string, role: string): Promise<SafetyCheck> {
  const attempts = [
    'create table public.querygate_doctor_probe (x int)',
    'create table reporting.querygate_doctor_probe (x int)',
    `insert into reporting.products (sku, name, category, unit_price) values ('doctor-probe', 'probe', 'probe', 0)`,
    `update reporting.orders set total_amount = total_amount where false`,
  ];
  const succeeded: string[] = [];
  for (const statement of attempts) {
    await client.query(begin);
    try {
      await client.query(statement);
      succeeded.push(statement.split(' (')[0]!);
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
  readonly totalCost: number;
}

/** EXPLAINs each template over the widest range allowed, ending on `lastDay`, with its most costly arguments. */
export async function explainTemplates(
  reader: ReaderDatabase,
  templates: readonly AnyTemplate[],
  ctx: QueryContext,
  widest: (template: AnyTemplate) => unknown,
): Promise<PlanCost[]> {
  const costs: PlanCost[] = [];
  for (const template of templates) {
    const args = template.input.parse(widest(template));
    const compiled = template
      .query(reader.compiler as Kysely<ReportingDatabase>, args, ctx)
      .limit(101)
      .compile();
    const rows = await reader.execute({ ...compiled, sql: `explain (format json) ${compiled.sql}` });
    const plan = (rows[0]!['QUERY PLAN'] as Array<{ Plan: { 'Total Cost': number } }>)[0]!.Plan;
    costs.push({ tool: template.name, totalCost: plan['Total Cost'] });
  }
  return costs;
}

/** A readable report: one line per check, with the fix under each failure. */
export function formatReport(target: string, checks: readonly SafetyCheck[], plans: readonly PlanCost[]): string {
  const lines = [`querygate doctor: ${target}`, ''];
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const check of checks) {
    lines.push(
      `  ${check.ok ? 'PASS' : 'FAIL'}  ${check.name.padEnd(width)}${check.detail ? `  (${check.detail})` : ''}`.trimEnd(),
    );
    if (!check.ok && check.fix) lines.push(`        fix: ${check.fix}`);
  }
  if (plans.length) {
    lines.push('', '  query plans over the widest allowed range (90 days):');
    for (const plan of plans) lines.push(`  PLAN  ${plan.tool.padEnd(width)}  cost ${plan.totalCost.toFixed(2)}`);
  }
  const failed = checks.filter((c) => !c.ok).length;
  lines.push(
    '',
    failed === 0 ? 'The reader role is safe.' : `UNSAFE: ${failed} check(s) failed. Apply the fixes as an admin.`,
  );
  return lines.join('\n');
}
