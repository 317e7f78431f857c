/**
 * The SQL that keeps a declared rollup exact, written once for every rollup: its table, the triggers
 * on its facts and on each parent, its rebuild and its reader view. Only names reach this text, each
 * checked to be a lower-case SQL name (declaration.ts) and double-quoted; no value ever does. The
 * migration runs these statements as the admin.
 *
 * The design, which holds at READ COMMITTED, REPEATABLE READ and SERIALIZABLE
 * (test/migrations/rollup-isolation.test.ts):
 * - A fact's trigger locks its parent FOR SHARE, then that parent's parent, each locked first and then
 *   read (a locking read re-reads a row it had to wait for), and moves the fact's sums out of the row
 *   its old version was in (-) and into its new one (+). A change of a parent waits for it, or it for
 *   the change; on a snapshot older than a committed change of a parent, the lock refuses it (40001).
 * - A parent whose key columns (or link to its own parent) change moves the sums of every fact under
 *   it, as they stand, grouped, from the old row to the new. Above READ COMMITTED it first locks the
 *   parents below it FOR SHARE: a fact added under one of them since its snapshot touched that row (next
 *   point), so the change is refused (40001) instead of leaving the new fact in the old row.
 * - A row added under a parent, or pointed at another one, touches that parent (`set key = key`): a
 *   new version, so that a change of the parent on an older snapshot fails with 40001. Rows that
 *   already existed need no touch: a stale change that moves them meets a rollup row their writer
 *   changed, and is refused there. The touch is an after-insert trigger, so an upsert that updates
 *   touches nothing (a before-insert trigger fires for it too), named to fire before the triggers
 *   that lock the parent FOR SHARE, so the parent is locked for update first (two writers each holding
 *   it FOR SHARE and then wanting more would deadlock). The foreign key's own check, before them,
 *   locks only FOR KEY SHARE, which a touch (no key changes) does not wait for.
 * - A first parent deleted with its facts (a cascading foreign key) takes their sums out before it
 *   goes, while it can still be read; the facts' own triggers then find no parent and change nothing.
 *   Further up, the migration refuses a cascading key: the parent would be gone before the sums left.
 * - A truncate of any table of the chain empties the rollup.
 * The triggers run as the owner, so a writer needs no rights on the rollup. Writers of facts of one
 * rollup row queue on it (READ COMMITTED) or the later is refused (above).
 */
import type { RollupDeclaration, RollupKey, RollupMeasure } from './declaration.js';

/** What only the catalog can tell, read by the migration before it writes. */
export interface RollupCatalog {
  /** The SQL type of each key column, by key name (`char(3)`); a truncated key is timestamptz. */
  readonly keyTypes: ReadonlyMap<string, string>;
  /** The facts' foreign key to their first parent deletes them with it. */
  readonly cascadesFromFirstParent: boolean;
}

export const q = (name: string): string => `"${name}"`;

/** Which row (a record, a trigger's old or new, or a join alias) stands for each table of the chain. */
type Binding = ReadonlyMap<string, string>;

function keyValue(key: RollupKey, at: Binding): string {
  const column = `${at.get(key.from)!}.${q(key.column)}`;
  return key.truncate === undefined ? column : `date_trunc('${key.truncate}', ${column}, 'UTC')`;
}

/** A measure of one fact, as the row `fact` holds it. */
function factMeasure(measure: RollupMeasure, fact: string): string {
  if ('count' in measure) return '1';
  return measure.sum.map((column) => `${fact}.${q(column)}`).join(' * ');
}

/** A measure of many facts aliased `f`. */
function aggregateMeasure(measure: RollupMeasure): string {
  return 'count' in measure ? 'count(*)::bigint' : `sum(${factMeasure(measure, 'f')})`;
}

function measureType(measure: RollupMeasure): string {
  return 'sum' in measure && measure.scale !== undefined ? `numeric(18, ${measure.scale})` : 'bigint';
}

function keyType(key: RollupKey, catalog: RollupCatalog): string {
  return key.truncate === undefined ? catalog.keyTypes.get(key.name)! : 'timestamptz';
}

/** The column types of the rollup, keys then measures: its table's, and its add function's arguments. */
function columnTypes(d: RollupDeclaration, catalog: RollupCatalog): string[] {
  return [...d.keys.map((k) => keyType(k, catalog)), ...d.measures.map(measureType)];
}

