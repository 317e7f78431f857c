/**
 * A product that changes category locks the orders of its items FOR NO KEY UPDATE, not FOR SHARE.
 * Moving an item between categories writes sales.order_categories, whose generated touch (0015,
 * region_category_days) then updates the order: two transactions recategorizing products that share
 * orders each held the share lock the other's update waited for, and at READ COMMITTED every such pair
 * ended in a deadlock. Locked for update from the start, in id order, the later waits for the earlier
 * to commit, as the touch would have made it wait anyway. The function is 0013's, changed in that one
 * clause where it stands in the database.
 */
import { sql, type Kysely, type Migration } from 'kysely';

const FUNCTION = 'sales.category_days_products()';
const SHARED = 'order by o.id for share of o';
const FOR_UPDATE = 'order by o.id for no key update of o';

/** Replaces one clause of the function's definition as the database holds it, refusing if it is not there once. */
async function replaceClause(db: Kysely<unknown>, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_functiondef(${FUNCTION}::regprocedure) as definition`.execute(db);
  const definition = rows[0]!.definition;
  if (definition.split(from).length !== 2) {
    throw new Error(`${FUNCTION} does not hold "${from}" once; it was changed by hand`);
  }
  await sql.raw(definition.replace(from, to)).execute(db);
}

export const categoryLock: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await replaceClause(db, SHARED, FOR_UPDATE);
  },
  async down(db: Kysely<unknown>): Promise<void> {
    await replaceClause(db, FOR_UPDATE, SHARED);
  },
};
