import type { Kysely } from 'kysely';
import type { DeclarationProbe } from '../../registry/types.js';
import type { RollupDeclaration } from '../rollups/index.js';
import { readerColumns } from '../rollups/base-rows.js';
import { MAX_RANGE_DAYS } from '../../lib/date-range.js';
import type { SafetyCheck, ReaderUnderCheck } from './check.js';

/** The check's name in doctor's report. */
export const DECLARATIONS_CHECK =
  'every declaration holds in the database: sources readable, times timestamptz, labels bounded, text not read as a date';
/** PostgreSQL's type oid of timestamptz. */
const TIMESTAMPTZ = 1184;
/** How long a probe waits for a lock a writer holds before it is left unchecked. */
const PROBE_LOCK_TIMEOUT_MS = 200;

/**
 * The packs' declarations asked of the database as the reader (src/registry/types.ts, DeclarationProbe):
 * each declared source's rows, read with LIMIT 0, so that a source the reader may not read, or a time
 * that is not a timestamptz (a date, a timestamp without zone: every hour would be midnight, every day
 * the server's), stops the server at start-up instead of failing every call. A failure here is the pack
 * author's mistake, not the role's: serve refuses it in one line (see SafetyCheck.declaration).
 */
export async function declaredSources({ client, scope }: ReaderUnderCheck): Promise<SafetyCheck[]> {
  const name = DECLARATIONS_CHECK;
  const found: SafetyCheck[] = [];
  const unchecked: string[] = [];
  for (const probe of scope.probes ?? []) {
    let fields: { name: string; dataTypeID: number }[];
    let rows: Record<string, unknown>[];
    try {
      // Planning the statement takes the relations' weakest lock: a writer holding one exclusively (a
      // migration, a LOCK TABLE) must not hold up the start, so the probe soon gives up, unchecked.
      // A rollup and its base rows are read in one snapshot, so that a write between the two reads
      // is in both or in neither.
      const isolation = probe.agrees ? ' isolation level repeatable read' : '';
      await client.query(`begin${isolation}; set local lock_timeout = ${PROBE_LOCK_TIMEOUT_MS}`);
      if (probe.agrees !== undefined) {
        const disagreement = await disagreementOf(client, probe.statement, probe.agrees);
        await client.query('commit');
        if (disagreement !== undefined) {
          found.push({
            name,
            ok: false,
            declaration: true,
            detail: `${probe.declaration}: its figures disagree with the base rows' over ${disagreement}`,
            fix: probe.fix ?? '',
          });
        }
        continue;
      }
      if (probe.textParameters !== undefined) {
        const dated = await datedParameters(client, probe.statement.sql, probe.textParameters);
        await client.query('commit');
        for (const { field, type } of dated) {
          found.push({
            name,
            ok: false,
            declaration: true,
            detail: `${probe.declaration}: input field ${field} is text that its SQL reads as a ${type}, so it escapes the engine's range of at most ${MAX_RANGE_DAYS} days`,
            fix: probe.fix ?? '',
          });
        }
        continue;
      }
      ({ fields, rows } = await client.query({ text: probe.statement.sql, values: [...probe.statement.parameters] }));
      await client.query('commit');
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      const { code, message } = err as { code?: string; message?: string };
      // Only what the declaration itself gets wrong (class 42: a relation, column or right it lacks) is
      // its mistake; a lock, a timeout or a lost connection says nothing about it.
      if (!code?.startsWith('42')) {
        unchecked.push(`${probe.declaration} (${message ?? String(err)})`);
        continue;
      }
      found.push({
        name,
        ok: false,
        declaration: true,
        ...(code === '42501' ? { permission: true } : {}),
        detail: `${probe.declaration}: the reader cannot read its rows (${message ?? String(err)})`,
        fix:
          code === '42501'
            ? 'grant the reader SELECT on what the source reads, in a migration of the pack, or read it through a view the reader may read'
            : (probe.fix ?? "change the source's rows() to what the database has"),
      });
      continue;
    }
    const counted = Number(rows[0]?.n ?? 0);
    if (probe.atMost !== undefined && counted > probe.atMost.count) {
      found.push({
        name,
        ok: false,
        declaration: true,
        detail: `${probe.declaration}: ${probe.atMost.what} has more than ${probe.atMost.count} values, its declared atMost`,
        fix: probe.atMost.fix,
      });
      continue;
    }
    const time = fields.find((f) => f.name === 'time');
    if (probe.time === undefined || time === undefined || time.dataTypeID === TIMESTAMPTZ) continue;
    const { rows: types } = await client.query<{ type: string }>('select format_type($1::oid, null) as type', [
      time.dataTypeID,
    ]);
    found.push({
      name,
      ok: false,
      declaration: true,
      detail: `${probe.declaration}: its time ${probe.time} is a ${types[0]!.type}, not a timestamp with time zone`,
      fix: "expose it as a timestamptz in the view the reader reads (a timestamp held in UTC: <column> at time zone 'UTC'); a date has no hour to group by",
    });
  }
  if (found.length > 0) return found;
  return [
    unchecked.length === 0
      ? { name, ok: true }
      : { name, ok: true, warning: true, detail: `not checked now: ${unchecked.join('; ')}` },
  ];
}

