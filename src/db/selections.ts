/**
 * Reads a compiled Kysely select back: for each output column, every table column its value is computed
 * from. The registry uses it at start-up to hold each template's column declarations to what it selects,
 * so that no personal column can leave unmasked by being wrapped in an expression.
 *
 * The walk is generic over Kysely's operation nodes: a reference anywhere inside a selected expression
 * (cast, function call, coalesce, concatenation, aggregate, CASE, window, scalar subquery, a raw `sql`
 * fragment's `eb.ref(...)`) is a source of that column. References to a subquery or CTE in FROM are
 * followed to the columns behind them, through every branch of a UNION. Raw SQL text cannot be walked,
 * so it may name no column at all: a column inside `sql` must be given through `eb.ref` or `sql.ref`.
 * One exemption: the bare argument of `count(...)` or `count(distinct ...)` is counted, not returned.
 *
 * One room, over 400 lines: the walk is one class whose methods recurse into each other over one
 * chain of scopes (a subquery's scope sees its parents', a raw fragment is judged against every name
 * in scope); split, each file would need the others' private state, and the walk would be read in pieces.
 */
import {
  AggregateFunctionNode,
  AliasNode,
  ColumnNode,
  FunctionNode,
  IdentifierNode,
  RawNode,
  ReferenceNode,
  SelectAllNode,
  SelectQueryNode,
  SelectionNode,
  TableNode,
  type OperationNode,
} from 'kysely';

export interface Selection {
  /** The output column's name. */
  readonly alias: string;
  /** True when the column is a plain column reference, possibly through a subquery or CTE. */
  readonly direct: boolean;
  /**
   * Every table column the value is computed from, as "schema.table.column" ("table.column" for a
   * table named without its schema); a whole-row reference gives "schema.table.*" and the table's
   * personal columns.
   */
  readonly sources: readonly string[];
}

/** A selection whose sources cannot be told for sure; the message says why and what to do. */
export class UnreadableSelection extends Error {
  constructor(
    readonly alias: string,
    message: string,
  ) {
    super(message);
    this.name = 'UnreadableSelection';
  }
}

/**
 * The selections of a select query, with every table column behind each. `personal` lists the
 * "schema.table.column" names that must never leave raw: raw SQL text may not spell their names, and a
 * whole-row reference to their table reaches them.
 */
export function readSelections(query: OperationNode, personal: readonly string[] = []): Selection[] {
  if (!SelectQueryNode.is(query)) throw new TypeError('not a select query');
  return new Reader(personal).outputs(query, undefined);
}

/** A FROM item: a table, a subquery or CTE whose columns are followed, or anything else (a function). */
type Relation =
  | { readonly kind: 'table'; readonly name: string }
  | {
      readonly kind: 'query';
      readonly node: OperationNode;
      /** Where the subquery's own outer references resolve. */
      readonly outer: Scope | undefined;
      /** A CTE's column list, which renames the subquery's columns by position. */
      readonly columns?: readonly string[];
      readonly lineage: Map<string, ReadonlySet<string>>;
      readonly open: Set<string>;
    }
  | { readonly kind: 'opaque'; readonly node: OperationNode; readonly outer: Scope | undefined };

interface Scope {
  readonly parent: Scope | undefined;
  readonly relations: Map<string, Relation>;
  readonly ctes: Map<string, Relation>;
}

/** The names a raw fragment may use besides function names, aliases and types after `::` or `as`. */
const SQL_WORDS = new Set(
  (
    'as and or not is null true false in like ilike similar to between symmetric distinct all any some case when then ' +
    'else end at time zone with without interval filter where over partition by order asc desc nulls first last ' +
    'rows range groups unbounded preceding following current row exclude ties others no within group from for ' +
    'leading trailing both escape isnull notnull unknown array date timestamp timestamptz text numeric bigint ' +
    'integer int smallint boolean double precision real varchar character varying year month day hour minute ' +
    'second epoch week quarter dow doy isodow isoyear'
  ).split(' '),
);

/** One token of raw SQL text: spaces, a string literal, a quoted name, `::`, a word, a number, or one character. */
const RAW_TOKEN =
  /\s+|[EeBbXxNn]?'(?:[^']|'')*'|"(?:[^"]|"")*"|::|--|\/\*|[A-Za-z_\u0080-\uffff][\w$\u0080-\uffff]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+|[\s\S]/gy;
