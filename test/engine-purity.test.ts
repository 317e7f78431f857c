/**
 * The line between the engine and its packs: src/ imports nothing from outside src/ but packages, and
 * names no table of any pack the test database holds, in code or in comments (see namings: a one-word
 * name counts qualified or as a literal, not as a word of prose). A new pack's tables join the check
 * as soon as its migrations run in the test database, whether it is shipped or a user's.
 */
import { readdirSync, readFileSync } from 'node:fs';
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

/** Every module specifier a file names: static imports and exports, and string-literal dynamic imports. */
function specifiersOf(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/g))
    found.push(match[1]!);
  for (const match of text.matchAll(/(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)) found.push(match[1]!);
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1]!);
  return found;
}

/**
 * Where a text names a pack's relation: qualified by its schema (`sales.orders`, `"sales"."orders"`),
 * as a string literal of its own (`'orders'`, how code names a table), or, for a name of two words or
 * more (`order_items`), anywhere. A one-word name in prose (`2M orders`, `events`) is English, not
 * the pack: a user's pack whose views are `accounts` and `events` is judged by what names them.
 */
function namings(
  text: string,
  relations: readonly { schema: string; name: string }[],
): { name: string; line: number }[] {
  const found: { name: string; line: number }[] = [];
  const lineAt = (index: number): number => text.slice(0, index).split('\n').length;
  const bounded = (pattern: string): RegExp => new RegExp(`(?<![A-Za-z0-9_])${pattern}(?![A-Za-z0-9_])`);
  for (const { schema, name } of relations) {
    const qualified = bounded(`"?${schema}"?\\."?${name}"?`).exec(text);
    if (qualified) {
      found.push({ name: `${schema}.${name}`, line: lineAt(qualified.index) });
      continue;
    }
    const named = (name.includes('_') ? bounded(name) : new RegExp(`['"\`]${name}['"\`]`)).exec(text);
    if (named) found.push({ name, line: lineAt(named.index) });
  }
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

  it('the naming check finds a relation named in code, and not a common word in prose', () => {
    const relations = [
      { schema: 'sales', name: 'orders' },
      { schema: 'sales', name: 'order_items' },
      { schema: 'billing', name: 'events' },
    ];
    const found = (text: string): string[] => namings(text, relations).map((n) => n.name);
    expect(found("db.selectFrom('orders')")).toEqual(['orders']);
    expect(found('select * from sales.orders')).toEqual(['sales.orders']);
    expect(found('from "sales"."orders" as o')).toEqual(['sales.orders']);
    expect(found('// sums the order_items of an order')).toEqual(['order_items']);
    expect(found('billing.events')).toEqual(['billing.events']);
    expect(found('// At 2M orders the probe takes 0.5 s; events reach the log')).toEqual([]);
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
    expect(relations.map((r) => r.schema)).toEqual(
      expect.arrayContaining(['sales', 'reporting', 'support', 'support_reporting']),
    );
    const offenders: string[] = [];
    for (const file of engineFiles) {
      for (const { name, line } of namings(readFileSync(file, 'utf8'), relations)) {
        offenders.push(`${relative(ROOT, file)}:${line} names ${name}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
