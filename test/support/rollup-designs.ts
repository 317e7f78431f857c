/**
 * The rollups as the squashed migrations left a database (migrations/squashed.ts): each design is
 * the catalog of a database migrated by those migrations up to a point, captured before they were
 * squashed (test/fixtures/rollups-at-<number>.json: the rollup tables, functions, views, the reader's
 * grants and the triggers, as PostgreSQL gave them back). Made again on a database migrated to the
 * same point, it is the database a user who migrated then holds, for 0022 to carry forward.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { DEFAULT_READER_ROLE } from '../../src/config.js';

export type RollupDesign = '0009-rollup-isolation' | '0012-stored-masks' | '0021-product-days';

/** Makes the design in the database of `admin`, migrated to `upTo` (createScratchDatabase's upTo), in one transaction. */
export async function makeRollupDesign(admin: pg.Client, upTo: RollupDesign): Promise<void> {
  const file = fileURLToPath(new URL(`../fixtures/rollups-at-${upTo.slice(0, 4)}.json`, import.meta.url));
  const captured = JSON.parse(readFileSync(file, 'utf8')) as { upTo: string; statements: string[] };
  if (captured.upTo !== upTo) throw new Error(`${file} holds the design at ${captured.upTo}, not ${upTo}`);
  await admin.query('begin');
  try {
    for (const statement of captured.statements) {
      await admin.query(statement.replaceAll('{reader}', `"${DEFAULT_READER_ROLE}"`));
    }
    await admin.query('commit');
  } catch (err) {
    await admin.query('rollback');
    throw err;
  }
}
