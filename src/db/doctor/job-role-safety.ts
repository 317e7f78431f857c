import { JOB_SCHEMA } from '../job-role.js';
import { noneFound, type ReaderScope, type SafetyCheck } from './check.js';
import { createsNothing } from './creates-nothing.js';
import { leafRoleChecks } from './leaf-role.js';
import { ownsNothing } from './owns-nothing.js';
import { connectAsRole } from './role-connection.js';

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
    const { under, checks } = await leafRoleChecks(client);
    const { role } = under;
    checks.push(await ownsNothing(under));
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
    checks.push(...(await createsNothing(under)));
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
