/** The demo data: deterministic for a given order count and day, consistent, and refused over real data. */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { withDatabase } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { seedDatabase } from '../../pack/seed.js';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { silentLogger } from '../../src/lib/logger.js';
import { connectAdmin } from '../support/harness.js';
import { createClosedDatabase } from '../support/scratch.js';
import { salesPack } from '../../pack/index.js';

const DATABASES = ['seed_check_a', 'seed_check_b'];
let admin: pg.Client;

beforeAll(async () => {
  admin = await connectAdmin();
  for (const name of DATABASES) {
    await admin.query(`drop database if exists ${name}`);
    await createClosedDatabase(admin, name);
    await migrateToLatest(withDatabase(inject('adminUrl'), name), salesPack, DEFAULT_READER_ROLE, silentLogger);
  }
});
afterAll(async () => {
  for (const name of DATABASES) await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
});

async function checksum(database: string): Promise<{ orders: string; items: string; customers: string; n: number }> {
  const client = new pg.Client({ connectionString: withDatabase(inject('adminUrl'), database) });
  await client.connect();
  try {
    const { rows } = await client.query(`select
      (select md5(string_agg(o::text, ',' order by id)) from sales.orders o) as orders,
      (select md5(string_agg(i::text, ',' order by order_id, product_id)) from sales.order_items i) as items,
      (select md5(string_agg(c::text, ',' order by id)) from sales.customers c) as customers,
      (select count(*)::int from sales.orders) as n`);
    return rows[0];
  } finally {
    await client.end();
  }
}

const url = (name: string): string => withDatabase(inject('adminUrl'), name);

describe('seed', () => {
  it('gives the same rows for the same order count and day', async () => {
    await seedDatabase(url('seed_check_a'), { orders: 1500, until: '2024-12-31', replace: false }, silentLogger);
    await seedDatabase(url('seed_check_b'), { orders: 1500, until: '2024-12-31', replace: false }, silentLogger);
    const [a, b] = [await checksum('seed_check_a'), await checksum('seed_check_b')];
    expect(a.n).toBe(1500);
    expect(a).toEqual(b);
  });

  it('refuses to seed over existing orders unless told to replace them', async () => {
    await expect(
      seedDatabase(url('seed_check_b'), { orders: 10, until: '2024-12-31', replace: false }, silentLogger),
    ).rejects.toThrow(/already holds orders; pass --replace/);
    expect((await checksum('seed_check_b')).n).toBe(1500);
  });

  it('replaces the data when told, and a different count gives different rows', async () => {
    const before = await checksum('seed_check_a');
    await seedDatabase(url('seed_check_b'), { orders: 1501, until: '2024-12-31', replace: true }, silentLogger);
    const after = await checksum('seed_check_b');
    expect(after.n).toBe(1501);
    expect(after.orders).not.toBe(before.orders);
  });

  it('spreads orders over the 730 days up to the given day, totals matching items', async () => {
    const client = new pg.Client({ connectionString: url('seed_check_a') });
    await client.connect();
    try {
      const { rows } = await client.query(`select
        min(ordered_at) >= timestamptz '2023-01-02 00:00:00+00' as starts_in_span,
        max(ordered_at) < timestamptz '2025-01-01 00:00:00+00' as ends_in_span,
        (select count(*) from sales.orders o where o.total_amount <>
           (select sum(quantity * unit_price) from sales.order_items i where i.order_id = o.id))::int as mismatched
        from sales.orders`);
      expect(rows[0]).toEqual({ starts_in_span: true, ends_in_span: true, mismatched: 0 });
    } finally {
      await client.end();
    }
  });
});