const WORD = /^[A-Za-z_\u0080-\uffff]/;
const COUNT_OPEN = /\bcount\s*\(\s*(?:distinct\s+)?$/i;
const COUNT_CLOSE = /^\s*\)/;

class Reader {
  private readonly personalNames: ReadonlySet<string>;

  constructor(private readonly personal: readonly string[]) {
    this.personalNames = new Set(personal.map((p) => p.slice(p.lastIndexOf('.') + 1).toLowerCase()));
  }

  /** The output columns of a query: names from its first branch, sources from every branch. */
  outputs(query: SelectQueryNode, outer: Scope | undefined): Selection[] {
    const branches = this.branches(query);
    const first = branches[0]!;
    const selections = first.node.selections ?? [];
    const scopes = branches.map((branch) => this.scopeOf(branch.node, outer));
    return selections.map((selection, index) => {
      const alias = outputName(selection) ?? '?';
      const sources = new Set<string>();
      let direct = true;
      branches.forEach((branch, b) => {
        const at = (branch.node.selections ?? [])[index];
        if (!at || SelectAllNode.is(at.selection) || isSelectAllReference(at.selection)) {
          throw new UnreadableSelection(alias, 'comes from a select of every column (*); name each column instead');
        }
        const expression = AliasNode.is(at.selection) ? at.selection.node : at.selection;
        direct &&= ReferenceNode.is(expression);
        this.sources(expression, scopes[b], sources, alias);
      });
      return { alias, direct, sources: [...sources] };
    });
  }

  /** A query and the queries of its UNION, INTERSECT and EXCEPT, which give the same columns. */
  private branches(query: SelectQueryNode): { node: SelectQueryNode }[] {
    const all = [{ node: query }];
    for (const operation of query.setOperations ?? []) {
      if (!SelectQueryNode.is(operation.expression))
        throw new UnreadableSelection('?', 'a set operation is not a select');
      all.push(...this.branches(operation.expression));
    }
    return all;
  }

  /** The names a query's FROM, JOINs and WITH bring into scope. */
  private scopeOf(query: SelectQueryNode, parent: Scope | undefined): Scope {
    // CTEs see each other (and themselves, when recursive) but not the FROM of the query they belong to.
    const withScope: Scope = { parent, relations: new Map(), ctes: new Map() };
    for (const cte of query.with?.expressions ?? []) {
      withScope.ctes.set(cte.name.table.table.identifier.name, {
        kind: 'query',
        node: cte.expression,
        outer: withScope,
        ...(cte.name.columns ? { columns: cte.name.columns.map((c) => c.column.name) } : {}),
        lineage: new Map(),
        open: new Set(),
      });
    }
    const scope: Scope = { parent: withScope, relations: new Map(), ctes: new Map() };
    const items: { node: OperationNode; lateral: boolean }[] = [
      ...(query.from?.froms ?? []).map((node) => ({ node, lateral: false })),
      ...(query.joins ?? []).map((join) => ({
        node: join.table,
        lateral: /^Lateral|Apply$/.test(join.joinType),
      })),
    ];
    items.forEach(({ node, lateral }, index) => {
      const inner = AliasNode.is(node) ? node.node : node;
      // A lateral subquery also sees the FROM items before it.
      const outer: Scope = lateral
        ? { parent: withScope, relations: new Map(scope.relations), ctes: new Map() }
        : withScope;
      let name: string;
      let relation: Relation;
      if (TableNode.is(inner)) {
        const { schema, identifier } = inner.table;
        name = identifier.name;
        relation = (!schema && this.cte(identifier.name, withScope)) || {
          kind: 'table',
          name: schema ? `${schema.name}.${identifier.name}` : identifier.name,
        };
      } else {
        name = `?${index}`; // an unaliased function or raw FROM item: reachable by unqualified names only
        relation = SelectQueryNode.is(inner)
          ? { kind: 'query', node: inner, outer, lineage: new Map(), open: new Set() }
          : { kind: 'opaque', node: inner, outer };
      }
      if (AliasNode.is(node)) {
        if (!IdentifierNode.is(node.alias))
          throw new UnreadableSelection('?', 'a FROM item has an alias that is not a plain name');
        name = node.alias.name;
      }
      scope.relations.set(name, relation);
    });
    return scope;
  }

