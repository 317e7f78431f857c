/**
 * Reads a compiled Kysely select back: which output column comes straight from which table column.
 * The registry uses it at start-up to hold each template's column declarations to what it selects.
 */
import { AliasNode, ColumnNode, ReferenceNode, SelectQueryNode, TableNode, type OperationNode } from 'kysely';

export interface Selection {
  /** The output column's name. */
  readonly alias: string;
  /** "schema.table.column" when the column is selected as it is; undefined for expressions. */
  readonly source: string | undefined;
}

function tableName(node: TableNode): string {
  const { schema, identifier } = node.table;
  return schema ? `${schema.name}.${identifier.name}` : identifier.name;
}

/** The selections of a select query, with the table column behind each direct reference. */
export function readSelections(query: OperationNode): Selection[] {
  if (!SelectQueryNode.is(query)) throw new TypeError('not a select query');
  const tables = new Map<string, string>();
  const addTable = (node: OperationNode): void => {
    if (AliasNode.is(node) && TableNode.is(node.node) && node.alias.kind === 'IdentifierNode') {
      tables.set((node.alias as unknown as { name: string }).name, tableName(node.node));
    } else if (TableNode.is(node)) {
      tables.set(node.table.identifier.name, tableName(node));
    }
  };
  for (const from of query.from?.froms ?? []) addTable(from);
  for (const join of query.joins ?? []) addTable(join.table);

  return (query.selections ?? []).map((selectionNode) => {
    const selected = selectionNode.selection;
    const [expression, alias] = AliasNode.is(selected)
      ? [selected.node, (selected.alias as unknown as { name: string }).name]
      : [selected, undefined];
    if (ReferenceNode.is(expression) && ColumnNode.is(expression.column)) {
      const column = expression.column.column.name;
      const table = expression.table
        ? tables.get(expression.table.table.identifier.name)
        : tables.size === 1
          ? [...tables.values()][0]
          : undefined;
      return { alias: alias ?? column, source: table ? `${table}.${column}` : undefined };
    }
    return { alias: alias ?? '?', source: undefined };
  });
}