/** The facts' table, then each parent's, nearest first. */
export const chainOf = (d: RollupDeclaration): string[] => [d.facts, ...d.parents.map((p) => p.table)];

export function rollupNames(d: RollupDeclaration) {
  const fn = (suffix: string): string => `${q(d.schema)}.${q(`${d.name}_${suffix}`)}`;
  return {
    table: `${q(d.schema)}.${q(d.name)}`,
    view: `${q(d.readerSchema)}.${q(d.name)}`,
    base: (table: string): string => `${q(d.schema)}.${q(table)}`,
    add: fn('add'),
    facts: fn('facts'),
    touch: (table: string): string => fn(`touch_${table}`),
    parent: (table: string): string => fn(`on_${table}`),
    deleted: fn('deleted'),
    truncate: fn('truncate'),
    rebuild: fn('rebuild'),
    rebuildRange: fn('rebuild_range'),
  };
}

/** The non-empty rows, as the reader's view and the check read them. */
export function rollupColumns(d: RollupDeclaration): string[] {
  return [...d.keys.map((k) => k.name), ...d.measures.map((m) => m.name)];
}

/** The columns the reader is granted on the rollup's view: every key, and every measure a template reads. */
export function readerColumns(d: RollupDeclaration): string[] {
  return [...d.keys.map((k) => k.name), ...d.measures.filter((m) => !m.unread).map((m) => m.name)];
}

/** The column that tells an empty row: the first count. */
export function sizeColumn(d: RollupDeclaration): string {
  return d.measures.find((m) => 'count' in m)!.name;
}

/** `from <facts> f join <parent 1> p1 on … join <parent n> pn on …`, up to parent `upTo` (all by default). */
function chainJoin(d: RollupDeclaration, upTo = d.parents.length): string {
  const names = rollupNames(d);
  let text = `from ${names.base(d.facts)} f`;
  let previous = 'f';
  for (const [i, parent] of d.parents.slice(0, upTo).entries()) {
    const alias = `p${i + 1}`;
    text += ` join ${names.base(parent.table)} ${alias} on ${alias}.${q(parent.key)} = ${previous}.${q(parent.link)}`;
    previous = alias;
  }
  return text;
}

/** The alias of each table of the chain in the base rows' query: the facts `f`, the parents `p1`, `p2`. */
const chainAliases = (d: RollupDeclaration): Binding =>
  new Map<string, string>([['facts', 'f'], ...d.parents.map((p, i): [string, string] => [p.table, `p${i + 1}`])]);

/**
 * The rollup's rows computed from the base rows: what the rebuild writes and the check compares; with
 * `within`, only those whose time key falls in [from, before) (two SQL expressions at the key's grain).
 */
export function baseRowsQuery(d: RollupDeclaration, within?: { from: string; before: string }): string {
  const at = chainAliases(d);
  const keys = d.keys.map((k) => keyValue(k, at));
  const measures = d.measures.map(aggregateMeasure);
  const groups = d.keys.map((_, i) => i + 1).join(', ');
  const key = timeKey(d);
  const time = key === undefined ? undefined : `${at.get(key.from)!}.${q(key.column)}`;
  const where = within && time ? ` where ${time} >= ${within.from} and ${time} < ${within.before}` : '';
  return `select ${[...keys, ...measures].join(', ')} ${chainJoin(d)}${where} group by ${groups}`;
}

/** The one key cut to a UTC hour or day, which a range rebuild goes by; none where there is not exactly one. */
export function timeKey(d: RollupDeclaration): RollupKey | undefined {
  const cut = d.keys.filter((k) => k.truncate !== undefined);
  return cut.length === 1 ? cut[0] : undefined;
}

/**
 * The parents from `first` (a 0-based index) up, each locked FOR SHARE and read into `r<i>`, found
 * from `from` (the row below the first); `body` runs when every one is found.
 */
function lockedChain(d: RollupDeclaration, first: number, from: string, body: string): string {
  if (first >= d.parents.length) return body;
  const parent = d.parents[first]!;
  const record = `r${first + 1}`;
  return [
    `select * into ${record} from ${rollupNames(d).base(parent.table)} where ${q(parent.key)} = ${from}.${q(parent.link)} for share;`,
    `if found then`,
    lockedChain(d, first + 1, record, body),
    `end if;`,
  ].join('\n');
}

const records = (d: RollupDeclaration): string =>
  d.parents.length === 0 ? '' : `declare ${d.parents.map((_, i) => `r${i + 1} record;`).join(' ')}`;

