/**
 * `querygate new-pack`: the pack it writes, in a temporary folder laid out as a clone (src/ and
 * test/support/ beside examples/), type-checks and is prettier-clean as written, migrates, seeds and
 * answers through a real client with the figures its table holds (counted here by the admin), and the
 * command refuses a bad name, a taken one and a folder that exists, in one line.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import prettier from 'prettier';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { withCredentials } from '../src/db/connect.js';
import { prepareDatabase } from '../src/db/prepare.js';
import { createLogger } from '../src/lib/logger.js';
import type { Pack } from '../src/pack.js';
import { scaffoldPack } from '../src/scaffold/pack.js';
import { CLI } from './support/cli.js';
import { TEST_SEED } from './support/database.js';
import { connectAdmin, startHarness, structured } from './support/harness.js';

const ROOT = resolve(import.meta.dirname, '..');
let copy: string;
let folder: string;
let report: string;
const FILES = [
  'pack/index.ts',
  'pack/schema.ts',
  'pack/kit.ts',
  'pack/metrics.ts',
  'pack/seed.ts',
  'migrations/index.ts',
  'migrations/0001-reader-views.ts',
  'queries/index.ts',
  'queries/scaffold-check-metrics.ts',
  'test/scaffold-check-metrics.test.ts',
];

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'querygate-new-pack-'));
  for (const linked of ['src', 'node_modules', 'pack', 'queries', 'reports', 'migrations'])
    symlinkSync(join(ROOT, linked), join(copy, linked));
  mkdirSync(join(copy, 'examples'));
  symlinkSync(join(ROOT, 'examples', 'support-desk'), join(copy, 'examples', 'support-desk'));
  writeFileSync(join(copy, 'package.json'), JSON.stringify({ type: 'module' }));
  mkdirSync(join(copy, 'test'));
  symlinkSync(join(ROOT, 'test', 'support'), join(copy, 'test', 'support'));
  ({ folder, report } = scaffoldPack({ name: 'scaffold_check', engineRoot: copy }));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('new-pack', () => {
  it('writes the pack into examples/<name>/ and says how to test and grow it', () => {
    expect(folder).toBe(join(copy, 'examples', 'scaffold-check'));
    for (const file of FILES) expect(readFileSync(join(folder, file), 'utf8'), file).not.toBe('');
    expect(report).toContain('npx vitest run');
    expect(report).toContain('every pack under examples/ is in the suite');
    expect(report).toContain('new-metric <name> --pack');
    const schema = readFileSync(join(folder, 'pack/schema.ts'), 'utf8');
    // Ids are personal: they leave as tokens, never plain.
    expect(schema).toContain(
      "'scaffold_check_reporting.events.account_id': { kind: 'internal_id', entity: 'account' }",
    );
  });

  it('is clean as written: tsc and prettier', async () => {
    writeFileSync(
      join(copy, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.json'),
        compilerOptions: { noEmit: true, rootDir: '/' },
        files: [...FILES.map((f) => join(folder, f)), join(copy, 'test/support/global-setup.ts')],
        include: [],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', copy], {
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
    const options = await prettier.resolveConfig(join(ROOT, 'package.json'));
    for (const file of FILES.map((f) => join(folder, f))) {
      expect(await prettier.check(readFileSync(file, 'utf8'), { ...options, filepath: file }), file).toBe(true);
    }
  }, 120_000);

  it('migrates, seeds and answers through a real client with the figures its table holds', async () => {
    const { default: pack } = (await import(join(folder, 'pack/index.ts'))) as { default: Pack };
    const adminUrl = inject('adminUrl');
    const logger = createLogger('warn');
    const readerRole = 'querygate_scaffold_check_reader';
    const readerPassword = randomBytes(12).toString('base64url');
    await pack.seed!.createTables!(adminUrl, logger);
    await prepareDatabase(adminUrl, { readerRole, readerPassword, packs: [pack] }, logger);
    await pack.seed!.run(adminUrl, { count: pack.seed!.testCount!, until: TEST_SEED.until, replace: true }, logger);
    const admin = await connectAdmin();
    const harness = await startHarness({
      readerUrl: withCredentials(adminUrl, readerRole, readerPassword),
      templates: pack.templates,
    });
    try {
      const range = { start_date: '2025-05-01', end_date: '2025-05-31' };
      const { rows } = await admin.query<{ kind: string; n: number }>(
        `select kind, count(*)::int as n from scaffold_check.events
          where occurred_at >= $1::date::timestamp at time zone 'UTC' and occurred_at < ($2::date + 1)::timestamp at time zone 'UTC'
          group by kind order by n desc, kind`,
        [range.start_date, range.end_date],
      );
      const result = await harness.call('query_scaffold_check', { metrics: ['events'], group_by: ['kind'], ...range });
      expect(result.isError).toBeFalsy();
      const out = structured<{ rows: unknown[]; totals: unknown[] }>(result);
      expect(out.rows).toEqual(rows.map((r) => ({ kind: r.kind, events: r.n })));
      expect(out.totals).toEqual([{ events: rows.reduce((sum, r) => sum + r.n, 0) }]);
      expect(rows.length).toBe(3);
    } finally {
      await harness.close();
      await admin.end();
    }
  }, 120_000);

  it('refuses a name that is not snake_case, a taken name and a folder that exists', () => {
    for (const bad of ['Billing', 'bill-ing', 'billing_', '_billing', '9lives', 'a'.repeat(41)]) {
      expect(() => scaffoldPack({ name: bad, engineRoot: copy })).toThrow(/is not a pack name: it must be snake_case/);
    }
    for (const taken of ['sales', 'support_desk', 'support', 'billing', 'pg_stats', 'order', 'user']) {
      expect(() => scaffoldPack({ name: taken, engineRoot: copy })).toThrow(/is taken/);
    }
    expect(() => scaffoldPack({ name: 'scaffold_check', engineRoot: copy })).toThrow(
      /scaffold-check exists; pick another name or remove it/,
    );
  });

  it('the CLI refuses a bad name with one line and exit code 2', () => {
    const run = spawnSync(process.execPath, [CLI, 'new-pack', 'Bad-Name'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^querygate: new-pack: "Bad-Name" is not a pack name: it must be snake_case/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});
