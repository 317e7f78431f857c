/**
 * The steps every rollup is held to, written once: a rollup is kept in the same transaction as the
 * rows it sums (so a rollback takes its change back), its rebuild from those rows gives what its
 * triggers kept, and a truncate of those rows empties it. Each suite says how to read its rollup
 * (`state`, which compares equal when nothing changed) and what the changes and truncates are.
 */
import type pg from 'pg';
import { expect } from 'vitest';

export interface CheckedRollup<State> {
  /** Its admin connection (a function: suites connect in beforeAll). */
  readonly admin: () => pg.Client;
  /** What the rollup holds, and whatever the suite compares with it, to tell a change. */
  readonly state: () => Promise<State>;
}

/**
 * The statements, run in a transaction rolled back, leave the rollup as it was; with `visibleInside`,
 * they must change it while the transaction lasts (so the check cannot pass by changing nothing).
 */
export async function expectRolledBack<State>(
  rollup: CheckedRollup<State>,
  statements: readonly string[],
  options: { readonly visibleInside?: boolean } = {},
): Promise<void> {
  const before = await rollup.state();
  await rollup.admin().query('begin');
  try {
    for (const statement of statements) await rollup.admin().query(statement);
    if (options.visibleInside) expect(await rollup.state()).not.toEqual(before);
  } finally {
    await rollup.admin().query('rollback');
  }
  expect(await rollup.state()).toEqual(before);
}

/** sales.<name>_rebuild() gives what the triggers kept. */
export async function expectRebuildKeeps<State>(rollup: CheckedRollup<State>, name: string): Promise<void> {
  const before = await rollup.state();
  await rollup.admin().query(`select sales.${name}_rebuild()`);
  expect(await rollup.state()).toEqual(before);
}

/**
 * Each truncate leaves the rollup as `empty` says. With `rolledBack`, each runs in a transaction
 * rolled back, and the rollup is as it was afterwards, so that later checks keep their rows.
 */
export async function expectEmptiedBy<State>(
  rollup: CheckedRollup<State>,
  truncates: readonly string[],
  empty: (state: State) => unknown,
  expected: unknown,
  options: { readonly rolledBack?: boolean } = {},
): Promise<void> {
  const before = options.rolledBack ? await rollup.state() : undefined;
  for (const truncate of truncates) {
    if (options.rolledBack) await rollup.admin().query('begin');
    try {
      await rollup.admin().query(truncate);
      expect(empty(await rollup.state()), truncate).toEqual(expected);
    } finally {
      if (options.rolledBack) await rollup.admin().query('rollback');
    }
  }
  if (options.rolledBack) expect(await rollup.state()).toEqual(before);
}
