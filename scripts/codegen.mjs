#!/usr/bin/env node
/**
 * Regenerates a pack's table types from the live schema with kysely-codegen: the relations of the
 * pack's reader schemas, as the reader sees them, into <pack dir>/pack/schema.generated.ts, formatted
 * as the rest of the code. With --verify it writes nothing and exits 1 when the checked-in file differs.
 *
 *   DATABASE_URL=postgres://... npm run codegen -- examples/support-desk [--verify]
 *   DATABASE_URL=postgres://... npm run codegen -- .                       (the sales pack, at the root)
 *
 * The pack's reader schemas are read from its compiled module (dist/<pack dir>/pack/index.js): run
 * `npm run build` first. Migrate the database first too (`querygate migrate`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as prettier from 'prettier';

const ROOT = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const verify = args.includes('--verify');
const [dir, ...rest] = args.filter((a) => a !== '--verify');
if (!dir || rest.length > 0) {
  console.error('usage: npm run codegen -- <pack dir> [--verify]   (DATABASE_URL: the database to read)');
  process.exit(2);
}
if (!process.env.DATABASE_URL) {
  console.error('codegen: set DATABASE_URL to the migrated database (the reader role or an admin)');
  process.exit(2);
}

const packDir = resolve(ROOT, dir);
const compiled = join(ROOT, 'dist', relative(ROOT, packDir), 'pack', 'index.js');
if (!existsSync(compiled)) {
  console.error(`codegen: ${relative(ROOT, compiled)} is missing; run \`npm run build\` first`);
  process.exit(2);
}
const module = await import(pathToFileURL(compiled).href);
const pack = module.default ?? module.pack;
const schemas = pack?.readerSchemas;
if (!Array.isArray(schemas) || schemas.length === 0) {
  console.error(`codegen: ${relative(ROOT, compiled)} exports no pack with readerSchemas`);
  process.exit(2);
}

const target = join(packDir, 'pack', 'schema.generated.ts');
const scratch = mkdtempSync(join(tmpdir(), 'querygate-codegen-'));
try {
  const out = join(scratch, 'schema.generated.ts');
  const include = schemas.length === 1 ? `${schemas[0]}.*` : `{${schemas.join(',')}}.*`;
  const run = spawnSync(
    join(ROOT, 'node_modules', '.bin', 'kysely-codegen'),
    ['--dialect', 'postgres', '--include-pattern', include, '--out-file', out, '--log-level', 'error'],
    { stdio: ['ignore', 'inherit', 'inherit'], env: process.env },
  );
  if (run.status !== 0) process.exit(run.status ?? 1);
  const generated = await prettier.format(readFileSync(out, 'utf8'), {
    ...(await prettier.resolveConfig(target)),
    filepath: target,
  });
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (verify) {
    if (generated !== current) {
      console.error(`codegen: ${relative(ROOT, target)} differs from the schema of ${include}; run the codegen again`);
      process.exit(1);
    }
    console.log(`codegen: ${relative(ROOT, target)} matches the schema of ${include}`);
  } else {
    writeFileSync(target, generated);
    console.log(`codegen: wrote ${relative(ROOT, target)} from ${include}`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
