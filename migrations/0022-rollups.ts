/**
 * Every rollup of the sales pack, made by the engine from its declaration (pack/rollups.ts,
 * SALES_ROLLUPS): the rollups of the orders, product_days, the derived fact order_categories with
 * category_days above it, and the region rollups; and the squash of the migrations that made them
 * before (squashed.ts). A fresh install builds only the engine's triggers.
 *
 * A database that ran some of the squashed migrations holds the rollups as they left it: 0005 to 0014
 * wrote their triggers by hand, 0015 to 0021 moved some of them to the engine. Whichever it holds is
 * taken out, found in the catalog by name: the reader's views of the rollups, the triggers that run a
 * rollup's function (a trigger of the database's own on those tables stays), the rollup tables and
 * the functions. Then every rollup is made again and filled from the base rows, in the migrator's one
 * transaction: no reader sees a rollup missing or empty, and the figures are the base rows', as they
 * were. At 2,000,000 orders this takes about as long as the rebuilds in BENCHMARKS.md, once.
 */
import { sql, type Kysely, type Migration } from 'kysely';
import { SALES_ROLLUPS } from '../pack/rollups.js';
import { rollupMigration } from '../src/db/rollups/index.js';

/** The rollups any squashed migration made, and 0013's touches of products. */
const EARLIER_TABLES = [
  'order_hours',
  'product_days',
  'region_days',
  'category_days',
  'order_categories',
  'product_touches',
  'region_hours',
  'region_product_days',
  'region_category_days',
];
/** Their functions: each named for its rollup, and 0009's touches. */
const EARLIER_FUNCTIONS = `^(${EARLIER_TABLES.join('|')})_|^(order_items_touch_order|orders_touch_customer)$`;

/** Takes out the rollups of whichever squashed migrations the database ran. */
async function dropEarlierRollups(db: Kysely<unknown>): Promise<void> {
  const views = await sql<{ name: string }>`
    select relname as name from pg_class
     where relnamespace = 'reporting'::regnamespace and relkind = 'v' and relname = any(${EARLIER_TABLES})`.execute(db);
  for (const { name } of views.rows) await sql`drop view ${sql.id('reporting', name)}`.execute(db);
  const functions = sql`select oid from pg_proc where pronamespace = 'sales'::regnamespace and proname ~ ${EARLIER_FUNCTIONS}`;
  const triggers = await sql<{ trigger: string; table: string }>`
    select t.tgname as trigger, c.relname as table from pg_trigger t join pg_class c on c.oid = t.tgrelid
     where not t.tgisinternal and c.relnamespace = 'sales'::regnamespace and t.tgfoid in (${functions})`.execute(db);
  for (const t of triggers.rows)
    await sql`drop trigger ${sql.id(t.trigger)} on ${sql.id('sales', t.table)}`.execute(db);
  const tables = await sql<{ name: string }>`
    select relname as name from pg_class
     where relnamespace = 'sales'::regnamespace and relkind = 'r' and relname = any(${EARLIER_TABLES})`.execute(db);
  for (const { name } of tables.rows) await sql`drop table ${sql.id('sales', name)}`.execute(db);
  const signatures = await sql<{ signature: string }>`
    select oid::regprocedure::text as signature from pg_proc where oid in (${functions})`.execute(db);
  // A signature as the catalog gives it, quoted where it must be (regprocedure's output).
  for (const { signature } of signatures.rows) await sql`drop function ${sql.raw(signature)}`.execute(db);
}

/**
 * The down of a migration that replaced hand-written rollup triggers: it refuses, in one line, since
 * the hand-written design it would have to make again is what the move was for.
 */
function cannotUndo(name: string): () => Promise<void> {
  return async () => {
    throw new Error(
      `${name} cannot be undone: it replaced the earlier rollups with the engine's; restore a backup taken before it`,
    );
  };
}

export function rollups(role: string): Migration {
  const generated = rollupMigration(SALES_ROLLUPS, role);
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await dropEarlierRollups(db);
      await generated.up(db);
    },
    down: cannotUndo('0022-rollups'),
  };
}
