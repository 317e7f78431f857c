import type pg from 'pg';
import type { ReaderUnderCheck, SafetyCheck } from './check.js';

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

/** The writes tried for real, in a default transaction and in a READ WRITE one: each must be refused. */
export async function writesRefused({ client, role, scope }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const probes = await writeProbes(client, scope.schemas);
  return [
    await tryWrite(client, 'a write in a default transaction fails', 'begin', role, probes),
    await tryWrite(client, 'a write in a READ WRITE transaction fails', 'begin read write', role, probes),
  ];
}
