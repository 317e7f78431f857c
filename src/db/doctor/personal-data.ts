/**
 * The doctor's personal-data checks, driven by the packs' declarations (personalColumns) rather than by one
 * table: wherever a pack declares a name, email or phone column, the reader must not read the tables
 * behind it directly, and what it reads in the column itself must already be masked at the source. (A
 * declared table the reader reads directly is judged by its values, in the second check. Internal ids
 * are read as they are and tokenized by the server, so they are not sampled.)
 */
import type { PersonalKind } from '../../pack.js';
import type { ReaderUnderCheck, SafetyCheck } from './check.js';

/** What each kind of personal data looks like once masked at the source (PostgreSQL regular expressions). */
const MASKED: Partial<Record<PersonalKind, string>> = {
  email: '^(.\\*\\*\\*@.*|\\*\\*\\*)$',
  name: '^([^[:space:].]\\.)*$',
  phone: '^[0-9]{0,4}$',
};

/** How many values of each declared column are sampled: enough to catch a raw column, cheap on any table. */
const SAMPLE = 1000;

export async function personalDataChecks({ client, role, scope }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const { personal } = scope;
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

/** Column names that say a person's email, phone or name: a column so named is not taken as not personal unchecked. */
const LOOKS_PERSONAL: readonly { kind: PersonalKind; name: RegExp }[] = [
  { kind: 'email', name: /(^|_)e_?mail(_|$)/ },
  { kind: 'phone', name: /(^|_)(phone|mobile|telephone|tel|fax|msisdn)(_|$)/ },
  {
    kind: 'name',
    name: /(^|_)((first|last|full|given|family|middle|nick|person|contact|customer|client|user|manager|agent|requester|employee|owner)_?name|surname|forename)(_|$)/,
  },
];

/**
 * What a raw email or phone number looks like in a sampled value (PostgreSQL regular expressions), and
 * the share of the sample that must look so: one email is a leak, while digits and dashes are a phone
 * only when nearly every value reads like one (a code or a reference may, now and then).
 */
const RAW_VALUE: readonly { kind: PersonalKind; pattern: string; share: number }[] = [
  { kind: 'email', pattern: '^[^@[:space:]]+@[^@[:space:]]+\\.[^@[:space:]]+$', share: 0 },
  { kind: 'phone', pattern: '^(?![0-9]{4}-[0-9]{2}-[0-9]{2})\\+?[0-9][0-9 ().-]{5,}[0-9]$', share: 0.8 },
];

const article = (kind: PersonalKind): string => (kind === 'email' ? 'an email' : `a ${kind}`);

/** "Ada Lovelace", "Jean-Luc Picard", "Mary Ann O'Neil": two to four capitalized words. */
const PERSON_NAME =
  "^[[:upper:]][[:lower:]]+([-'][[:upper:]]?[[:lower:]]+)?( [[:upper:]][[:lower:]]*([-'][[:upper:]]?[[:lower:]]+)?){1,3}$";
/** The fewest distinct values a column's names are judged by. */
const PERSON_NAME_MIN_VALUES = 10;

/**
 * The line a pack adds to classify one column: as personal when its name says so (an id, whose entity
 * its name gives, or initials, a name's), else as not personal. Never the other way round: an id or
 * initials called not personal would leave raw.
 */
function classifyLine(key: string): string {
  const [relation, column] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1).toLowerCase()];
  const id = /^(?:(.+)_)?(id|uuid|guid)$/.exec(column);
  if (id) {
    // customer_id names a customer; a table's own id names a row of it (accounts: an account).
    const entity = id[1] ?? relation.slice(relation.lastIndexOf('.') + 1).replace(/s$/, '');
    return `personalColumns: '${key}': { kind: 'internal_id', entity: '${entity}' },`;
  }
  const kind = /(^|_)initials(_|$)/.test(column) ? 'name' : LOOKS_PERSONAL.find((l) => l.name.test(column))?.kind;
  return kind
    ? `personalColumns: '${key}': { kind: '${kind}' },`
    : `notPersonalColumns: '${key}', (or, if it is personal, personalColumns: '${key}': { kind: 'email' | 'phone' | 'name' | 'internal_id' },)`;
}

/**
 * Fail closed: every column the reader can read in the packs' schemas is classified by a pack, as
 * personal (with its kind) or as not personal, and never both; a column in neither is one no check
 * would mask. Then the columns declared not personal are held to that: a name or sampled values
 * that look like an email or a phone fail it; a name or values that look like a person's name are a
 * warning (a product or a team may be named like one). Values are sampled only when `sampleValues`
 * (doctor); the names are judged always.
 */