function addCall(d: RollupDeclaration, keys: string[], measures: string[]): string {
  return `${rollupNames(d).add}(${[...keys, ...measures].join(', ')})`;
}

/** A fact's version `row` in (sign 1) or out (-1) of its rollup row. */
function factMove(d: RollupDeclaration, row: 'old' | 'new', sign: 1 | -1): string {
  const at = new Map<string, string>([
    ['facts', row],
    ...d.parents.map((p, i): [string, string] => [p.table, `r${i + 1}`]),
  ]);
  const measures = d.measures.map((m) => (sign < 0 ? `-(${factMeasure(m, row)})` : factMeasure(m, row)));
  return lockedChain(
    d,
    0,
    row,
    `perform ${addCall(
      d,
      d.keys.map((k) => keyValue(k, at)),
      measures,
    )};`,
  );
}

/**
 * Parent `index`'s version `row` takes every fact under it in (1) or out (-1): the parents above it
 * locked and read into r<i>, the facts below grouped by their own keys.
 */
function parentMove(d: RollupDeclaration, index: number, row: 'old' | 'new', sign: 1 | -1): string {
  const parent = d.parents[index]!;
  const below = index === 0 ? 'f' : `p${index}`;
  const at = new Map<string, string>([
    ['facts', 'f'],
    ...d.parents.slice(0, index).map((p, i): [string, string] => [p.table, `p${i + 1}`]),
  ]);
  const lower = d.keys.filter((k) => at.has(k.from));
  const grouped = [
    ...lower.map((k, i) => `${keyValue(k, at)} as k${i}`),
    ...d.measures.map((m, i) => `${aggregateMeasure(m)} as m${i}`),
  ];
  const facts =
    `(select ${grouped.join(', ')} ${chainJoin(d, index)} where ${below}.${q(parent.link)} = ${row}.${q(parent.key)}` +
    `${lower.length > 0 ? ` group by ${lower.map((_, i) => i + 1).join(', ')}` : ''} having count(*) > 0) g`;
  const outer = new Map<string, string>([
    [parent.table, row],
    ...d.parents.slice(index + 1).map((p, i): [string, string] => [p.table, `r${index + i + 2}`]),
  ]);
  const keys = d.keys.map((k) => (at.has(k.from) ? `g.k${lower.indexOf(k)}` : keyValue(k, outer)));
  const measures = d.measures.map((_, i) => (sign < 0 ? `-g.m${i}` : `g.m${i}`));
  return lockedChain(d, index + 1, row, `perform ${addCall(d, keys, measures)} from ${facts};`);
}

/** The columns of parent `index` whose change moves its facts: its key, its link up, and the keys read from it. */
function watchedColumns(d: RollupDeclaration, index: number): { column: string; compared: string }[] {
  const parent = d.parents[index]!;
  const watched = new Map<string, string>();
  const plain = (column: string): string => `old.${q(column)} is not distinct from new.${q(column)}`;
  watched.set(parent.key, plain(parent.key));
  const up = d.parents[index + 1];
  if (up) watched.set(up.link, plain(up.link));
  for (const key of d.keys.filter((k) => k.from === parent.table)) {
    const cut = (row: string): string => `date_trunc('${key.truncate}', ${row}.${q(key.column)}, 'UTC')`;
    const compared =
      key.truncate === undefined ? plain(key.column) : `${cut('old')} is not distinct from ${cut('new')}`;
    if (!watched.has(key.column)) watched.set(key.column, compared);
  }
  return [...watched].map(([column, compared]) => ({ column, compared }));
}

