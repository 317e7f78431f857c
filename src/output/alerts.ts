/**
 * Alert rules over a report's figures, declared in the configuration file per report and evaluated
 * with every run of it (by `querygate report` and by a schedule): a figure above or below a bound (a
 * refund rate above 6, a change against last week below -20), or a table that has rows (a notable day).
 * A figure is named as a restatement names it (src/history/restatement.ts): `metrics: refund_rate`,
 * `metrics: revenue EUR change_vs_last_week`. The engine knows no report: the rules are checked against
 * the report's answer schema before anything runs, so a misspelt table or column stops the run at once.
 */
import { z } from 'zod';
import { formatNumber } from '../render/figures.js';
import { figuresOf } from '../history/restatement.js';

export type AlertRule =
  { readonly figure: string; readonly above?: number; readonly below?: number } | { readonly rowsIn: string };

/** A rule that fired, as the answer carries it (`alerts`) and every format shows it. */
export interface FiredAlert {
  readonly rule: string;
  readonly text: string;
}

/** The rule as the configuration file writes it. */
export function describeRule(rule: AlertRule): string {
  if ('rowsIn' in rule) return `rows in ${rule.rowsIn}`;
  return [
    rule.figure,
    rule.above === undefined ? '' : `above ${rule.above}`,
    rule.below === undefined ? '' : `below ${rule.below}`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** The rules that fire on an answer, in their order. A figure the answer lacks (a currency with no orders) fires none. */
export function firedAlerts(answer: Record<string, unknown>, rules: readonly AlertRule[]): FiredAlert[] {
  const figures = figuresOf(answer);
  const fired: FiredAlert[] = [];
  for (const rule of rules) {
    if ('rowsIn' in rule) {
      const rows = answer[rule.rowsIn];
      if (Array.isArray(rows) && rows.length > 0) {
        fired.push({
          rule: describeRule(rule),
          text: `Alert: ${rows.length} ${rows.length === 1 ? 'row' : 'rows'} in ${rule.rowsIn}.`,
        });
      }
      continue;
    }
    // One figure: a rule names its row by the row's text, as a restatement does (no wildcard over rows).
    const value = figures.get(rule.figure);
    if (value === undefined || value === null) continue;
    const over = rule.above !== undefined && value > rule.above;
    const under = rule.below !== undefined && value < rule.below;
    if (over || under) {
      fired.push({
        rule: describeRule(rule),
        text: `Alert: ${rule.figure} is ${formatNumber(value)}, ${over ? `above ${rule.above}` : `below ${rule.below}`}.`,
      });
    }
  }
  return fired;
}

/**
 * Why each rule cannot apply to the report, from its answer schema: a table that is none, a column
 * that holds no number. Gives one problem per rule, prefixed with `where` (its field in the file).
 */
export function alertRuleProblems(output: z.ZodType, rules: readonly AlertRule[], where: string): string[] {
  const schema = z.toJSONSchema(output, { io: 'output', unrepresentable: 'any' }) as {
    properties?: Record<
      string,
      {
        type?: string | string[];
        items?: { properties?: Record<string, { type?: string | string[]; anyOf?: { type?: string }[] }> };
      }
    >;
  };
  const properties = schema.properties ?? {};
  const isNumber = (p: { type?: string | string[]; anyOf?: { type?: string }[] } | undefined): boolean =>
    p !== undefined &&
    [p.type, ...(p.anyOf ?? []).map((a) => a.type)].flat().some((t) => t === 'number' || t === 'integer');
  const tables = Object.keys(properties).filter(
    (k) => properties[k]!.type === 'array' && properties[k]!.items?.properties,
  );
  return rules.flatMap((rule, i): string[] => {
    const at = `${where}[${i}]`;
    if ('rowsIn' in rule) {
      return tables.includes(rule.rowsIn)
        ? []
        : [`${at}.rows_in: "${rule.rowsIn}" is not a table of the report (its tables: ${tables.join(', ')})`];
    }
    const [table, rest] = rule.figure.includes(': ') ? rule.figure.split(': ', 2) : [rule.figure, undefined];
    if (rest === undefined) {
      return isNumber(properties[table!] as never)
        ? []
        : [
            `${at}.figure: "${rule.figure}" is neither a number of the report nor "TABLE: ROW COLUMN" (its tables: ${tables.join(', ')})`,
          ];
    }
    if (!tables.includes(table!)) {
      return [`${at}.figure: "${table}" is not a table of the report (its tables: ${tables.join(', ')})`];
    }
    const columns = properties[table!]!.items!.properties!;
    const numeric = Object.keys(columns).filter((c) => isNumber(columns[c]));
    const column = rest.split(' ').at(-1)!;
    // The last word is the column, or the row's key when the column is `value` (left out, as restatements write it).
    if (numeric.includes(column) || numeric.includes('value')) return [];
    return [`${at}.figure: "${rule.figure}" names no number of ${table} (its numbers: ${numeric.join(', ')})`];
  });
}
