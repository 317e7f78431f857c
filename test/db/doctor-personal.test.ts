/**
 * The doctor's personal-data checks follow the declarations (issue 8, item 5): a personal column a pack
 * declares outside sales.customers is found, whether the reader reads it raw through a view or can
 * read the table behind it. A database of the test's own, so the shared one keeps its grants.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_READER_ROLE } from '../../src/config.js';
import { PERSONAL_COLUMNS } from '../../pack/schema.js';
import { checkReaderSafety, type SafetyCheck } from '../../src/db/doctor/index.js';
import type { PersonalColumn } from '../../src/pack.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

const RAW = 'cannot read raw personal data behind the declared columns';
const MASKED = 'declared personal columns are masked at the source';
const EMAILS = ['ada@example.com', 'grace.hopper@example.org', 'alan@example.net'];

/** The sales pack's declarations and a support desk's requester email, as a new pack would add it. */
const WITH_TICKETS: Readonly<Record<string, PersonalColumn>> = {
  ...PERSONAL_COLUMNS,
  'reporting.tickets.requester_email': { kind: 'email' },
};

function named(checks: readonly SafetyCheck[], name: string): SafetyCheck {
  const found = checks.filter((c) => c.name === name);
  expect(found, `the check "${name}" in ${JSON.stringify(checks.map((c) => c.name))}`).toHaveLength(1);
  return found[0]!;
}

describe('item 5: doctor finds personal columns wherever the declarations name them', () => {
  let scratch: ScratchDatabase;
  const reader = `"${DEFAULT_READER_ROLE}"`;

  beforeAll(async () => {
    scratch = await createScratchDatabase('item5_doctor');
    const { admin } = scratch;
    await admin.query('create schema support');
    await admin.query('create table support.tickets (id bigint primary key, requester_email text not null)');
    await admin.query('insert into support.tickets select n, e from unnest($1::text[]) with ordinality as t (e, n)', [
      EMAILS,
    ]);
    // The view passes the email through raw: what the trial's support-desk tool read.
    await admin.query('create view reporting.tickets as select id, requester_email from support.tickets');
    await admin.query(`grant select on reporting.tickets to ${reader}`);
  });

  afterAll(async () => {
    await scratch?.drop();
  });

  it('item 5: fails a declared email column outside sales.customers that the reader reads raw', async () => {
    // The premise, computed independently: every ticket email is raw, and the reader can read them.
    const { rows } = await scratch.admin.query<{ raw: number; readable: boolean }>(
      `select count(*) filter (where requester_email not like '_***@%')::int as raw,
              has_column_privilege($1, 'reporting.tickets', 'requester_email', 'SELECT') as readable
         from support.tickets`,
      [DEFAULT_READER_ROLE],
    );
    expect(rows[0]).toEqual({ raw: EMAILS.length, readable: true });

    const checks = await checkReaderSafety(scratch.readerUrl, { schemas: ['reporting'], personal: WITH_TICKETS });
    const masked = named(checks, MASKED);
    expect(masked.ok).toBe(false);
    expect(masked.detail).toBe(
      `reporting.tickets.requester_email: ${rows[0]!.raw} of at most 1000 values read unmasked`,
    );
    expect(masked.fix).toContain(`REVOKE SELECT ON reporting.tickets FROM PUBLIC, ${reader};`);
    // The sales pack's own columns, masked in reporting.customers, are not among the offenders.
    expect(masked.detail).not.toMatch(/customers/);
    expect(named(checks, RAW).ok).toBe(true);
  });

  it('item 5: fails when the reader can read the table behind a declared column', async () => {
    await scratch.admin.query(`grant select (requester_email) on support.tickets to ${reader}`);
    try {
      const checks = await checkReaderSafety(scratch.readerUrl, { schemas: ['reporting'], personal: WITH_TICKETS });
      const raw = named(checks, RAW);
      expect(raw).toMatchObject({ ok: false, detail: 'support.tickets' });
      expect(raw.fix).toBe(`REVOKE ALL ON support.tickets FROM PUBLIC, ${reader};`);
    } finally {
      await scratch.admin.query(`revoke select (requester_email) on support.tickets from ${reader}`);
    }
  });

  it('item 5: passes the same database when the tickets are not declared personal', async () => {
    const checks = await checkReaderSafety(scratch.readerUrl, { schemas: ['reporting'], personal: PERSONAL_COLUMNS });
    expect(named(checks, RAW).ok).toBe(true);
    expect(named(checks, MASKED).ok).toBe(true);
  });
});