/** Every statement that makes the rollup, in order, and fills it from the rows already there. */
export function createStatements(d: RollupDeclaration, catalog: RollupCatalog, reader: string): string[] {
  const names = rollupNames(d);
  const columns = rollupColumns(d);
  const keyColumns = d.keys.map((k) => q(k.name)).join(', ');
  const types = columnTypes(d, catalog);
  const statements: string[] = [];
  const plpgsql = (fn: string, returns: string, declare: string, body: string): string =>
    `create function ${fn}() returns ${returns} language plpgsql as $$\n${declare}\nbegin\n${body}\nend $$`;

  statements.push(
    `create table ${names.table} (${[
      ...columns.map((column, i) => `${q(column)} ${types[i]!} not null`),
      `primary key (${keyColumns})`,
    ].join(', ')})`,
  );
  const params = columns.map((_, i) => `$${i + 1}`).join(', ');
  const sums = d.measures.map((m) => `${q(m.name)} = t.${q(m.name)} + excluded.${q(m.name)}`).join(', ');
  statements.push(
    `create function ${names.add}(${types.join(', ')}) returns void language sql as $$
       insert into ${names.table} as t (${columns.map(q).join(', ')}) values (${params})
       on conflict (${keyColumns}) do update set ${sums};
     $$`,
  );
  statements.push(
    plpgsql(
      names.facts,
      'trigger',
      records(d),
      [
        `if tg_op in ('UPDATE', 'DELETE') then`,
        factMove(d, 'old', -1),
        `end if;`,
        `if tg_op in ('INSERT', 'UPDATE') then`,
        factMove(d, 'new', 1),
        `end if;`,
        `return null;`,
      ].join('\n'),
    ),
  );
  // The touches: the facts touch their first parent, each parent the one above it.
  const chain = chainOf(d);
  for (const [i, parent] of d.parents.entries()) {
    statements.push(
      plpgsql(
        names.touch(chain[i]!),
        'trigger',
        '',
        // A parent this transaction wrote already has a version as new as a touch would make.
        `update ${names.base(parent.table)} set ${q(parent.key)} = ${q(parent.key)}\n` +
          ` where ${q(parent.key)} = new.${q(parent.link)} and xmin <> pg_current_xact_id()::xid;\nreturn null;`,
      ),
    );
  }
  for (const [i, parent] of d.parents.entries()) {
    const unchanged = watchedColumns(d, i)
      .map((w) => w.compared)
      .join(' and ');
    const lockBelow =
      i === 0
        ? ''
        : [
            `if current_setting('transaction_isolation') <> 'read committed' then`,
            `perform 1 from ${names.base(chain[i]!)} b where b.${q(parent.link)} in (old.${q(parent.key)}, new.${q(parent.key)})`,
            `order by b.${q(d.parents[i - 1]!.key)} for share;`,
            `end if;`,
          ].join('\n');
    statements.push(
      plpgsql(
        names.parent(parent.table),
        'trigger',
        records(d),
        [
          `if ${unchanged} then return null; end if;`,
          lockBelow,
          parentMove(d, i, 'old', -1),
          parentMove(d, i, 'new', 1),
          `return null;`,
        ].join('\n'),
      ),
    );
  }
  if (catalog.cascadesFromFirstParent) {
    statements.push(plpgsql(names.deleted, 'trigger', records(d), `${parentMove(d, 0, 'old', -1)}\nreturn old;`));
  }
  statements.push(plpgsql(names.truncate, 'trigger', '', `truncate ${names.table};\nreturn null;`));
  // In key order, so that a range of one region's days lies on few pages.
  statements.push(
    `create function ${names.rebuild}() returns void language sql as $$
       delete from ${names.table};
       insert into ${names.table} (${columns.map(q).join(', ')})
       ${baseRowsQuery(d)} order by ${d.keys.map((_, i) => i + 1).join(', ')};
     $$`,
  );
  for (const fn of ownerFunctions(d, catalog)) {
    statements.push(`alter function ${fn}() security definer set search_path = pg_catalog, ${q(d.schema)}`);
    statements.push(`revoke execute on function ${fn}() from public`);
  }
  statements.push(`revoke execute on function ${names.add}(${types.join(', ')}) from public`);
  for (const t of triggers(d, catalog)) statements.push(t.statement);
  statements.push(`select ${names.rebuild}()`);
  const list = columns.map(q).join(', ');
  statements.push(`create view ${names.view} as select ${list} from ${names.table} where ${q(sizeColumn(d))} > 0`);
  statements.push(`revoke all on ${names.view} from public`);
  statements.push(...grantStatements(d, reader));
  return statements;
}

/** The reader's grant on the rollup's view, from nothing: only the columns it is to read. */
export function grantStatements(d: RollupDeclaration, reader: string): string[] {
  const view = rollupNames(d).view;
  return [
    `revoke all on ${view} from ${q(reader)}`,
    `grant select (${readerColumns(d).map(q).join(', ')}) on ${view} to ${q(reader)}`,
  ];
}

