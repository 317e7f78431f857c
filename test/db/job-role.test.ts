/**
 * The job store's role, and the reader's distance from it: the test database's job role reads and
 * writes its table and nothing else, and the reader cannot reach the table. `doctor` proves both,
 * and fails a job role that reads a pack's schema or may create databases, and a reader that may
 * read the job store, each with the statement that fixes it; `serve` refuses an unsafe job role.
 * /readyz tells whether the job store answers, beside its own status.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { adminKysely, withCredentials, withDatabase } from '../../src/db/connect.js';
import { ensureJobStore } from '../../src/db/job-role.js';
import { setRolePassword } from '../../src/db/reader-password.js';
import { runCli, startCli } from '../support/cli.js';
import { checkNamed, parseChecks, type ReportedCheck } from '../support/doctor-report.js';
import { connectAdmin } from '../support/harness.js';
import { createScratchDatabase, eventually } from '../support/scratch.js';

/** A refused statement's SQLSTATE, or 'ok' when it ran. */
async function outcome(client: pg.Client, statement: string): Promise<string> {
  return client.query(statement).then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? 'error',
  );
}

describe('the job role of the test database', () => {
  it('passes every doctor check beside the reader, and the reader cannot reach the job store', async () => {
    const { code, stdout, stderr } = await runCli(['doctor'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_JOBS_URL: inject('jobsUrl'),
    });
    expect(code, stderr).toBe(0);
    const checks = parseChecks(stdout);
    expect(checks.filter((c) => c.status === 'FAIL')).toEqual([]);
    for (const pattern of [
      /^job role: not a superuser$/,
      /^job role: cannot create roles, databases or replicate$/,
      /^job role: member of no other role$/,
      /^job role: owns no tables/,
      /^job role: reads and writes nothing outside querygate_jobs$/,
      /^job role: no access to the packs' schemas/,
      /^job role: no CREATE on any schema$/,
      /^job role: no CREATE on the database$/,
      /^job role: reads and writes querygate_jobs\.jobs$/,
      /^no access to the job store/,
    ]) {
      expect(checkNamed(checks, pattern).status, String(pattern)).toBe('PASS');
    }
    expect(stdout).toMatch(/The reader role and the job role are safe/);
    expect(stdout).not.toContain(decodeURIComponent(new URL(inject('jobsUrl')).password));
  });

  it('reads and writes its table, and nothing of the packs; the reader reads nothing of the job store', async () => {
    const jobs = new pg.Client({ connectionString: inject('jobsUrl') });
    const reader = new pg.Client({ connectionString: inject('readerUrl') });
    await jobs.connect();
    await reader.connect();
    try {
      expect(await outcome(jobs, 'select count(*) from querygate_jobs.jobs')).toBe('ok');
      expect(await outcome(jobs, 'select count(*) from reporting.orders')).toBe('42501');
      expect(await outcome(jobs, 'select count(*) from sales.orders')).toBe('42501');
      expect(await outcome(jobs, 'create table querygate_jobs.extra (x int)')).toBe('42501');
      expect(await outcome(jobs, 'create schema querygate_extra')).toBe('42501');
      expect(await outcome(reader, 'select count(*) from querygate_jobs.jobs')).toBe('42501');
    } finally {
      await jobs.end();
      await reader.end();
    }
  });
});

