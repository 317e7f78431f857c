import { noneFound, type ReaderUnderCheck, type SafetyCheck } from './check.js';

/** Any relation (or column of one) the reader can SELECT outside the packs' schemas. */
export async function readsOnlyPackSchemas({ client, role, scope }: ReaderUnderCheck): Promise<SafetyCheck> {
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
  return noneFound(
    `reads nothing outside the ${scope.schemas.join(', ')} schema${scope.schemas.length > 1 ? 's' : ''}`,
    readable.map((t) => t.target),
    (target) => `REVOKE ALL ON ${target} FROM PUBLIC, ${role};`,
  );
}
