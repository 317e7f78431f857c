/**
 * `querygate doctor` and the start-up self-check, through the built CLI: the test reader passes
 * every check; a hand-made role with write and CREATE rights fails the right ones, with the fix
 * to apply, and `serve` refuses it unless told --allow-unsafe-role.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { withCredentials } from '../../src/db/connect.js';
import { CLI, runCli } from '../support/cli.js';
import { checkNamed, parseChecks, type ReportedCheck } from '../support/doctor-report.js';
import { connectAdmin } from '../support/harness.js';
import { eventually } from '../support/scratch.js';
import { SALES_QUERY_TOOLS } from '../support/tool-names.js';

/** Every check the issue asks for, by a pattern of its name. */
const REQUIRED_CHECKS = [
  /superuser/,
  /BYPASSRLS/,
  /server-file/,
  /INSERT\/UPDATE\/DELETE\/TRUNCATE/,
  /CREATE on any schema/,
  /temporary tables/,
  /raw personal data/,
  /masked at the source/,
  /default_transaction_read_only/,
  /statement_timeout/,
  /write in a default transaction/,
  /write in a READ WRITE transaction/,
];

const TOOLS = SALES_QUERY_TOOLS;

describe('querygate doctor with the test reader role', () => {
  it('passes every check, reports a plan cost per tool and calls the role safe', async () => {
    const { code, stdout, stderr } = await runCli(['doctor'], { DATABASE_URL: inject('readerUrl') });
    expect(code, stderr).toBe(0);
    const checks = parseChecks(stdout);
    for (const pattern of REQUIRED_CHECKS) expect(checkNamed(checks, pattern).status, String(pattern)).toBe('PASS');
    expect(checks.filter((c) => c.status === 'FAIL')).toEqual([]);
    // A fix follows only a warning (another suite's database the reader may connect to, say).
    expect(stdout).not.toMatch(/^\s*(PASS|FAIL)\s.*\n\s*fix:/m);

    for (const tool of TOOLS) {
      const plan = new RegExp(`^\\s*PLAN\\s+${tool}\\s+cost\\s+(\\d+\\.\\d+) \\(ceiling (\\d+)\\)\\s*$`, 'm').exec(
        stdout,
      );
      expect(plan, `PLAN line of ${tool}`).not.toBeNull();
      expect(Number(plan![1])).toBeGreaterThan(0);
      expect(Number(plan![1])).toBeLessThanOrEqual(Number(plan![2]));
    }
    expect(stdout.match(/^\s*PLAN\s/gm)).toHaveLength(TOOLS.length);
    expect(stdout).toMatch(/role is safe/);
    expect(stdout).not.toMatch(/UNSAFE/);
    // The report names the database but never the reader's password.
    const password = decodeURIComponent(new URL(inject('readerUrl')).password);
    expect(stdout).not.toContain(password);
  });
});

