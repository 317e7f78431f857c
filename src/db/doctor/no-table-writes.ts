import type { ReaderUnderCheck, SafetyCheck } from './check.js';

/** Any write privilege the reader holds on a table or a column of one, in any schema. */
export async function noTableWrites({ client, role }: ReaderUnderCheck): Promise<SafetyCheck> {
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
  return {
    name: 'no INSERT/UPDATE/DELETE/TRUNCATE on any table',
    ok: writable.length === 0,
    ...(writable.length
      ? {
          detail: writable.map((w) => `${w.privileges} on ${w.target}`).join('; '),
          fix: writable.map((w) => `REVOKE ${w.privileges} ON ${w.target} FROM ${role};`).join(' '),
        }
      : {}),
  };
}
