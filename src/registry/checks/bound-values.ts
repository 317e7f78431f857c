import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ConfigError } from '../../lib/errors.js';
import { parseDay, quote } from '../../lib/date-range.js';
import type { AnyTemplate } from '../types.js';
import type { CompiledCall } from './checked-calls.js';

/**
 * Every value a caller chooses freely (a date, a number, free text) must reach the SQL as a bind
 * parameter: for every combination of the other arguments, in both kinds of zone, changing one such
 * value may change the statement's parameters but never its text. A value spliced in with sql.raw,
 * sql.lit, sql.id or string concatenation changes the text, and the template is refused.
 */
export function assertBoundValues(template: AnyTemplate, inputSchema: Tool['inputSchema'], call: CompiledCall): void {
  const { args, branch, statement, compile } = call;
  const where = `template ${template.name}`;
  const properties = (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const free = Object.keys(properties).filter((name) => {
    const property = properties[name]!;
    return !('enum' in property) && !('const' in property) && property.type !== 'boolean';
  });
  // The period reaches the builder as the days it stands for, which the free-value check varies.
  const enums = Object.keys(properties).flatMap((name) => {
    const values = properties[name]!.enum;
    return name !== 'period' && Array.isArray(values) ? [{ name, values: values.filter(isString) }] : [];
  });
  for (const [field, changed] of changedValues(args, free)) {
    // The period has been resolved to days: the changed days are checked as days.
    const { period: _period, ...days } = changed;
    const other = template.input.safeParse(days);
    if (!other.success) continue;
    if (statement.sql !== compile(other.data).sql) {
      throw new ConfigError(
        `${where}: argument ${field} changes the SQL text, not only its parameters ${branch}; ` +
          'every value must reach SQL as a bind parameter: use Kysely builders or sql`${value}`, never sql.raw, sql.lit, sql.id or string concatenation',
      );
    }
  }
  const [field] = splicedEnums(enums, args, statement.sql, (values) => {
    const { period: _period, ...days } = values;
    const other = template.input.safeParse(days);
    return other.success ? compile(other.data).sql : undefined;
  });
  if (field !== undefined) {
    throw new ConfigError(
      `${where}: argument ${field} (${quote(args[field])}) is written into the SQL text ${branch}; ` +
        "compare with it as a bind parameter (where(column, '=', args." +
        field +
        '), sql`${value}`) or choose a branch of the builder by it, never sql.lit, sql.raw or string concatenation',
    );
  }
}

const isString = (value: unknown): value is string => typeof value === 'string';

/**
 * The enum arguments whose value is written into a statement's text rather than bound: the value as
 * a quoted literal (what sql.lit writes), or a text that, with the value replaced by another of the
 * enum's, is exactly the other value's statement (what sql.raw or concatenation writes). A branch the
 * builder chooses by the value writes other SQL, never the value itself.
 */
function splicedEnums(
  enums: readonly { name: string; values: readonly string[] }[],
  args: Record<string, unknown>,
  sql: string,
  sqlOf: (args: Record<string, unknown>) => string | undefined,
): string[] {
  const spliced: string[] = [];
  for (const { name, values } of enums) {
    const value = args[name];
    if (!isString(value) || value === '') continue;
    if (sql.includes(`'${value.replaceAll("'", "''")}'`)) {
      spliced.push(name);
      continue;
    }
    const word = new RegExp(`(?<![\\w$"])${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w$"])`, 'g');
    if (sql.replace(word, '') === sql) continue;
    for (const other of values) {
      if (other === value) continue;
      const otherSql = sqlOf({ ...args, [name]: other });
      if (otherSql !== undefined && otherSql !== sql && sql.replace(word, () => other) === otherSql) {
        spliced.push(name);
        break;
      }
    }
  }
  return spliced;
}

/** The arguments with one freely chosen value changed at a time: dates a week later, numbers by one, text by a letter. */
function changedValues(args: Record<string, unknown>, free: readonly string[]): [string, Record<string, unknown>][] {
  const variants: [string, Record<string, unknown>][] = [];
  const shift = (day: unknown): unknown =>
    typeof day === 'string' && parseDay(day)
      ? new Date(parseDay(day)!.getTime() + 7 * 86_400_000).toISOString().slice(0, 10)
      : day;
  if (free.includes('start_date') && free.includes('end_date') && 'start_date' in args) {
    variants.push([
      'start_date/end_date',
      { ...args, start_date: shift(args.start_date), end_date: shift(args.end_date) },
    ]);
  }
  for (const name of free) {
    const value = args[name];
    if (name === 'start_date' || name === 'end_date' || value === undefined) continue;
    if (typeof value === 'number') {
      variants.push([name, { ...args, [name]: value + 1 }], [name, { ...args, [name]: value - 1 }]);
    } else if (typeof value === 'string') {
      variants.push([name, { ...args, [name]: parseDay(value) ? shift(value) : `${value}x` }]);
    }
  }
  return variants;
}
