/**
 * Issue 9: the masks of reporting.customers are stored with each customer (migration 0012) instead of
 * computed on every read. What the reader reads must be what the view of migration 0002 computed, for
 * any text, and follow every change of a customer. A database of the test's own, for hand-made rows.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customersMaskedOnRead } from '../../migrations/0002-reporting-views.js';
import { createCompiler } from '../../src/db/connect.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

/** Migration 0002's masks, computed as it read them: the reference the stored columns must equal. */
const MASKS_OF_0002 = `select id::int as id, name_initials, email_masked, phone_last4
  from (${customersMaskedOnRead.compile(createCompiler()).sql}) as c order by id`;

const NAMES = [
  'Jane van Doe',
  "Zoë O'Neil-Smith",
  '  jane   doe  ',
  '-a-b-',
  'a.b.c.',
  '...',
  ' ',
  '',
  'x',
  "'quoted'",
  'tab\tand\nnewline',
  'Łukasz Żółć',
  'ß straße',
  'e\u0301mile zola',
  '\u00a0no-break\u00a0space',
  '\u2003em space',
  '日本 語',
  'İstanbul ılık',
  'ǆemal',
];
const EMAILS = [
  'jane.doe@example.com',
  'a@b@c.org',
  '@no-local-part.com',
  'no-at-sign',
  'x@',
  '',
  'ü@beispiel.de',
  '😀@emoji.io',
  'line\nbreak@example.com',
  'two\n@lines@example.com',
];
const PHONES = ['+1 (555) 010-2345', '', 'no digits', '12', '+44 20 7946 0000', '١٢٣٤٥', '555-0100 ext. 7'];

interface Masks {
  id: number;
  name_initials: string;
  email_masked: string;
  phone_last4: string;
}

describe('issue 9: masks stored with the customer', () => {
  let scratch: ScratchDatabase;
  let reader: pg.Client;
  const count = Math.max(NAMES.length, EMAILS.length, PHONES.length);
  const readMasks = async (): Promise<Masks[]> =>
    (
      await reader.query<Masks>(
        'select id::int as id, name_initials, email_masked, phone_last4 from reporting.customers order by id',
      )
    ).rows;

  beforeAll(async () => {
    scratch = await createScratchDatabase('issue9_masks');
    await scratch.admin.query(
      `insert into sales.customers (id, name, email, phone, region)
       select i, ($1::text[])[i], ($2::text[])[i], ($3::text[])[i], 'Europe' from generate_series(1, $4::int) as i`,
      [
        Array.from({ length: count }, (_, i) => NAMES[i % NAMES.length]),
        Array.from({ length: count }, (_, i) => EMAILS[i % EMAILS.length]),
        Array.from({ length: count }, (_, i) => PHONES[i % PHONES.length]),
        count,
      ],
    );
    reader = new pg.Client({ connectionString: scratch.readerUrl });
    await reader.connect();
  });

  afterAll(async () => {
    await reader?.end();
    await scratch?.drop();
  });

  it('gives the reader what the masks of migration 0002 give, for awkward text', async () => {
    const { rows: expected } = await scratch.admin.query<Masks>(MASKS_OF_0002);
    expect(expected).toHaveLength(count);
    expect(await readMasks()).toEqual(expected);
  });

  it.each([
    ['name_initials', 'Jane van Doe', NAMES, 'J.V.D.'],
    ['name_initials', "Zoë O'Neil-Smith", NAMES, 'Z.O.N.S.'],
    ['name_initials', '  jane   doe  ', NAMES, 'J.D.'],
    ['name_initials', '...', NAMES, ''],
    ['email_masked', 'jane.doe@example.com', EMAILS, 'j***@example.com'],
    ['email_masked', 'a@b@c.org', EMAILS, 'a***@c.org'],
    ['email_masked', '@no-local-part.com', EMAILS, '***'],
    ['email_masked', 'no-at-sign', EMAILS, '***'],
    ['email_masked', '😀@emoji.io', EMAILS, '😀***@emoji.io'],
    ['phone_last4', '+1 (555) 010-2345', PHONES, '2345'],
    ['phone_last4', '555-0100 ext. 7', PHONES, '1007'],
    ['phone_last4', '١٢٣٤٥', PHONES, ''],
  ] as const)('masks as the README says: %s of %j', async (column, value, list, expected) => {
    // Customer i + 1 was given the i-th value of each list (see beforeAll).
    const masks = (await readMasks()).find((m) => m.id === list.indexOf(value) + 1)!;
    expect(masks[column]).toBe(expected);
  });

  it('follows a customer whose name, email or phone changes', async () => {
    const { admin } = scratch;
    await admin.query(
      "insert into sales.customers (id, name, email, phone, region) values (1000, 'Bo Li', 'bo@example.com', '+53 000', 'Americas')",
    );
    await admin.query(
      "update sales.customers set name = 'Ada Lovelace', email = 'ada@example.org', phone = '+44 20 0000 0042' where id = 1000",
    );
    expect((await readMasks()).find((m) => m.id === 1000)).toEqual({
      id: 1000,
      name_initials: 'A.L.',
      email_masked: 'a***@example.org',
      phone_last4: '0042',
    });
  });

  it('leaves the raw columns unreadable to the reader', async () => {
    const error = await reader
      .query('select name_initials from sales.customers')
      .catch((err: { code?: string }) => err);
    expect((error as { code?: string }).code).toBe('42501');
  });
});
