/**
 * Values reach SQL only as bind parameters. A scan of the template code refuses raw SQL builders and
 * SQL text built by string concatenation; the compiled queries are checked in registry.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Code that builds SQL from strings instead of with Kysely's builders and bind parameters. */
function unsafeSqlBuilding(source: string): string[] {
  const findings: string[] = [];
  const patterns: Array<[RegExp, string]> = [
    [/\bsql\s*\.\s*(raw|lit)\s*\(/g, 'sql.raw/sql.lit puts text into SQL unparameterized'],
    [/\.\s*raw\s*\(/g, 'a raw() call'],
    // A template literal that is not tagged `sql` but interpolates into SQL-looking text.
    [
      /(?<![\w.]sql|\bsql)`[^`]*\b(select|insert|update|delete|where|from|join|order by|group by)\b[^`]*\$\{/gi,
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

const TEMPLATE_CODE = [
  ...readdirSync('queries').map((f) => join('queries', f)),
  'src/db/range-sql.ts',
  'src/db/connect.ts',
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
  });

  it.each(TEMPLATE_CODE)('%s builds no SQL from strings', (file) => {
    expect(unsafeSqlBuilding(readFileSync(file, 'utf8'))).toEqual([]);
  });
});
