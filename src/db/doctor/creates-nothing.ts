import { noneFound, type RoleUnderCheck, type SafetyCheck } from './check.js';

/** No CREATE on any schema, no temporary tables, no CREATE on the database: a role that makes nothing. */
export async function createsNothing({ client, role, database }: RoleUnderCheck): Promise<SafetyCheck[]> {
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