  private cte(name: string, scope: Scope | undefined): Relation | undefined {
    for (let s = scope; s; s = s.parent) {
      const found = s.ctes.get(name);
      if (found) return found;
    }
    return undefined;
  }

  /** Adds to `out` every table column that `node`, an expression read in `scope`, is computed from. */
  private sources(node: OperationNode, scope: Scope | undefined, out: Set<string>, alias: string): void {
    if (ReferenceNode.is(node)) {
      for (const source of this.resolve(node, scope, alias)) out.add(source);
    } else if (ColumnNode.is(node)) {
      for (const source of this.resolveName(node.column.name, scope, alias)) out.add(source);
    } else if (SelectionNode.is(node) && SelectAllNode.is(node.selection)) {
      for (const s of chain(scope))
        for (const r of s.relations.values()) this.addAll(this.columnOf(r, '*', alias), out);
    } else if (SelectQueryNode.is(node)) {
      this.subquery(node, scope, out, alias);
    } else if (RawNode.is(node)) {
      this.checkRawText(node, scope, alias);
      node.parameters.forEach((parameter, i) => {
        const counted =
          ReferenceNode.is(parameter) &&
          COUNT_OPEN.test(node.sqlFragments[i] ?? '') &&
          COUNT_CLOSE.test(node.sqlFragments[i + 1] ?? '');
        if (IdentifierNode.is(parameter)) {
          throw new UnreadableSelection(
            alias,
            `names ${JSON.stringify(parameter.name)} with sql.id; refer to columns with eb.ref() or sql.ref()`,
          );
        }
        if (!counted) this.sources(parameter, scope, out, alias);
      });
    } else if ((AggregateFunctionNode.is(node) || FunctionNode.is(node)) && node.func.toLowerCase() === 'count') {
      // count() returns how many, never the values it counts; its filter, order and window still count.
      const counted = AggregateFunctionNode.is(node) ? 'aggregated' : 'arguments';
      for (const [key, value] of Object.entries(node)) {
        if (key !== counted) this.children({ [key]: value }, scope, out, alias);
      }
      for (const argument of (node as unknown as Record<string, readonly OperationNode[]>)[counted] ?? []) {
        if (!ReferenceNode.is(argument) && !SelectionNode.is(argument)) this.sources(argument, scope, out, alias);
      }
    } else if (AliasNode.is(node)) {
      this.sources(node.node, scope, out, alias);
    } else if (TableNode.is(node)) {
      // A table in an expression (`to_json(c)`, sql.table) is its whole row.
      for (const source of this.resolveTable(node, '*', scope, alias)) out.add(source);
    } else if (IdentifierNode.is(node)) {
      throw new UnreadableSelection(
        alias,
        `names ${JSON.stringify(node.name)} as a bare identifier; refer to columns with eb.ref() or sql.ref()`,
      );
    } else if (node.kind === 'ValueNode' || node.kind === 'DataTypeNode' || node.kind === 'CollateNode') {
      // a bound or literal value, a type name or a collation: no column
    } else {
      this.children(node, scope, out, alias);
    }
  }

