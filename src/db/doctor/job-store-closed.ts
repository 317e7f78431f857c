import { JOB_SCHEMA } from '../job-role.js';
import { noneFound, type ReaderUnderCheck, type SafetyCheck } from './check.js';

/**
 * The reader has no right on the job store: the job table holds every caller's arguments and
 * results, and only the job role may read it.
 */
export async function noJobStoreAccess({ client, role }: ReaderUnderCheck): Promise<SafetyCheck> {
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
