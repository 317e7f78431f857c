/**
 * A declared rollup's rebuilds: the whole rollup made again from its base rows (or, for a derived
 * fact, mended where it differs), and a range rebuild: a month (any range of whole hours or days) of
 * the rollup made again from its own base rows, without the rest. rollupMigration makes them beside
 * the rollup (statements.ts makes the rest).
 */
import { baseRowsQuery, q, rollupColumns, rollupNames, timeKey } from './base-rows.js';
import type { RollupDeclaration } from './declaration.js';

/** The argument types of the range rebuild, as a signature names them. */
export const RANGE_REBUILD_ARGS = '(timestamptz, timestamptz)';

/**
 * The range rebuild, `<name>_rebuild_range(from, before)`, of a rollup with a time key: the rows of
 * [from, before), each bound cut down to the key's grain (a month: its first midnights), made again
 * from the base rows of those hours or days alone, so that a month is mended without reading or
 * writing the others. It locks the rollup (EXCLUSIVE: readers read on, writers of the rollup wait) and
 * only it: no base row is locked. Writers that changed the rollup before it are waited for, and their
 * rows are read as committed; writers after it wait, then add to the rebuilt rows. That holds at READ
 * COMMITTED, where each statement reads what has committed; on an older snapshot the rebuild would miss
 * a writer it waited for, so at any other level it refuses. Returns the rows it wrote.
 */
export function rangeRebuildStatements(d: RollupDeclaration): string[] {
  const key = timeKey(d);
  if (key === undefined) return [];
  const names = rollupNames(d);
  const columns = rollupColumns(d).map(q).join(', ');
  const k = q(key.name);
  const signature = `${names.rebuildRange}${RANGE_REBUILD_ARGS}`;
  return [
    `create or replace function ${names.rebuildRange}(p_from timestamptz, p_before timestamptz) returns bigint
     language plpgsql as $$
     declare
       v_from timestamptz := date_trunc('${key.truncate!}', p_from, 'UTC');
       v_before timestamptz := date_trunc('${key.truncate!}', p_before, 'UTC');
       n bigint;
     begin
       if current_setting('transaction_isolation') <> 'read committed' then
         raise exception 'run ${d.name}_rebuild_range at READ COMMITTED: on an older snapshot it would miss a writer it waits for';
       end if;
       lock table ${names.table} in exclusive mode;
       delete from ${names.table} where ${k} >= v_from and ${k} < v_before;
       insert into ${names.table} (${columns})
       ${baseRowsQuery(d, { from: 'v_from', before: 'v_before' })} order by ${d.keys.map((_, i) => i + 1).join(', ')};
       get diagnostics n = row_count;
       return n;
     end $$`,
    `alter function ${signature} security definer set search_path = pg_catalog, ${q(d.schema)}`,
    `revoke execute on function ${signature} from public`,
  ];
}

/** Unmakes it; if exists, as a later migration that brought it to older rollups may have taken it out first. */
export function rangeRebuildDropStatements(d: RollupDeclaration): string[] {
  return timeKey(d) ? [`drop function if exists ${rollupNames(d).rebuildRange}${RANGE_REBUILD_ARGS}`] : [];
}

/** The whole rollup made again from its base rows, in key order, so that a range of one region's days lies on few pages. */
export function rebuildStatement(d: RollupDeclaration): string {
  const names = rollupNames(d);
  return `create function ${names.rebuild}() returns void language sql as $$
       delete from ${names.table};
       insert into ${names.table} (${rollupColumns(d).map(q).join(', ')})
       ${baseRowsQuery(d)} order by ${d.keys.map((_, i) => i + 1).join(', ')};
     $$`;
}

/**
 * A derived fact's rebuild mends it: only the rows that differ from the base rows are deleted,
 * changed or added, and the rollups above follow those through their own triggers (a rewrite of every
 * row would move, touch and lock every order). It locks the table (EXCLUSIVE: its writers wait, so
 * none is overwritten) and runs at READ COMMITTED, where its statement reads what committed before it.
 */
export function mendStatement(d: RollupDeclaration): string {
  const names = rollupNames(d);
  const columns = rollupColumns(d).map(q);
  const keys = d.keys.map((k) => q(k.name));
  const measures = d.measures.map((m) => q(m.name));
  const same = (a: string, b: string): string => keys.map((k) => `${a}.${k} = ${b}.${k}`).join(' and ');
  return `create function ${names.rebuild}() returns void language plpgsql as $$
     begin
       if current_setting('transaction_isolation') <> 'read committed' then
         raise exception 'run ${d.name}_rebuild at READ COMMITTED: on an older snapshot it would undo a writer it waits for';
       end if;
       lock table ${names.table} in exclusive mode;
       with b (${columns.join(', ')}) as materialized (${baseRowsQuery(d)}),
       gone as (delete from ${names.table} t where not exists (select 1 from b where ${same('b', 't')})),
       changed as (
         update ${names.table} t set ${measures.map((m) => `${m} = b.${m}`).join(', ')} from b
          where ${same('b', 't')} and (${measures.map((m) => `t.${m}`).join(', ')}) is distinct from (${measures.map((m) => `b.${m}`).join(', ')}))
       insert into ${names.table} (${columns.join(', ')})
       select * from b where not exists (select 1 from ${names.table} t where ${same('b', 't')});
     end $$`;
}
