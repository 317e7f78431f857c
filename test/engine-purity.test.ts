/**
 * The line between the engine and its packs: src/ imports nothing from outside src/ but packages, and
 * names no table of any pack the test database holds, in code or in comments. A new pack's tables
 * join the check as soon as its migrations run in the test database.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOB_SCHEMA } from '../src/db/job-role.js';
import { connectAdmin } from './support/harness.js';

const ROOT = resolve(import.meta.dirname, '..');
const ENGINE = join(ROOT, 'src');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourcesUnder(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

const engineFiles = sourcesUnder(ENGINE);

/** The schemas the repository's own packs create, read from their migrations. */
function shippedSchemas(): string[] {
  const folders = [
    join(ROOT, 'migrations'),
    ...readdirSync(join(ROOT, 'examples')).map((pack) => join(ROOT, 'examples', pack, 'migrations')),
  ].filter((folder) => existsSync(folder));
  const schemas = new Set<string>();
  for (const folder of folders) {
    for (const file of readdirSync(folder).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(folder, file), 'utf8');
      for (const match of text.matchAll(/create schema (?:if not exists )?([a-z_][a-z0-9_]*)/g)) schemas.add(match[1]!);
    }
  }
  return [...schemas];
}

/** Every module specifier a file names: static imports and exports, and string-literal dynamic imports. */
function specifiersOf(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/g))
    found.push(match[1]!);
  for (const match of text.matchAll(/(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)) found.push(match[1]!);
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1]!);
  return found;
}

describe('the engine knows no pack', () => {
  it('finds the engine sources it checks', () => {
    expect(engineFiles.length).toBeGreaterThan(30);
    expect(engineFiles.map((f) => relative(ROOT, f))).toContain('src/registry/index.ts');
  });

  it('src/ imports nothing from outside src/ except packages', () => {
    const outside: string[] = [];
    for (const file of engineFiles) {
      for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
        if (!specifier.startsWith('.') && !specifier.startsWith('/')) continue; // a package or node:
        const target = resolve(dirname(file), specifier);
        if (relative(ENGINE, target).startsWith('..')) outside.push(`${relative(ROOT, file)} imports ${specifier}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('the import check sees a pack import when there is one', () => {
    // The check above must be able to fail: the pack's own entry point imports the sales templates.
    const packEntry = readFileSync(join(ROOT, 'pack', 'index.ts'), 'utf8');
    expect(specifiersOf(packEntry)).toContain('../queries/index.js');
  });

  it('src/ names no table, view or column-owning relation of any pack in the test database', async () => {
    const admin = await connectAdmin();
    let relations: { schema: string; name: string }[];
    try {
      relations = (
        await admin.query<{ schema: string; name: string }>(
          `select n.nspname as schema, c.relname as name
             from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where c.relkind in ('r', 'p', 'v', 'm', 'f')
              and n.nspname not in ('pg_catalog', 'information_schema', 'public') and n.nspname not like 'pg\\_%'
              and n.nspname <> $1`,
          // The engine's own job store is no pack's.
          [JOB_SCHEMA],
        )
      ).rows;
    } finally {
      await admin.end();
    }
    // The sales pack's tables are there, so the check has something to find.
    expect(relations).toContainEqual({ schema: 'sales', name: 'orders' });
    // The repository's packs' relations by bare name; a user's pack served by the tests (QUERYGATE_PACKS)
    // by qualified name only, so that a table called `events` does not fault the engine's every `events`.
    const shipped = shippedSchemas();
    expect(shipped).toEqual(expect.arrayContaining(['sales', 'reporting', 'support', 'support_reporting']));
    const names = [...new Set(relations.map((r) => (shipped.includes(r.schema) ? r.name : `${r.schema}\\.${r.name}`)))];
    const offenders: string[] = [];
    for (const file of engineFiles) {
      const text = readFileSync(file, 'utf8');
      for (const name of names) {
        const at = new RegExp(`(?<![A-Za-z0-9_])${name}(?![A-Za-z0-9_])`).exec(text);
        if (at) {
          const line = text.slice(0, at.index).split('\n').length;
          offenders.push(`${relative(ROOT, file)}:${line} names ${name}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