  /** Walks every operation node held by `node`'s properties, whatever its kind. */
  private children(node: object, scope: Scope | undefined, out: Set<string>, alias: string): void {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'kind') continue;
      for (const child of Array.isArray(value) ? value : [value]) {
        if (isNode(child)) this.sources(child, scope, out, alias);
      }
    }
  }

  /** Every reference anywhere in a subquery inside an expression counts: its selections, WHERE, JOINs. */
  private subquery(query: SelectQueryNode, outer: Scope | undefined, out: Set<string>, alias: string): void {
    const scope = this.scopeOf(query, outer);
    for (const cte of query.with?.expressions ?? []) this.sources(cte.expression, scope.parent, out, alias);
    for (const item of [...(query.from?.froms ?? []), ...(query.joins ?? []).map((j) => j.table)]) {
      const inner = AliasNode.is(item) ? item.node : item;
      if (!TableNode.is(inner)) this.sources(inner, scope, out, alias);
    }
    const { from: _from, joins, with: _with, ...rest } = query;
    for (const join of joins ?? []) if (join.on) this.sources(join.on, scope, out, alias);
    this.children(rest, scope, out, alias);
  }

  private resolve(reference: ReferenceNode, scope: Scope | undefined, alias: string): ReadonlySet<string> {
    const column = ColumnNode.is(reference.column) ? reference.column.column.name : '*';
    return reference.table
      ? this.resolveTable(reference.table, column, scope, alias)
      : this.resolveName(column, scope, alias);
  }

  private resolveTable(table: TableNode, column: string, scope: Scope | undefined, alias: string): ReadonlySet<string> {
    const { schema, identifier } = table.table;
    for (const s of chain(scope)) {
      const relation = s.relations.get(identifier.name);
      if (
        relation &&
        (!schema || (relation.kind === 'table' && relation.name === `${schema.name}.${identifier.name}`))
      ) {
        return this.columnOf(relation, column, alias);
      }
    }
    const name = schema ? `${schema.name}.${identifier.name}` : identifier.name;
    throw new UnreadableSelection(alias, `refers to ${name}.${column}, but no table in scope is called ${name}`);
  }

  /**
   * An unqualified name may be a column of any table in scope (their columns are not known here), or a
   * whole row: every candidate counts, so a name that might be personal is treated as personal.
   */
  private resolveName(column: string, scope: Scope | undefined, alias: string): ReadonlySet<string> {
    const found = new Set<string>();
    let relations = 0;
    for (const s of chain(scope)) {
      for (const [name, relation] of s.relations) {
        relations++;
        if (relation.kind !== 'query' || this.outputNames(relation).includes(column) || this.hasSelectAll(relation)) {
          this.addAll(this.columnOf(relation, column, alias), found);
        }
        if (name === column) this.addAll(this.columnOf(relation, '*', alias), found);
      }
    }
    if (relations === 0) throw new UnreadableSelection(alias, `refers to ${column}, but no table is in scope`);
    return found;
  }

  /** The table columns behind one column of a FROM item ('*' for its whole row). */
  private columnOf(relation: Relation, column: string, alias: string): ReadonlySet<string> {
    if (relation.kind === 'table') {
      if (column !== '*') return new Set([`${relation.name}.${column}`]);
      // A table named without its schema matches a personal column of that name in any schema.
      const ofTable = (p: string): boolean => {
        const table = p.slice(0, p.lastIndexOf('.'));
        return table === relation.name || (!relation.name.includes('.') && table.endsWith(`.${relation.name}`));
      };
      return new Set([`${relation.name}.*`, ...this.personal.filter(ofTable)]);
    }
    if (relation.kind === 'opaque') {
      // A function or raw FROM item: its columns come from whatever it reads.
      const out = new Set<string>();
      this.sources(relation.node, relation.outer, out, alias);
      return out;
    }
    const known = relation.lineage.get(column);
    if (known) return known;
    if (relation.open.has(column)) return new Set(); // a recursive CTE reading itself: its other branches count
    relation.open.add(column);
    try {
      const out = new Set<string>();
      if (!SelectQueryNode.is(relation.node)) {
        this.sources(relation.node, relation.outer, out, alias);
      } else {
        const branches = this.branches(relation.node);
        const names = relation.columns ?? branches[0]!.node.selections?.map((s) => outputName(s) ?? '?') ?? [];
        const index = names.indexOf(column);
        if (column === '*' || this.hasSelectAll(relation) || index === -1) {
          // Every column, or no way to pair names with positions: count everything the subquery selects.
          if (column !== '*' && !this.hasSelectAll(relation)) {
            throw new UnreadableSelection(alias, `refers to a column ${column} that the subquery does not select`);
          }
          for (const branch of branches) {
            const scope = this.scopeOf(branch.node, relation.outer);
            for (const selection of branch.node.selections ?? []) {
              if (SelectAllNode.is(selection.selection)) this.addAll(this.resolveName(column, scope, alias), out);
              else if (isSelectAllReference(selection.selection)) {
                this.addAll(this.resolveTable(selection.selection.table!, column, scope, alias), out);
              } else this.sources(selection.selection, scope, out, alias);
            }
          }
        } else {
          for (const branch of branches) {
            const selection = branch.node.selections?.[index];
            if (!selection) throw new UnreadableSelection(alias, 'a UNION branch selects fewer columns than the first');
            this.sources(selection.selection, this.scopeOf(branch.node, relation.outer), out, alias);
          }
        }
      }
      relation.lineage.set(column, out);
      return out;
    } finally {
      relation.open.delete(column);
    }
  }

  private outputNames(relation: Relation & { kind: 'query' }): readonly string[] {
    if (relation.columns) return relation.columns;
    if (!SelectQueryNode.is(relation.node)) return [];
    return (relation.node.selections ?? []).map((s) => outputName(s) ?? '?');
  }

  private hasSelectAll(relation: Relation): boolean {
    if (relation.kind !== 'query' || !SelectQueryNode.is(relation.node)) return false;
    return this.branches(relation.node).some((b) =>
      (b.node.selections ?? []).some((s) => SelectAllNode.is(s.selection) || isSelectAllReference(s.selection)),
    );
  }

  private addAll(from: ReadonlySet<string>, to: Set<string>): void {
    for (const item of from) to.add(item);
  }

  /**
   * Raw SQL text is not walked, so it must not name a column: any word in it must be SQL (a keyword, a
   * function name before `(`, a type after `::`, an alias after `as`), and never the name of a personal
   * column, a table in scope or a subquery's column, whatever SQL word it also is.
   */
  private checkRawText(node: RawNode, scope: Scope | undefined, alias: string): void {
    const forbidden = new Set(this.personalNames);
    for (const s of chain(scope)) {
      for (const [name, relation] of s.relations) {
        forbidden.add(name.toLowerCase());
        if (relation.kind === 'query') for (const c of this.outputNames(relation)) forbidden.add(c.toLowerCase());
      }
      for (const [name, cte] of s.ctes) {
        forbidden.add(name.toLowerCase());
        if (cte.kind === 'query') for (const c of this.outputNames(cte)) forbidden.add(c.toLowerCase());
      }
    }
    for (const fragment of node.sqlFragments) {
      const tokens: string[] = [];
      RAW_TOKEN.lastIndex = 0;
      for (let match = RAW_TOKEN.exec(fragment); match; match = RAW_TOKEN.exec(fragment)) {
        if (!/^\s+$/.test(match[0])) tokens.push(match[0]);
      }
      tokens.forEach((token, i) => {
        const refuse = (why: string): never => {
          throw new UnreadableSelection(
            alias,
            `has raw SQL text ${JSON.stringify(fragment.trim())} that ${why}; refer to columns with eb.ref() or sql.ref() so the check can see them`,
          );
        };
        if (token === '--' || token === '/*' || token === '$') refuse('holds a comment or a dollar quote');
        if (token === "'" || token === '"') refuse('holds an unterminated quote');
        // E'\'' ends where this reader does not think it does (and so does '\'' with
        // standard_conforming_strings off): a column named after it would go unseen.
        if (/^[EeBbXxNn]?'/.test(token) && (token.includes('\\') || /^[Ee]'/.test(token))) {
          refuse('holds a string literal with backslash escapes');
        }
        if (token.startsWith('"')) refuse(`names ${token}`);
        if (!WORD.test(token) || /^[EeBbXxNn]'/.test(token)) return; // not a word, or a string literal
        const word = token.toLowerCase();
        const before = tokens[i - 1]?.toLowerCase();
        const after = tokens[i + 1];
        if (before === '.' || after === '.') refuse(`names the qualified column or table ${token}`);
        if (forbidden.has(word)) refuse(`names ${token}`);
        if (before === '::' || before === 'as' || after === '(' || SQL_WORDS.has(word)) return;
        refuse(`names ${token}`);
      });
    }
  }
}

function* chain(scope: Scope | undefined): Generator<Scope> {
  for (let s = scope; s; s = s.parent) yield s;
}

function isNode(value: unknown): value is OperationNode {
  return typeof value === 'object' && value !== null && typeof (value as { kind?: unknown }).kind === 'string';
}

function isSelectAllReference(node: OperationNode): node is ReferenceNode {
  return ReferenceNode.is(node) && SelectAllNode.is(node.column);
}

/** The name a selection gives its column: its alias, or the column it references. */
function outputName(selection: SelectionNode): string | undefined {
  const selected = selection.selection;
  if (AliasNode.is(selected)) return IdentifierNode.is(selected.alias) ? selected.alias.name : undefined;
  if (ReferenceNode.is(selected) && ColumnNode.is(selected.column)) return selected.column.column.name;
  if (ColumnNode.is(selected)) return selected.column.name;
  return undefined;
}
