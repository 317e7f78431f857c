import type { Kysely } from 'kysely';
import type { DeclarationProbe } from '../../registry/types.js';
import type { RollupDeclaration } from '../rollups/index.js';
import { readerColumns } from '../rollups/statements.js';
import type { SafetyCheck, ReaderUnderCheck } from './check.js';

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
  const name = 'every declared source is readable by the reader, its time a timestamptz';
  const found: SafetyCheck[] = [];
  const unchecked: string[] = [];
  for (const probe of scope.probes ?? []) {
    let fields: { name: string; dataTypeID: number }[];
    try {
      // Planning the statement takes the relations' weakest lock: a writer holding one exclusively (a
      // migration, a LOCK TABLE) must not hold up the start, so the probe soon gives up, unchecked.
      await client.query(`begin; set local lock_timeout = ${PROBE_LOCK_TIMEOUT_MS}`);
      ({ fields } = await client.query({ text: probe.statement.sql, values: [...probe.statement.parameters] }));
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
        detail: `${probe.declaration}: the reader cannot read its rows (${message ?? String(err)})`,
        fix:
          code === '42501'
            ? 'grant the reader SELECT on what the source reads, in a migration of the pack, or read it through a view the reader may read'
            : (probe.fix ?? "change the source's rows() to what the database has"),
      });
      continue;
    }
    const time = fields.find((f) => f.name === 'time');
    if (probe.time === undefined || time === undefined || time.dataTypeID === TIMESTAMPTZ) continue;
    const { rows } = await client.query<{ type: string }>('select format_type($1::oid, null) as type', [
      time.dataTypeID,
    ]);
    found.push({
      name,
      ok: false,
      declaration: true,
      detail: `${probe.declaration}: its time ${probe.time} is a ${rows[0]!.type}, not a timestamp with time zone`,
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
