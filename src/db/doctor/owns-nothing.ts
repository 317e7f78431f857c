import { noneFound, type RoleUnderCheck, type SafetyCheck } from './check.js';

/** An owner holds every right on what it owns, whatever was revoked: querygate's roles own nothing. */
export async function ownsNothing({ client, role }: RoleUnderCheck): Promise<SafetyCheck> {
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
