import type pg from 'pg';
import { noneFound, type RoleUnderCheck, type SafetyCheck } from './check.js';

/**
 * What every role of querygate's must be: not a superuser, no BYPASSRLS, unable to create roles or
 * databases or to replicate, and a leaf (a member of no other role: any role it is a member of could
 * be SET ROLE'd to, whatever NOINHERIT says, and has_table_privilege does not see through a NOINHERIT
 * membership). Gives the checks and what the later ones need: the role and database, quoted.
 */
export async function leafRoleChecks(
  client: pg.Client,
): Promise<{ readonly under: RoleUnderCheck; readonly checks: SafetyCheck[] }> {
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
  return {
    under: { client, role, database: client.escapeIdentifier(r.database), superuser: r.rolsuper },
    checks,
  };
}
