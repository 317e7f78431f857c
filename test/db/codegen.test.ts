/**
 * The packs' checked-in table types are what kysely-codegen makes of the test database's reader
 * schemas (`npm run codegen -- <pack dir> --verify`), so a migration that changes a view without
 * regenerating them fails here, and a template naming a column the views lack fails the type check.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import { readerUrlFor } from '../support/packs.js';
import { createScratchDatabase, type ScratchDatabase } from '../support/scratch.js';

function codegen(dir: string, databaseUrl: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, ['scripts/codegen.mjs', dir, '--verify'], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
    encoding: 'utf8',
  });
  return { status: run.status, output: run.stdout + run.stderr };
}

let salesOnly: ScratchDatabase;
beforeAll(async () => {
  salesOnly = await createScratchDatabase('codegen');
});
afterAll(async () => {
  await salesOnly.drop();
});

describe('the generated table types', () => {
  it.each([
    ['.', salesPack],
    ['examples/support-desk', supportDeskPack],
  ] as const)('of %s match the live schema', (dir, pack) => {
    const { status, output } = codegen(dir, readerUrlFor(pack));
    expect(output).toMatch(/schema\.generated\.ts matches the schema of/);
    expect(status).toBe(0);
  });

  it('differ from a database that lacks the pack, and --verify says so', () => {
    const { status, output } = codegen('examples/support-desk', salesOnly.readerUrl);
    expect(output).toMatch(/schema\.generated\.ts differs from the schema of support_reporting\.\*/);
    expect(status).toBe(1);
  });
});