/** A login role of the test's own, dropped afterwards. */
function scratchRole(prefix: string): { role: string; password: string; url: string } {
  const role = `${prefix}_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(18).toString('base64url');
  return { role, password, url: withCredentials(inject('readerUrl'), role, password) };
}

async function dropRole(admin: pg.Client, role: string): Promise<void> {
  const id = admin.escapeIdentifier(role);
  await eventually(`role ${role} to have no sessions`, async () => {
    const { rows } = await admin.query('select count(*)::int as n from pg_stat_activity where usename = $1', [role]);
    return rows[0].n === 0;
  });
  await admin.query(`drop owned by ${id}`);
  await admin.query(`drop role ${id}`);
}

describe('an unsafe job role', () => {
  const unsafe = scratchRole('querygate_jobs_unsafe');
  let admin: pg.Client;
  let checks: ReportedCheck[];
  let doctor: { code: number | null; stdout: string; stderr: string };

  beforeAll(async () => {
    admin = await connectAdmin();
    const id = admin.escapeIdentifier(unsafe.role);
    await admin.query(`create role ${id} login createdb password ${admin.escapeLiteral(unsafe.password)}`);
    await admin.query(`grant usage on schema querygate_jobs to ${id}`);
    await admin.query(`grant select, insert, update, delete on querygate_jobs.jobs to ${id}`);
    // What it must never have: a pack's schema and one of its views.
    await admin.query(`grant usage on schema reporting to ${id}`);
    await admin.query(`grant select on reporting.orders to ${id}`);
    doctor = await runCli(['doctor'], { DATABASE_URL: inject('readerUrl'), QUERYGATE_JOBS_URL: unsafe.url });
    checks = parseChecks(doctor.stdout);
  });
  afterAll(async () => {
    if (!admin) return;
    await dropRole(admin, unsafe.role);
    await admin.end();
  });

  it('makes doctor exit 1, failing what it breaks with the fix, and passing the reader', () => {
    expect(doctor.code, doctor.stderr).toBe(1);
    expect(doctor.stdout).toMatch(/UNSAFE/);
    const outside = checkNamed(checks, /^job role: reads and writes nothing outside querygate_jobs$/);
    expect(outside.status).toBe('FAIL');
    expect(outside.detail).toContain('reporting.orders');
    expect(outside.fix).toContain(`REVOKE ALL ON reporting.orders FROM PUBLIC, "${unsafe.role}";`);
    const schemas = checkNamed(checks, /^job role: no access to the packs' schemas/);
    expect(schemas.status).toBe('FAIL');
    expect(schemas.fix).toContain(`REVOKE USAGE ON SCHEMA reporting FROM PUBLIC, "${unsafe.role}";`);
    const attributes = checkNamed(checks, /^job role: cannot create roles, databases or replicate$/);
    expect(attributes.status).toBe('FAIL');
    expect(attributes.fix).toContain('NOCREATEDB');
    expect(checkNamed(checks, /^job role: reads and writes querygate_jobs\.jobs$/).status).toBe('PASS');
    expect(checkNamed(checks, /^not a superuser$/).status).toBe('PASS');
    expect(doctor.stdout).not.toContain(unsafe.password);
  });

  it('is refused by serve, which says which role is unsafe', async () => {
    const { code, stderr } = await runCli(['serve'], {
      DATABASE_URL: inject('readerUrl'),
      QUERYGATE_JOBS_URL: unsafe.url,
    });
    expect(code).toBe(2);
    expect(stderr).toMatch(/the job role is unsafe; refusing to serve/);
    expect(stderr).not.toContain(unsafe.password);
  });
});

describe('a reader that can reach the job store', () => {
  const reader = scratchRole('querygate_reader_jobs');
  let admin: pg.Client;

  beforeAll(async () => {
    admin = await connectAdmin();
    const id = admin.escapeIdentifier(reader.role);
    await admin.query(`create role ${id} login password ${admin.escapeLiteral(reader.password)}`);
    await admin.query(`grant usage on schema querygate_jobs to ${id}`);
    await admin.query(`grant select on querygate_jobs.jobs to ${id}`);
  });
  afterAll(async () => {
    if (!admin) return;
    await dropRole(admin, reader.role);
    await admin.end();
  });

  it('fails doctor, naming the schema and the table with the REVOKE to apply', async () => {
    const { code, stdout } = await runCli(['doctor'], { DATABASE_URL: reader.url });
    expect(code).toBe(1);
    const check = checkNamed(parseChecks(stdout), /^no access to the job store \(querygate_jobs\)$/);
    expect(check.status).toBe('FAIL');
    expect(check.detail).toContain('schema querygate_jobs');
    expect(check.detail).toContain('querygate_jobs.jobs');
    expect(check.fix).toContain(`REVOKE ALL ON SCHEMA querygate_jobs FROM PUBLIC, "${reader.role}";`);
    expect(check.fix).toContain(`REVOKE ALL ON querygate_jobs.jobs FROM PUBLIC, "${reader.role}";`);
  });
});

describe('/readyz and the job store', () => {
  it('says whether the job store answers, beside a status that does not depend on it', async () => {
    const scratch = await createScratchDatabase('jobs_readyz');
    const jobs = scratchRole('querygate_jobs_readyz');
    const kysely = adminKysely(scratch.adminUrl);
    await ensureJobStore(kysely, jobs.role).finally(() => kysely.destroy());
    await setRolePassword(scratch.admin, jobs.role, jobs.password);
    const server = startCli(['serve', '--http', '--port', '0'], {
      DATABASE_URL: scratch.readerUrl,
      QUERYGATE_JOBS_URL: withDatabase(jobs.url, scratch.name),
      QUERYGATE_TOKEN_KEY: 'jobs-readyz-key',
    });
    const admin = await connectAdmin();
    try {
      const readyz = new URL('/readyz', (await server.waitForLog(/listening on (http:\/\/[^"\s]+)\/mcp/))[1]);
      const probe = async (): Promise<{ status: number; body: unknown }> => {
        const res = await fetch(readyz);
        return { status: res.status, body: await res.json() };
      };
      await eventually('ready, with the job store answering', async () => {
        const { status, body } = await probe();
        return status === 200 && JSON.stringify(body) === JSON.stringify({ status: 'ok', jobs: 'ok' });
      });
      const id = admin.escapeIdentifier(jobs.role);
      await admin.query(`alter role ${id} nologin`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [jobs.role]);
      await eventually('the job store reported unavailable, the replica still ready', async () => {
        const { status, body } = await probe();
        return status === 200 && JSON.stringify(body) === JSON.stringify({ status: 'ok', jobs: 'unavailable' });
      });
      await admin.query(`alter role ${id} login`);
      await eventually('the job store answering again', async () => {
        const { body } = await probe();
        return JSON.stringify(body) === JSON.stringify({ status: 'ok', jobs: 'ok' });
      });
    } finally {
      await server.stop();
      await scratch.drop();
      await admin.query(`drop role ${admin.escapeIdentifier(jobs.role)}`);
      await admin.end();
    }
  });
});
