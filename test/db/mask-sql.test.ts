/**
 * The stored masks of src/db/mask-sql.ts, computed by PostgreSQL, against the server's own masks
 * (src/lib/masking.ts) on the same text: a pack that stores them returns what the server would.
 */
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompiler } from '../../src/db/connect.js';
import { initialsSql, lastFourDigitsSql, maskedEmailSql } from '../../src/db/mask-sql.js';
import { initials, lastFourDigits, maskEmail } from '../../src/lib/masking.js';
import { connectAdmin } from '../support/harness.js';

let admin: pg.Client;
beforeAll(async () => {
  admin = await connectAdmin();
});
afterAll(async () => {
  await admin.end();
});

const compiler = createCompiler();

async function stored(value: string): Promise<{ initials: string; email: string; last4: string }> {
  const query = sql<{ initials: string; email: string; last4: string }>`
    select ${initialsSql('v')} as initials, ${maskedEmailSql('v')} as email, ${lastFourDigitsSql('v')} as last4
      from (select cast(${value} as text) as v) as t`.compile(compiler);
  return (await admin.query(query.sql, [...query.parameters])).rows[0]!;
}

describe('stored masks', () => {
  it.each([
    'Jane van Doe',
    "Mary-Ann O'Neil",
    'ada  lovelace ',
    'Rosa Parks',
    'jane.doe@example.com',
    'x@sub.example.org',
    'no-at-sign',
    '+1 (555) 010-2345',
    '+44 20 7946 0018',
    '12',
  ])('%j is masked as the server masks it, and the server leaves the result as it is', async (value) => {
    const got = await stored(value);
    expect(got).toEqual({ initials: initials(value), email: maskEmail(value), last4: lastFourDigits(value) });
    expect([initials(got.initials), maskEmail(got.email), lastFourDigits(got.last4)]).toEqual([
      got.initials,
      got.email,
      got.last4,
    ]);
  });
});
