/**
 * Issue 19, section 3: a pack author's mistakes are refused, not served. A readable column no pack
 * classifies stops `serve` and fails `doctor`; a column declared not personal whose name or values
 * look personal is flagged. Each against a database of the test's own, through the built CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { salesPack } from '../pack/index.js';
import { DEFAULT_READER_ROLE } from '../src/config.js';
import { checkReaderSafety, readerScopeOf, type SafetyCheck } from '../src/db/doctor.js';
import { runCli } from './support/cli.js';
import { checkNamed, parseChecks } from './support/doctor-report.js';
import { createScratchDatabase, type ScratchDatabase } from './support/scratch.js';

const CLASSIFIED = 'every readable column is classified by its pack';
const LOOKALIKES = 'columns declared not personal do not look personal';

/** The billing trial's account managers: raw emails, raw phone numbers and full names. */
const MANAGERS = [
  { email: 'manager16.smith@ourcompany.example', phone: '+1 (555) 010-2345', name: 'Ada Smith' },
  { email: 'manager17.jones@ourcompany.example', phone: '+44 20 7946 0018', name: 'Grace Jones' },
  { email: 'manager18.brown@ourcompany.example', phone: '555-010-9876', name: 'Alan Brown' },
];

function named(checks: readonly SafetyCheck[], name: string): SafetyCheck {
  const found = checks.filter((c) => c.name === name);
  expect(found, `the check "${name}" in ${JSON.stringify(checks.map((c) => c.name))}`).toHaveLength(1);
  return found[0]!;
}

describe('19.3 a readable column the pack does not classify', () => {
  let scratch: ScratchDatabase;
  const reader = `"${DEFAULT_READER_ROLE}"`;

  beforeAll(async () => {
    scratch = await createScratchDatabase('i19_classify');
    const { admin } = scratch;
    await admin.query(
      'create table sales.account_managers (id bigint primary key, email text not null, phone text not null, full_name text not null)',
    );
    await admin.query(
      `insert into sales.account_managers
       select n, m.email, m.phone, m.full_name
         from unnest($1::text[], $2::text[], $3::text[]) with ordinality as m (email, phone, full_name, n)`,
      [MANAGERS.map((m) => m.email), MANAGERS.map((m) => m.phone), MANAGERS.map((m) => m.name)],
    );
    // The trial's mistake: a reader view passing the manager's email through raw, in no declaration.
    await admin.query(
      `create view reporting.account_managers as
       select email as account_manager_email, phone as hotline, full_name as manager_name from sales.account_managers`,
    );
    await admin.query(`grant select on reporting.account_managers to ${reader}`);
  }, 120_000);

  afterAll(async () => {
    await scratch?.drop();
  });

  it('19.3.1 doctor fails an unclassified readable column, naming it and the line to add, and serve refuses to start', async () => {
    // The premise, through the admin connection: the reader reads the raw emails.
    const { rows } = await scratch.admin.query<{ readable: boolean; raw: number }>(
      `select has_column_privilege($1, 'reporting.account_managers', 'account_manager_email', 'SELECT') as readable,
              (select count(*)::int from sales.account_managers where email like '%@%') as raw`,
      [DEFAULT_READER_ROLE],
    );
    expect(rows[0]).toEqual({ readable: true, raw: MANAGERS.length });
    const key = 'reporting.account_managers.account_manager_email';
    expect(Object.keys(salesPack.personalColumns)).not.toContain(key);

    const doctor = await runCli(['doctor'], { DATABASE_URL: scratch.readerUrl });
    expect(doctor.code, doctor.stderr).toBe(1);
    const checks = parseChecks(doctor.stdout);
    // The new columns are the only reason it fails: everything else of the scratch database is safe.
    expect(checks.filter((c) => c.status === 'FAIL').map((c) => c.name)).toEqual([CLASSIFIED]);
    const check = checkNamed(checks, CLASSIFIED);
    expect(check.detail).toBe(
      `(not classified: ${['account_manager_email', 'hotline', 'manager_name'].map((c) => `reporting.account_managers.${c}`).join(', ')})`,
    );
    expect(check.fix).toContain(`add to the pack personalColumns: '${key}': { kind: 'email' },`);
    expect(check.fix).toContain(`personalColumns: 'reporting.account_managers.manager_name': { kind: 'name' },`);
    expect(check.fix).toContain("else notPersonalColumns: 'reporting.account_managers.hotline',");

    const serve = await runCli(['serve'], { DATABASE_URL: scratch.readerUrl, QUERYGATE_TOKEN_KEY: 'k'.repeat(20) });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('refusing to serve');
    expect(serve.stderr).toContain(`not classified: ${key}`);
  }, 120_000);

  it('19.3.1 passes once every column is classified, as the shipped pack classifies its own', async () => {
    const scope = readerScopeOf([salesPack]);
    const checks = await checkReaderSafety(scratch.readerUrl, {
      ...scope,
      personal: {
        ...scope.personal,
        'reporting.account_managers.account_manager_email': { kind: 'email' },
        'reporting.account_managers.hotline': { kind: 'phone' },
        'reporting.account_managers.manager_name': { kind: 'name' },
      },
    });
    expect(named(checks, CLASSIFIED)).toEqual({ name: CLASSIFIED, ok: true });
    // Declared personal, the raw values are then what the masking check fails.
    expect(named(checks, 'declared personal columns are masked at the source').ok).toBe(false);
  });

  it('19.3.2 doctor flags columns declared not personal whose name or values look like an email, phone or name', async () => {
    // What the sample holds, by arithmetic on the rows inserted: every email and phone is raw.
    const emails = MANAGERS.filter((m) => /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(m.email)).length;
    const phones = MANAGERS.filter((m) => m.phone.replace(/\D/g, '').length >= 7).length;
    expect([emails, phones]).toEqual([3, 3]);
    const scope = readerScopeOf([salesPack]);
    const checks = await checkReaderSafety(scratch.readerUrl, {
      ...scope,
      notPersonal: [
        ...scope.notPersonal!,
        'reporting.account_managers.account_manager_email',
        'reporting.account_managers.hotline',
        'reporting.account_managers.manager_name',
      ],
    });
    expect(named(checks, CLASSIFIED).ok).toBe(true);
    const check = named(checks, LOOKALIKES);
    expect(check.ok).toBe(false);
    expect(check.detail).toBe(
      [
        'reporting.account_managers.account_manager_email is named like an email',
        `reporting.account_managers.account_manager_email: ${emails} of at most 1000 values look like an email`,
        `reporting.account_managers.hotline: ${phones} of at most 1000 values look like a phone`,
      ].join('; '),
    );
    expect(check.fix).toContain('personalColumns with its kind');

    // A person's name is told by the column's name only: a warning, not a failure.
    const byName = await checkReaderSafety(scratch.readerUrl, {
      ...scope,
      personal: {
        ...scope.personal,
        'reporting.account_managers.account_manager_email': { kind: 'email' },
        'reporting.account_managers.hotline': { kind: 'phone' },
      },
      notPersonal: [...scope.notPersonal!, 'reporting.account_managers.manager_name'],
    });
    expect(named(byName, LOOKALIKES)).toMatchObject({
      ok: true,
      warning: true,
      detail: "named like a person's name: reporting.account_managers.manager_name",
    });
  });

  it("19.3.2 the shipped pack's columns declared not personal are not flagged", async () => {
    const checks = await checkReaderSafety(scratch.readerUrl, readerScopeOf([salesPack]));
    expect(named(checks, LOOKALIKES)).toEqual({ name: LOOKALIKES, ok: true });
  });
});
