/**
 * A declared rollup's check: its non-empty rows against the same sums computed from the base rows
 * (the rebuild's query, statements.ts). Tests run it after writers, doctor and the contract suite can
 * run it on a live database; a rollup that drifted is a bug in the triggers or a write that went
 * round them (a trigger switched off), and its routing must not be trusted.
 */
import { CompiledQuery, type Kysely } from 'kysely';
import type { RollupDeclaration } from './declaration.js';
import { baseRowsQuery, rollupColumns, rollupNames, sizeColumn } from './base-rows.js';

/** How many rows differ between the rollup and its base rows (0: exact), counting each side's extra rows. */
export async function rollupDrift(db: Kysely<unknown>, d: RollupDeclaration): Promise<number> {
  const names = rollupNames(d);
  const columns = rollupColumns(d)
    .map((c) => `"${c}"`)
    .join(', ');
  const kept = `select ${columns} from ${names.table} where "${sizeColumn(d)}" <> 0`;
  const base = baseRowsQuery(d);
  const { rows } = await db.executeQuery<{ n: string }>(
    CompiledQuery.raw(
      `select count(*)::text as n from ((${kept} except all ${base}) union all (${base} except all ${kept})) d`,
    ),
  );
  return Number(rows[0]!.n);
}