describe('an unsafe reader role', () => {
  const role = `querygate_unsafe_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  const unsafeUrl = withCredentials(inject('readerUrl'), role, password);
  let admin: pg.Client;
  let doctor: { code: number | null; stdout: string; stderr: string };
  let checks: ReportedCheck[];

  beforeAll(async () => {
    admin = await connectAdmin();
    const id = admin.escapeIdentifier(role);
    await admin.query(`create role ${id} login password ${admin.escapeLiteral(password)}`);
    await admin.query(`grant usage on schema reporting to ${id}`);
    await admin.query(
      `grant select on reporting.orders, reporting.order_items, reporting.products, reporting.customers, reporting.order_hours to ${id}`,
    );
    await admin.query(`grant insert on reporting.orders to ${id}`);
    await admin.query(`grant create on schema public to ${id}`);

    // The premise, checked as the role itself: no role settings, so neither protection holds.
    const direct = new pg.Client({ connectionString: unsafeUrl });
    await direct.connect();
    try {
      const settings = await direct.query<{ ro: string; timeout: string }>(
        "select current_setting('default_transaction_read_only') as ro, current_setting('statement_timeout') as timeout",
      );
      expect(settings.rows[0]).toEqual({ ro: 'off', timeout: '0' });
    } finally {
      await direct.end();
    }

    doctor = await runCli(['doctor'], { DATABASE_URL: unsafeUrl });
    checks = parseChecks(doctor.stdout);
  });

  afterAll(async () => {
    if (!admin) return;
    const id = admin.escapeIdentifier(role);
    // Its server processes are gone once the CLIs exited; wait so DROP ROLE does not race them.
    await eventually('the unsafe role to have no sessions', async () => {
      const { rows } = await admin.query('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
      return rows[0].n === 0;
    });
    await admin.query(`reassign owned by ${id} to current_user`);
    await admin.query(`drop owned by ${id}`);
    await admin.query(`drop role ${id}`);
    const { rows } = await admin.query('select count(*)::int as n from pg_roles where rolname = $1', [role]);
    await admin.end();
    expect(rows[0].n).toBe(0);
  });

  it('makes doctor exit 1 and say UNSAFE', () => {
    expect(doctor.stdout).toMatch(/UNSAFE/);
    expect(doctor.stdout).not.toMatch(/role is safe/);
    expect(doctor.code, `exit code of an unsafe doctor run; stderr: ${doctor.stderr}`).toBe(1);
  });

  it('fails the INSERT privilege with the REVOKE to apply', () => {
    const check = checkNamed(checks, /INSERT\/UPDATE\/DELETE\/TRUNCATE/);
    expect(check.status).toBe('FAIL');
    expect(check.detail).toContain('reporting.orders');
    expect(check.fix).toContain(`REVOKE INSERT ON reporting.orders FROM ${admin.escapeIdentifier(role)}`);
  });

  it('fails CREATE on schema public with the REVOKE CREATE to apply', () => {
    const check = checkNamed(checks, /CREATE on any schema/);
    expect(check.status).toBe('FAIL');
    expect(check.detail).toContain('public');
    expect(check.fix).toMatch(/REVOKE CREATE ON SCHEMA public FROM .*querygate_unsafe_/);
  });

  it('fails default_transaction_read_only and statement_timeout with ALTER ROLE fixes', () => {
    const readOnly = checkNamed(checks, /default_transaction_read_only/);
    expect(readOnly.status).toBe('FAIL');
    expect(readOnly.fix).toMatch(new RegExp(`ALTER ROLE "?${role}"? SET default_transaction_read_only = on`));
    const timeout = checkNamed(checks, /statement_timeout/);
    expect(timeout.status).toBe('FAIL');
    expect(timeout.fix).toMatch(new RegExp(`ALTER ROLE "?${role}"? SET statement_timeout`));
  });

  it('fails both write attempts, since CREATE on public lets a table be made', () => {
    for (const pattern of [/write in a default transaction/, /write in a READ WRITE transaction/]) {
      const check = checkNamed(checks, pattern);
      expect(check.status, String(pattern)).toBe('FAIL');
      expect(check.detail).toContain('public.querygate_doctor_probe');
    }
  });

  it('still passes the checks the role does not break', () => {
    for (const pattern of [
      /superuser/,
      /BYPASSRLS/,
      /server-file/,
      /temporary tables/,
      /raw personal data/,
      /masked at the source/,
    ]) {
      expect(checkNamed(checks, pattern).status, String(pattern)).toBe('PASS');
    }
  });

  it("leaves nothing behind from the doctor's write probes", async () => {
    const tables = await admin.query<{ n: number }>(
      "select count(*)::int as n from pg_class where relname = 'querygate_doctor_probe'",
    );
    expect(tables.rows[0]!.n).toBe(0);
    const products = await admin.query<{ n: number }>(
      "select count(*)::int as n from reporting.products where sku = 'doctor-probe'",
    );
    expect(products.rows[0]!.n).toBe(0);
    const raw = await admin.query<{ n: number }>(
      "select count(*)::int as n from sales.products where sku = 'doctor-probe'",
    );
    expect(raw.rows[0]!.n).toBe(0);
  });

  it('makes serve refuse to start without --allow-unsafe-role', async () => {
    const { code, stderr } = await runCli(['serve'], { DATABASE_URL: unsafeUrl, QUERYGATE_TOKEN_KEY: 'k'.repeat(20) });
    expect(code, stderr).toBe(2);
    expect(stderr).toMatch(/reader role is unsafe/);
    expect(stderr).toContain('--allow-unsafe-role');
    expect(stderr).not.toContain(password);
  });

  it('serves with --allow-unsafe-role, warning loudly, and answers calls', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--allow-unsafe-role'],
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: unsafeUrl, QUERYGATE_TOKEN_KEY: 'k'.repeat(20) },
      stderr: 'pipe',
    });
    let stderr = '';
    (transport.stderr as Readable).on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'doctor-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await eventually('the unsafe-role warning on stderr', async () => stderr.includes('UNSAFE READER ROLE'));

      const result = (await client.callTool({
        name: 'query_order_count',
        arguments: { start_date: '2025-06-01', end_date: '2025-06-07' },
      })) as CallToolResult;
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      const { rows } = await admin.query<{ n: number }>(
        "select count(*)::int as n from sales.orders where ordered_at >= '2025-06-01T00:00:00Z' and ordered_at < '2025-06-08T00:00:00Z'",
      );
      expect(rows[0]!.n).toBeGreaterThan(0);
      expect((result.structuredContent as { order_count: number }).order_count).toBe(rows[0]!.n);
    } finally {
      await client.close();
    }
  });
});

describe('querygate doctor with a role that is read-only in name only', () => {
  // Role settings as safe as the reader's, no write privilege of its own, yet: a member of a role
  // that can write (NOINHERIT hides it from has_table_privilege, not from SET ROLE), CREATE on the
  // database, and SELECT on a raw sales table.
  const suffix = randomBytes(4).toString('hex');
  const sneaky = `querygate_sneaky_${suffix}`;
  const writer = `querygate_writer_${suffix}`;
  const password = randomBytes(12).toString('hex');
  let admin: pg.Client;

  beforeAll(async () => {
    admin = await connectAdmin();
    const database = (await admin.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
    await admin.query(`create role ${writer} nologin`);
    await admin.query(`grant usage on schema sales to ${writer}`);
    await admin.query(`grant insert, delete on sales.order_items to ${writer}`);
    await admin.query(`create role ${sneaky} login noinherit password '${password}'`);
    await admin.query(`grant ${writer} to ${sneaky}`);
    await admin.query(`grant create on database ${admin.escapeIdentifier(database)} to ${sneaky}`);
    await admin.query(`grant usage on schema sales, reporting to ${sneaky}`);
    await admin.query(`grant select on sales.orders to ${sneaky}`);
    await admin.query(`grant select (id, status) on reporting.orders to ${sneaky}`);
    for (const setting of [
      'default_transaction_read_only = on',
      "statement_timeout = '5s'",
      "idle_in_transaction_session_timeout = '10s'",
    ]) {
      await admin.query(`alter role ${sneaky} set ${setting}`);
    }
  });
  afterAll(async () => {
    const database = (await admin.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
    await admin.query(`revoke create on database ${admin.escapeIdentifier(database)} from ${sneaky}`);
    for (const role of [sneaky, writer]) {
      await admin.query(`drop owned by ${role}`);
      await admin.query(`drop role ${role}`);
    }
    await admin.end();
  });

  it('is caught: membership, CREATE on the database and raw reads fail, exit 1', async () => {
    const url = withCredentials(inject('readerUrl'), sneaky, password);
    // The membership is real: the role can become the writer and write, in a rolled-back transaction.
    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    try {
      await direct.query('begin read write');
      await direct.query(`set role ${writer}`);
      await expect(direct.query('delete from sales.order_items where false')).resolves.toBeDefined();
    } finally {
      await direct.query('rollback');
      await direct.end();
    }

    const { code, stdout } = await runCli(['doctor'], { DATABASE_URL: url });
    const checks = parseChecks(stdout);
    expect(checkNamed(checks, /member of no other role/)).toMatchObject({ status: 'FAIL' });
    expect(checkNamed(checks, /member of no other role/).fix).toContain(`REVOKE ${writer} FROM`);
    expect(checkNamed(checks, /no CREATE on the database/)).toMatchObject({ status: 'FAIL' });
    expect(checkNamed(checks, /reads nothing outside the reporting schema/).detail).toContain('sales.orders');
    expect(checkNamed(checks, /default_transaction_read_only/).status).toBe('PASS');
    expect(stdout).toContain('UNSAFE');
    expect(code).toBe(1);
  });
});

describe('doctor and a template serve would refuse', () => {
  it('fails it with the registry message, as serve does, naming the column and the treatment', async () => {
    // A pack module as a user would compile one: the sales pack with one template whose personal
    // column is declared plain.
    const folder = await mkdtemp(join(tmpdir(), 'querygate-bad-pack-'));
    const module = join(folder, 'bad-pack.mjs');
    await writeFile(
      module,
      [
        `import { definePack } from ${JSON.stringify(resolve('dist/src/pack.js'))};`,
        `import sales from ${JSON.stringify(resolve('dist/pack/index.js'))};`,
        "const recent = sales.templates.find((t) => t.name === 'query_recent_orders');",
        'const columns = { ...recent.columns, customer_email: { ...recent.columns.customer_email, treatment: "plain" } };',
        "export default definePack({ ...sales, name: 'bad_sales', templates: [{ ...recent, columns }], reports: [] });",
      ].join('\n'),
    );
    try {
      const env = { DATABASE_URL: inject('readerUrl'), QUERYGATE_PACKS: module };
      const doctor = await runCli(['doctor'], env);
      expect(doctor.code, doctor.stderr).toBe(1);
      expect(doctor.stdout).toMatch(/^\s*FAIL\s+every template passes the registry's checks/m);
      expect(doctor.stdout).toContain(
        'template query_recent_orders: column customer_email returns personal data (reporting.customers.email_masked, email) and must declare treatment "mask_email"',
      );
      const serve = await runCli(['serve'], env);
      expect(serve.code).toBe(2);
      expect(serve.stderr).toContain('column customer_email returns personal data');
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
