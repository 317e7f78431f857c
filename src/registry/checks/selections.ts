import {
  AggregateFunctionNode,
  AliasNode,
  ColumnNode,
  IdentifierNode,
  ReferenceNode,
  SelectAllNode,
  SelectionNode,
  SelectQueryNode,
  type OperationNode,
  type OperationNodeSource,
} from 'kysely';
import { createCompiler } from '../../db/connect.js';
import { readSelections, UnreadableSelection, type Selection } from '../../db/selections.js';
import { ConfigError } from '../../errors.js';
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
      if (column.treatment === 'hidden_groups') {
        const node = (query as SelectQueryNode).selections?.find((s) => selectedName(s) === alias)?.selection;
        if (!node || !isRowCount(node)) {
          throw new ConfigError(
            `${where}: column ${alias} is hidden_groups but is not a count(*) subquery; select hiddenGroupCount(eb, rows, ctx) under it ${branch}`,
          );
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

/**
 * Whether a selected expression is a scalar subquery of count(*) and nothing else: a `hidden_groups`
 * column may read personal columns (the cells it counts are of people), because it returns a count of
 * rows and never one of their values.
 */
function isRowCount(node: OperationNode): boolean {
  const subquery = AliasNode.is(node) ? node.node : node;
  if (!SelectQueryNode.is(subquery) || subquery.groupBy || subquery.setOperations) return false;
  const [only, ...more] = subquery.selections ?? [];
  if (!only || more.length > 0) return false;
  const counted = AliasNode.is(only.selection) ? only.selection.node : only.selection;
  return (
    AggregateFunctionNode.is(counted) &&
    counted.func === 'count' &&
    !counted.distinct &&
    !counted.over &&
    (counted.aggregated ?? []).every(
      (a) => SelectAllNode.is(a) || (SelectionNode.is(a) && SelectAllNode.is(a.selection)),
    )
  );
}

/** The name a selection gives its column, when it gives one. */
function selectedName(selection: SelectionNode): string | undefined {
  const node = selection.selection;
  if (AliasNode.is(node) && IdentifierNode.is(node.alias)) return node.alias.name;
  if (ReferenceNode.is(node) && ColumnNode.is(node.column)) return node.column.column.name;
  return undefined;
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
