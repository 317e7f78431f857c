/**
 * Issue 30, Wanted 8: the reader reads only the rollup columns the templates read. On a database
 * migrated from scratch and on one carried over from when every column was granted (a rollup made
 * before its declaration marked `unread`, as 0015 made them), judged by PostgreSQL's own privilege checks and by the reader's reads.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REGION_ROLLUPS } from '../../pack/rollups.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { adminKysely } from '../../src/db/connect.js';
import { rollupGrantsMigration } from '../../src/db/rollups/index.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

let scratch: ScratchDatabase;
let reader: pg.Client;
beforeAll(async () => {
  scratch = await createScratchDatabase('rollup_grants');
  reader = new pg.Client({ connectionString: scratch.readerUrl });
  await reader.connect();
});
afterAll(async () => {
  await reader?.end();
  await scratch?.drop();
});

/** Each rollup view's columns the reader may select, by PostgreSQL's privilege check. */
async function readable(): Promise<Record<string, string[]>> {
  const { rows } = await scratch.admin.query<{ view: string; columns: string[] }>(
    `select c.relname as view, array_agg(a.attname::text order by a.attname) as columns
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = 'reporting' and c.relname = any($1::text[])
        and has_column_privilege($2, c.oid, a.attnum, 'select')
      group by 1 order by 1`,
    [REGION_ROLLUPS.map((d) => d.name), DEFAULT_READER_ROLE],
  );
  return Object.fromEntries(rows.map((r) => [r.view, r.columns]));
}

const EXPECTED = {
  region_category_days: ['category', 'currency', 'day', 'order_count', 'region', 'revenue', 'status'],
  region_product_days: ['currency', 'day', 'product_id', 'region', 'revenue', 'status', 'units'],
};

describe('the reader on the generated rollups', () => {
  it('is granted every key and every measure a template reads, and not region_product_days.lines', async () => {
    expect(await readable()).toEqual(EXPECTED);
    await expect(reader.query('select lines from reporting.region_product_days limit 1')).rejects.toMatchObject({
      code: '42501',
    });
    await reader.query('select units, revenue from reporting.region_product_days limit 1');
  });

  it('loses the column on a database migrated when every column was granted, through rollupGrantsMigration', async () => {
    await scratch.admin.query(`grant select (lines) on reporting.region_product_days to "${DEFAULT_READER_ROLE}"`);
    await reader.query('select lines from reporting.region_product_days limit 1');
    const db = adminKysely(scratch.adminUrl);
    try {
      await rollupGrantsMigration(REGION_ROLLUPS, DEFAULT_READER_ROLE).up(db);
    } finally {
      await db.destroy();
    }
    expect(await readable()).toEqual(EXPECTED);
    await expect(reader.query('select lines from reporting.region_product_days limit 1')).rejects.toMatchObject({
      code: '42501',
    });
  });
});