/** Trigger functions and the rebuild: they run as the owner, and nobody else may call them. */
function ownerFunctions(d: RollupDeclaration, catalog: RollupCatalog): string[] {
  const names = rollupNames(d);
  const chain = chainOf(d);
  return [
    names.facts,
    ...d.parents.map((_, i) => names.touch(chain[i]!)),
    ...d.parents.map((p) => names.parent(p.table)),
    ...(catalog.cascadesFromFirstParent ? [names.deleted] : []),
    names.truncate,
    names.rebuild,
  ];
}

interface TriggerSpec {
  readonly table: string;
  readonly name: string;
  readonly statement: string;
}

/**
 * The facts' own trigger: a fact inserted or deleted, or updated in a column the rollup reads (a key,
 * a summed column, the link to its first parent). Not on other updates: facts that are a parent of
 * other facts (orders, of their items) are touched (`set id = id`) by every child written, and their
 * rollup rows are not to be rewritten each time.
 */
function sumsTrigger(d: RollupDeclaration): { name: string; timing: string } {
  const read = new Set<string>([
    ...d.keys.filter((k) => k.from === 'facts').map((k) => k.column),
    ...d.measures.flatMap((m) => ('sum' in m ? [...m.sum] : [])),
    ...(d.parents[0] ? [d.parents[0].link] : []),
  ]);
  const update = read.size === 0 ? 'update' : `update of ${[...read].map(q).join(', ')}`;
  return { name: `${d.facts}_${d.name}_sums`, timing: `after insert or delete or ${update}` };
}

/**
 * Remakes the facts' own trigger of a rollup made before it fired only on the columns it reads
 * (sumsTrigger): the same function, the same name, the narrower event.
 */
export function sumsTriggerStatements(d: RollupDeclaration): string[] {
  const names = rollupNames(d);
  const sums = sumsTrigger(d);
  return [
    `drop trigger ${q(sums.name)} on ${names.base(d.facts)}`,
    `create trigger ${q(sums.name)} ${sums.timing} on ${names.base(d.facts)} for each row execute function ${names.facts}()`,
  ];
}

function triggers(d: RollupDeclaration, catalog: RollupCatalog): TriggerSpec[] {
  const names = rollupNames(d);
  const chain = chainOf(d);
  const made: TriggerSpec[] = [];
  const on = (table: string, name: string, timing: string, fn: string, when = ''): void => {
    made.push({
      table,
      name,
      statement: `create trigger ${q(name)} ${timing} on ${names.base(table)} for each row ${when}execute function ${fn}()`,
    });
  };
  // After-row triggers of a table fire in the order of their names: a touch (`_a_touch`) before the
  // sums (`_sums`) and moves (`_moves`) that lock the parent FOR SHARE.
  const sums = sumsTrigger(d);
  on(d.facts, sums.name, sums.timing, names.facts);
  for (const [i, parent] of d.parents.entries()) {
    const below = chain[i]!;
    on(below, `${below}_${d.name}_a_touch`, 'after insert', names.touch(below));
    on(
      below,
      `${below}_${d.name}_a_touch_new`,
      `after update of ${q(parent.link)}`,
      names.touch(below),
      `when (old.${q(parent.link)} is distinct from new.${q(parent.link)}) `,
    );
    const watched = watchedColumns(d, i)
      .map((w) => q(w.column))
      .join(', ');
    on(parent.table, `${parent.table}_${d.name}_moves`, `after update of ${watched}`, names.parent(parent.table));
  }
  if (catalog.cascadesFromFirstParent) {
    on(d.parents[0]!.table, `${d.parents[0]!.table}_${d.name}_delete`, 'before delete', names.deleted);
  }
  for (const table of chain) {
    made.push({
      table,
      name: `${table}_${d.name}_truncate`,
      statement: `create trigger ${q(`${table}_${d.name}_truncate`)} after truncate on ${names.base(table)} for each statement execute function ${names.truncate}()`,
    });
  }
  return made;
}

/** Every statement that unmakes the rollup. */
export function dropStatements(d: RollupDeclaration, catalog: RollupCatalog): string[] {
  const names = rollupNames(d);
  return [
    `drop view ${names.view}`,
    ...triggers(d, catalog).map((t) => `drop trigger ${q(t.name)} on ${names.base(t.table)}`),
    ...ownerFunctions(d, catalog).map((fn) => `drop function ${fn}()`),
    `drop function ${names.add}(${columnTypes(d, catalog).join(', ')})`,
    `drop table ${names.table}`,
  ];
}
