/**
 * The doctor's personal-data checks, driven by the packs' declarations (personalColumns) rather than by one
 * table: wherever a pack declares a name, email or phone column, the reader must not read the tables
 * behind it directly, and what it reads in the column itself must already be masked at the source. (A
 * declared table the reader reads directly is judged by its values, in the second check. Internal ids
 * are read as they are and tokenized by the server, so they are not sampled.)
 */
import type pg from 'pg';
import type { PersonalColumn, PersonalKind } from '../pack.js';
import type { SafetyCheck } from './doctor.js';

/** What each kind of personal data looks like once masked at the source (PostgreSQL regular expressions). */
const MASKED: Partial<Record<PersonalKind, string>> = {
  email: '^(.\\*\\*\\*@.*|\\*\\*\\*)$',
  name: '^([^[:space:].]\\.)*$',
  phone: '^[0-9]{0,4}$',
};

/** How many values of each declared column are sampled: enough to catch a raw column, cheap on any table. */
const SAMPLE = 1000;

export async function personalDataChecks(
  client: pg.Client,
  role: string,
  personal: Readonly<Record<string, PersonalColumn>>,
): Promise<SafetyCheck[]> {
  // Internal ids are read as they are and tokenized by the server; the other kinds are masked at the source.
  const declared = Object.entries(personal).flatMap(([name, column]) => {
    const pattern = MASKED[column.kind];
    if (!pattern) return [];
    const [schema = '', table = '', columnName = ''] = name.split('.');
    return [{ schema, table, column: columnName, pattern }];
  });
  const arrays = [declared.map((d) => d.schema), declared.map((d) => d.table), declared.map((d) => d.column)];

  // The tables behind every view that masks a declared column, followed through views of views: the raw data.
  const { rows: behind } = await client.query<{ target: string }>(
    `with recursive declared (oid) as (
       select c.oid from unnest($1::text[], $2::text[]) as d (schema_name, table_name)
         join pg_namespace n on n.nspname = d.schema_name
         join pg_class c on c.relnamespace = n.oid and c.relname = d.table_name),
     reads (oid) as (
       select oid from declared
       union
       select dep.refobjid from reads
         join pg_rewrite r on r.ev_class = reads.oid
         join pg_depend dep on dep.classid = 'pg_rewrite'::regclass and dep.objid = r.oid
                           and dep.refclassid = 'pg_class'::regclass and dep.refobjid <> reads.oid)
     select format('%I.%I', n.nspname, c.relname) as target
       from reads join pg_class c on c.oid = reads.oid join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p', 'm', 'f') and c.oid not in (select oid from declared)
        and (has_table_privilege(c.oid, 'SELECT')
             or exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
                          and has_column_privilege(c.oid, a.attnum, 'SELECT')))
      order by 1`,
    [arrays[0], arrays[1]],
  );
  const checks: SafetyCheck[] = [
    behind.length === 0
      ? { name: 'cannot read raw personal data behind the declared columns', ok: true }
      : {
          name: 'cannot read raw personal data behind the declared columns',
          ok: false,
          detail: behind.map((b) => b.target).join(', '),
          fix: behind.map((b) => `REVOKE ALL ON ${b.target} FROM PUBLIC, ${role};`).join(' '),
        },
  ];

  // Each declared column the reader can read, sampled: masked at the source, or it is read raw.
  const { rows: readable } = await client.query<{ i: string; target: string; col: string }>(
    `select d.i, format('%I.%I', n.nspname, c.relname) as target, format('%I', a.attname) as col
       from unnest($1::text[], $2::text[], $3::text[]) with ordinality as d (schema_name, table_name, column_name, i)
       join pg_namespace n on n.nspname = d.schema_name
       join pg_class c on c.relnamespace = n.oid and c.relname = d.table_name
       join pg_attribute a on a.attrelid = c.oid and a.attname = d.column_name and a.attnum > 0 and not a.attisdropped
      where has_column_privilege(c.oid, a.attnum, 'SELECT')
      order by d.i`,
    arrays,
  );
  const raw: { target: string; column: string; found: number }[] = [];
  for (const row of readable) {
    const { pattern } = declared[Number(row.i) - 1]!;
    const { rows } = await client.query<{ unmasked: number }>(
      `select count(*)::int as unmasked
         from (select ${row.col}::text as value from ${row.target} where ${row.col} is not null limit ${SAMPLE}) as sample
        where value !~ $1`,
      [pattern],
    );
    if (rows[0]!.unmasked > 0) raw.push({ target: row.target, column: row.col, found: rows[0]!.unmasked });
  }
  checks.push(
    raw.length === 0
      ? { name: 'declared personal columns are masked at the source', ok: true }
      : {
          name: 'declared personal columns are masked at the source',
          ok: false,
          detail: raw
            .map((r) => `${r.target}.${r.column}: ${r.found} of at most ${SAMPLE} values read unmasked`)
            .join('; '),
          fix: [...new Set(raw.map((r) => r.target))]
            .map((target) => `REVOKE SELECT ON ${target} FROM PUBLIC, ${role};`)
            .concat('then mask those columns at the source, in the view, and grant it again')
            .join(' '),
        },
  );
  return checks;
}