/** The types of a day, an instant or a span of time: a text input read as one is a date in disguise. */
const DATE_TYPES = /^(date|time(stamp)?( with(out)? time zone)?|interval|(date|ts|tstz)(multi)?range)$/;
/** Text turned into a date by a function or a second cast: the parameter itself stays text. */
const datedText = (position: number): RegExp =>
  new RegExp(
    `(to_date|to_timestamp|make_date|make_timestamptz?)\\s*\\(\\s*\\$${position}(?!\\d)|\\$${position}(?!\\d)(\\s*::\\s*[a-z ]+)*\\s*::\\s*(date|time|timestamp|timestamptz|interval)\\b`,
    'i',
  );

/**
 * The text parameters a statement reads as a date: PostgreSQL, asked to prepare it, gives the type it
 * infers for each ($1 compared with a timestamptz column is a timestamptz; cast, its cast's type), and
 * a function or a second cast that turns text into a date is read from the text.
 */
async function datedParameters(
  client: ReaderUnderCheck['client'],
  text: string,
  parameters: NonNullable<DeclarationProbe['textParameters']>,
): Promise<{ field: string; type: string }[]> {
  await client.query(`prepare querygate_text_probe as ${text}`);
  let rows: { types: string[] }[];
  try {
    ({ rows } = await client.query<{ types: string[] }>(
      "select parameter_types::text[] as types from pg_prepared_statements where name = 'querygate_text_probe'",
    ));
  } finally {
    await client.query('deallocate querygate_text_probe');
  }
  const types = rows[0]?.types ?? [];
  return parameters.flatMap(({ field, position }) => {
    const type = types[position - 1] ?? 'unknown';
    if (DATE_TYPES.test(type)) return [{ field, type }];
    const cast = datedText(position).exec(text);
    return cast ? [{ field, type: cast[3]?.toLowerCase() ?? 'date' }] : [];
  });
}

type Statement = DeclarationProbe['statement'];
const rowsOf = async (client: ReaderUnderCheck['client'], statement: Statement): Promise<Record<string, unknown>[]> =>
  (await client.query({ text: statement.sql, values: [...statement.parameters] })).rows;

/** A figure as a number when it is one, so that 10.5 and 10.50 agree. */
const figure = (value: unknown): string =>
  typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? String(Number(value)) : JSON.stringify(value ?? null);

/**
 * The first call whose rollup and base rows differ, with the first figure that does ("<metric> 744
 * against 1231"), or undefined where every call agrees or there is no data yet.
 */
async function disagreementOf(
  client: ReaderUnderCheck['client'],
  newest: Statement,
  agrees: NonNullable<DeclarationProbe['agrees']>,
): Promise<string | undefined> {
  const newestValue = (await rowsOf(client, newest))[0]?.data_through;
  const through = typeof newestValue === 'string' ? new Date(newestValue) : newestValue;
  if (!(through instanceof Date) || Number.isNaN(through.getTime())) return undefined;
  for (const { call, rollup, base } of agrees(through)) {
    const [mine, theirs] = [await rowsOf(client, rollup), await rowsOf(client, base)];
    if (mine.length !== theirs.length) return `${call}: ${mine.length} rows against ${theirs.length}`;
    for (const [i, row] of mine.entries()) {
      const other = theirs[i]!;
      const column = Object.keys(row).find((k) => figure(row[k]) !== figure(other[k]));
      if (column === undefined) continue;
      const group = Object.values(row).filter((v) => typeof v === 'string' && !/^-?\d/.test(v));
      return `${call}${group.length > 0 ? `, in the row of ${group.join(', ')}` : ''}: ${column} ${figure(row[column])} against ${figure(other[column])}`;
    }
  }
  return undefined;
}

/** What a declaration changed without its migration is fixed by: the rollup made again from it. */
export const REMAKE_FIX =
  'a changed rollup declaration needs a new migration of the pack that drops the rollup and makes it again (rollupMigration); then run querygate migrate';

/**
 * The reader's view of a rollup, read with LIMIT 0 at start-up, as declaredSources reads a source: a
 * declaration changed without a migration names a column its view lacks, and the server refuses to
 * serve the old table under the new declaration.
 */
export function rollupProbe(db: Kysely<unknown>, d: RollupDeclaration): DeclarationProbe {
  return {
    declaration: `rollup ${d.readerSchema}.${d.name}`,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    statement: (db as Kysely<any>)
      .selectFrom(`${d.readerSchema}.${d.name}`)
      .select(readerColumns(d))
      .limit(0)
      .compile(),
    fix: REMAKE_FIX,
  };
}
