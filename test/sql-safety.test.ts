/**
 * Values reach SQL only as bind parameters. A scan of every pack's code refuses raw SQL builders and
 * SQL text built by string concatenation; the registry itself refuses, at start-up, a template whose
 * SQL text changes with a value (test/registry/treatments.test.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Code that builds SQL from strings instead of with Kysely's builders and bind parameters. */
function unsafeSqlBuilding(source: string): string[] {
  const findings: string[] = [];
  const patterns: Array<[RegExp, string]> = [
    [/\bsql\s*\.\s*(raw|lit)\s*\(/g, 'sql.raw/sql.lit puts text into SQL unparameterized'],
    [/\.\s*raw\s*\(/g, 'a raw() call'],
    // A template literal that is not tagged `sql` but interpolates into SQL-looking text.
    [
      /(?<![\w.]sql(?:<[^`<>]*(?:<[^`<>]*>)?[^`<>]*>)?|\bsql(?:<[^`<>]*(?:<[^`<>]*>)?[^`<>]*>)?)`[^`]*\b(select|insert|update|delete|where|from|join|order by|group by)\b[^`]*\$\{/gi,
      'SQL text built with a template literal',
    ],
    [/['"][^'"\n]*\b(select|where|from)\b[^'"\n]*['"]\s*\+/gi, 'SQL text built by concatenation'],
    [/\+\s*['"][^'"\n]*\b(select|where|from|and|or)\b[^'"\n]*['"]/gi, 'SQL text built by concatenation'],
  ];
  for (const [pattern, why] of patterns) {
    for (const match of source.matchAll(pattern)) findings.push(`${why}: ${match[0].slice(0, 80)}`);
  }
  return findings;
}

/** The folders of every pack: the sales pack at the top, the examples under examples/. */
const PACK_ROOTS = ['.', ...readdirSync('examples').map((name) => join('examples', name))];

/**
 * A pack's code as it reaches the reader: its templates and reports (`queries/`, `reports/`) and every
 * module of the pack they import, followed import by import, and its entry point (`pack/index.ts`)
 * itself. What only the entry point imports beside them (its seed: the demo data, written as the admin
 * from the pack's own constants; its prompts and docs, which are text) is not on that path, so an
 * admin-side seed builds its SQL as it likes.
 */
function shippedCode(root: string): string[] {
  const start = ['queries', 'reports']
    .map((dir) => join(root, dir))
    .filter((dir) => existsSync(dir))
    .flatMap((dir) =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .map((f) => join(dir, f)),
    );
  const seen = new Set<string>();
  const stack = [...start];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const match of readFileSync(file, 'utf8').matchAll(/from\s*['"](\.[^'"]+)['"]/g)) {
      const target = normalize(join(dirname(file), match[1]!.replace(/\.js$/, '.ts')));
      // The engine (src/) is a package to a pack: its SQL-writing rooms are listed below.
      if (!relative(root, target).startsWith('..') && !target.startsWith('src') && existsSync(target)) {
        stack.push(target);
      }
    }
  }
  const entry = join(root, 'pack', 'index.ts');
  if (existsSync(entry)) seen.add(normalize(entry));
  return [...seen].sort();
}

const TEMPLATE_CODE = [
  ...PACK_ROOTS.flatMap(shippedCode),
  'src/db/range-sql.ts',
  'src/db/connect.ts',
  // The metrics engine's one room that writes SQL: every query_metrics statement, from a pack's
  // declarations and a call.
  'src/metrics/statement.ts',
];

describe('the template code', () => {
  it('the scan catches each way of building SQL from strings', () => {
    const bad = [
      "sql.raw(`'${args.start_date}'`)",
      'sql.lit(args.status)',
      "const q = `select * from reporting.orders where status = '${args.status}'`;",
      "const q = 'select * from reporting.orders where status = ' + args.status;",
      "const q = base + ' where status = ' + args.status;",
    ];
    for (const line of bad) expect(unsafeSqlBuilding(line), line).not.toEqual([]);
    expect(unsafeSqlBuilding("sql<string>`round(sum(${eb.ref('o.total_amount')}), 2)`")).toEqual([]);
    // A typed fragment is still the sql tag: its values are parameters, whatever words it holds.
    expect(unsafeSqlBuilding("sql<string>`(select max(x) from t where t.a = ${eb.ref('o.a')})`")).toEqual([]);
    expect(unsafeSqlBuilding('sql<Record<string, number>>`select 1 from t where a = ${v}`')).toEqual([]);
  });

  it('reads the code of every pack', () => {
    expect(TEMPLATE_CODE).toContain(join('queries', 'query-sales.ts'));
    expect(TEMPLATE_CODE).toContain(join('pack', 'range-sql.ts'));
    expect(TEMPLATE_CODE).toContain(join('src', 'metrics', 'statement.ts'));
    expect(TEMPLATE_CODE).toContain(join('pack', 'metrics.ts'));
    expect(TEMPLATE_CODE).toContain(join('examples', 'support-desk', 'queries', 'query-ticket-volume.ts'));
    expect(TEMPLATE_CODE).toContain(join('pack', 'index.ts'));
    // The seed is the admin's, reached from the pack's entry point alone.
    expect(TEMPLATE_CODE).not.toContain(join('pack', 'seed.ts'));
  });

  it.each(TEMPLATE_CODE)('%s builds no SQL from strings', (file) => {
    expect(unsafeSqlBuilding(readFileSync(file, 'utf8'))).toEqual([]);
  });
});
