/**
 * What the daily rollup migrations (0007, 0008, 0013) share. Migrations that have run must keep meaning
 * the same thing, so these only ever gain new functions; an existing one is never changed.
 */
import { sql, type Kysely } from 'kysely';

/**
 * Trigger functions run as their owner, so a role allowed to write the sales tables needs no rights
 * on a rollup; nobody else may call them or their helpers (given with their argument types).
 */
export async function runAsOwner(
  db: Kysely<unknown>,
  triggerFunctions: readonly string[],
  helpers: readonly string[],
): Promise<void> {
  for (const fn of triggerFunctions) {
    await sql`alter function ${sql.id('sales', fn)}() security definer set search_path = pg_catalog, sales`.execute(db);
    await sql`revoke execute on function ${sql.id('sales', fn)}() from public`.execute(db);
  }
  for (const helper of helpers) await sql`revoke execute on function ${sql.raw(helper)} from public`.execute(db);
}

/** A truncate of any of the tables empties sales.<rollup>, through sales.<rollup>_truncate(). */
export async function emptiedWith(db: Kysely<unknown>, rollup: string, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    await sql`
      create trigger ${sql.id(`${table}_${rollup}_truncate`)} after truncate on ${sql.id('sales', table)}
      for each statement execute function ${sql.id('sales', `${rollup}_truncate`)}()`.execute(db);
  }
}

export async function dropEmptiedWith(db: Kysely<unknown>, rollup: string, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    await sql`drop trigger ${sql.id(`${table}_${rollup}_truncate`)} on ${sql.id('sales', table)}`.execute(db);
  }
}

/** reporting.<rollup>: its non-empty rows, readable by the reader in exactly these columns. */
export async function exposeToReader(
  db: Kysely<unknown>,
  rollup: string,
  columns: readonly string[],
  nonEmpty: string,
  reader: string,
): Promise<void> {
  const list = sql.join(columns.map((column) => sql.id(column)));
  await sql`
    create view ${sql.id('reporting', rollup)} as
    select ${list} from ${sql.id('sales', rollup)} where ${sql.raw(nonEmpty)}`.execute(db);
  await sql`revoke all on ${sql.id('reporting', rollup)} from public`.execute(db);
  await sql`grant select (${list}) on ${sql.id('reporting', rollup)} to ${sql.id(reader)}`.execute(db);
}

/** A rollup's row trigger: on sales.<table>, fired `when` (`after update of id, region`), running sales.<fn>(). */
export interface RowTrigger {
  readonly table: string;
  readonly name: string;
  readonly when: string;
  readonly fn: string;
}

export async function createRowTriggers(db: Kysely<unknown>, triggers: readonly RowTrigger[]): Promise<void> {
  for (const { table, name, when, fn } of triggers) {
    await sql`
      create trigger ${sql.id(name)} ${sql.raw(when)}
      on ${sql.id('sales', table)} for each row execute function ${sql.id('sales', fn)}()`.execute(db);
  }
}

export async function dropRowTriggers(db: Kysely<unknown>, triggers: readonly RowTrigger[]): Promise<void> {
  for (const { table, name } of triggers)
    await sql`drop trigger ${sql.id(name)} on ${sql.id('sales', table)}`.execute(db);
}

/** Drops sales.<rollup>_rebuild() and the trigger functions and helpers given to runAsOwner. */
export async function dropRollupFunctions(
  db: Kysely<unknown>,
  rollup: string,
  triggerFunctions: readonly string[],
  helpers: readonly string[],
): Promise<void> {
  for (const fn of [...triggerFunctions, `${rollup}_rebuild`]) {
    await sql`drop function ${sql.id('sales', fn)}()`.execute(db);
  }
  for (const helper of helpers) await sql`drop function ${sql.raw(helper)}`.execute(db);
}