export async function classificationChecks({ client, scope, sampleValues }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const notPersonal = new Set(scope.notPersonal ?? []);
  const { rows: readable } = await client.query<{ key: string; target: string; col: string; text: boolean }>(
    `select n.nspname || '.' || c.relname || '.' || a.attname as key, format('%I.%I', n.nspname, c.relname) as target,
            format('%I', a.attname) as col,
            a.atttypid in ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'name'::regtype) as text
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p', 'v', 'm', 'f')
        and has_column_privilege(c.oid, a.attnum, 'SELECT')
      order by 1`,
    [scope.schemas],
  );
  const unclassified = readable.filter((r) => !(r.key in scope.personal) && !notPersonal.has(r.key));
  const both = [...notPersonal].filter((key) => key in scope.personal).sort();
  const classified = 'every readable column is classified by its pack';
  const checks: SafetyCheck[] = [
    unclassified.length === 0 && both.length === 0
      ? { name: classified, ok: true }
      : {
          name: classified,
          ok: false,
          detail: [
            ...(unclassified.length ? [`not classified: ${unclassified.map((r) => r.key).join(', ')}`] : []),
            ...(both.length ? [`declared both personal and not personal: ${both.join(', ')}`] : []),
          ].join('; '),
          fix: [
            ...unclassified.map((r) => `add to its pack's ${classifyLine(r.key)}`),
            ...both.map((key) => `remove '${key}' from its pack's notPersonalColumns`),
          ].join('; '),
        },
  ];

  const raw: string[] = [];
  const named: string[] = [];
  for (const row of readable.filter((r) => notPersonal.has(r.key) && !(r.key in scope.personal))) {
    const column = row.key.slice(row.key.lastIndexOf('.') + 1).toLowerCase();
    const byName = LOOKS_PERSONAL.find((l) => l.name.test(column));
    if (byName && byName.kind !== 'name') raw.push(`${row.key} is named like ${article(byName.kind)}`);
    else if (byName) named.push(`${row.key} is named like a person's name`);
    if (!sampleValues || !row.text) continue;
    // Names are told by their values only when there are many and nearly all read "Given Family": a
    // product or a team name rarely does, a list of people always. The distinct values of a sample, not
    // of the table: DISTINCT over a whole large table would cost a scan at every start.
    const { rows: people } = await client.query<{ sampled: number; names: number }>(
      `select count(*)::int as sampled, count(*) filter (where value ~ $1)::int as names
         from (select distinct value
                 from (select ${row.col}::text as value from ${row.target} where ${row.col} is not null limit ${SAMPLE}) as rows) as sample`,
      [PERSON_NAME],
    );
    const { sampled, names } = people[0]!;
    if (sampled >= PERSON_NAME_MIN_VALUES && names >= sampled * 0.8 && !byName) {
      named.push(`${row.key}: ${names} of ${sampled} distinct values sampled look like a person's name`);
    }
    const { rows } = await client.query<{ kind: PersonalKind; found: number; sampled: number }>(
      `select p.kind, count(*) filter (where sample.value ~ p.pattern)::int as found, count(*)::int as sampled
         from (select ${row.col}::text as value from ${row.target} where ${row.col} is not null limit ${SAMPLE}) as sample
         cross join unnest($1::text[], $2::text[]) as p (kind, pattern)
        group by p.kind order by p.kind`,
      [RAW_VALUE.map((v) => v.kind), RAW_VALUE.map((v) => v.pattern)],
    );
    for (const { kind, found, sampled: of } of rows) {
      const share = RAW_VALUE.find((v) => v.kind === kind)!.share;
      if (found > 0 && found >= of * share) {
        raw.push(`${row.key}: ${found} of ${of} sampled values look like ${article(kind)}`);
      }
    }
  }
  const lookalikes = 'columns declared not personal do not look personal';
  checks.push(
    raw.length > 0
      ? {
          name: lookalikes,
          ok: false,
          detail: [...raw, ...named].join('; '),
          fix: "move each to the pack's personalColumns with its kind, and mask it at the source in the view",
        }
      : named.length > 0
        ? {
            name: lookalikes,
            ok: true,
            warning: true,
            detail: named.join('; '),
            fix: "if it names a person, move it to the pack's personalColumns as { kind: 'name' } and mask it in the view",
          }
        : { name: lookalikes, ok: true },
  );
  return checks;
}
