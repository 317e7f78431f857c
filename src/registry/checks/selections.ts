import type { OperationNodeSource } from 'kysely';
import { createCompiler } from '../../db/connect.js';
import { readSelections, UnreadableSelection, type Selection } from '../../db/selections.js';
import { ConfigError } from '../../lib/errors.js';
import { MASK_FOR, type PersonalKind } from '../../lib/masking.js';
import { sourcesOf } from '../sources.js';
import type { AnyTemplate, PersonalColumn, PersonalColumns, SourceColumn } from '../types.js';
import { checkedCalls, startupQuery } from './checked-calls.js';

/**
 * Compiles the template for every combination of its enumerable and optional arguments, in both kinds
 * of zone, and holds the declared columns to what each really selects: every table column reached
 * anywhere in a selected expression is a source, and a personal one must be declared with its mask,
 * so a template cannot return a personal column wrapped in an expression, under another name, on a
 * branch no example reaches, or with a false `source`.
 */
export function assertSelections(template: AnyTemplate): void {
  const where = `template ${template.name}`;
  for (const example of template.examples) {
    if (!template.input.safeParse(example).success) {
      throw new ConfigError(`${where}: example ${JSON.stringify(example)} does not validate`);
    }
  }
  const compiler = createCompiler();
  const declared = Object.keys(template.columns).sort();
  for (const { args, ctx, branch } of checkedCalls(template)) {
    const capped = startupQuery(template, () => template.query(compiler, args, ctx).limit(1), branch);
    // The operation tree is all the check reads: skip writing the SQL text when the builder can.
    const query =
      'toOperationNode' in capped ? (capped as OperationNodeSource).toOperationNode() : capped.compile().query;
    let selections: Selection[];
    try {
      selections = readSelections(query, Object.keys(template.personal));
    } catch (err) {
      if (!(err instanceof UnreadableSelection)) throw err;
      throw new ConfigError(`${where}: column ${err.alias} ${err.message} ${branch}`);
    }
    const aliases = selections.map((s) => s.alias).sort();
    if (JSON.stringify(aliases) !== JSON.stringify(declared)) {
      throw new ConfigError(`${where}: selects ${aliases.join(', ')} but declares ${declared.join(', ')} ${branch}`);
    }
    for (const { alias, direct, sources } of selections) {
      const column = template.columns[alias]!;
      // A protected count reads the person to key its cell (the sum of keyed hashes of its people,
      // src/lib/protected-counts.ts) and returns a count: it must be a computed integer, and the
      // registry holds every value it returns to 0 or at least the threshold (shaping/rows.ts).
      if (template.protectedFigures?.includes(alias)) {
        if (column.type !== 'integer' || column.source !== 'computed' || column.treatment !== 'plain') {
          throw new ConfigError(`${where}: column ${alias} is a protected count: declare it a computed, plain integer`);
        }
        continue;
      }
      const declaredSources = sourcesOf(column);
      for (const source of sources) {
        const personal = personalSource(template.personal, source);
        if (personal && !declaredSources.includes(personal.key)) {
          throw new ConfigError(
            `${where}: column ${alias} selects ${personal.key}${direct ? '' : ' inside an expression'} but declares source ${String(column.source)}; ` +
              `a personal column (${personal.kind}) must be declared as a source with mask "${MASK_FOR[personal.kind]}" ${branch}`,
          );
        }
      }
      if (direct && declaredSources.length > 0 && sources.length > 0) {
        if (!sources.some((s) => declaredSources.includes(s as SourceColumn))) {
          throw new ConfigError(
            `${where}: column ${alias} selects ${sources.join(', ')} but declares source ${String(column.source)} ${branch}`,
          );
        }
      }
    }
  }
}

/** The declared personal column a selected source is, if any ("table.column" matches it in any schema). */
function personalSource(
  personal: PersonalColumns,
  source: string,
): { key: SourceColumn; kind: PersonalKind } | undefined {
  for (const [key, column] of Object.entries(personal) as [SourceColumn, PersonalColumn][]) {
    if (key === source || (source.split('.').length === 2 && key.endsWith(`.${source}`))) {
      return { key, kind: column.kind };
    }
  }
  return undefined;
}
