import type { ReaderUnderCheck, SafetyCheck } from './check.js';

/**
 * The cluster's other databases, as the reader reaches them: roles belong to the cluster, and every
 * database grants CONNECT and TEMPORARY to PUBLIC unless an admin revoked them. CONNECT alone is a
 * warning (several querygate databases may share one reader role); TEMPORARY is a failure, since
 * temporary tables are written to disk and no setting bounds their size. Each fix revokes the right
 * from whoever holds it: revoking it from the role alone changes nothing while PUBLIC holds it.
 */
export async function otherDatabases({ client, role }: ReaderUnderCheck): Promise<SafetyCheck[]> {
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
