/**
 * The SQL that keeps a declared rollup exact, written once for every rollup: its table, the triggers
 * on its facts and on each parent, and its reader view (its rebuilds are rebuilds.ts', its names and
 * base rows base-rows.ts'). Only names reach this text, each
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
 * - A parent touched apart (`touchApart`, a small table every writer reads) is touched in a table of
 *   its own, `<rollup>_<parent>_touches`, by the facts' writers and by its own changes alike: a stale
 *   writer of either meets the other's new row version there, and at SERIALIZABLE two writers of facts
 *   under different rows of it do not conflict over the parent table that both read whole.
 * - A derived fact (`derived`: a rollup whose rows other rollups sum under a parent of theirs) keeps no
 *   empty row, so a count of its rows counts the keys that hold facts. Its writers lock the rows of that
 *   parent they will move FOR NO KEY UPDATE, in key order, before anything else does: the rollups above
 *   share-lock the parent and then touch it for a row added, and two writers each holding the share
 *   lock the other's touch waits for would deadlock. The rollups above take their sums out before the
 *   parent is deleted (its rows leave after it, with the facts below them). Its rebuild mends only the
 *   rows that differ, which the rollups above follow.
 * The triggers run as the owner, so a writer needs no rights on the rollup. Writers of facts of one
 * rollup row queue on it (READ COMMITTED) or the later is refused (above).
 *
 * It stays one file past 400 lines: the facts' trigger, the parents' triggers, the touches and the
 * derived fact's locks are one design, each taking its locks in an order the others rely on, and
 * that order is read here in one place. Names and base rows (base-rows.ts) and the rebuilds
 * (rebuilds.ts) take no lock of a writer's and live apart.
 */
import {
  aggregateMeasure,
  chainJoin,
  chainOf,
  factMeasure,
  keyValue,
  q,
  readerColumns,
  rollupColumns,
  rollupNames,
  sizeColumn,
} from './base-rows.js';
import type { RollupDeclaration, RollupKey, RollupMeasure } from './declaration.js';
import { mendStatement, rebuildStatement } from './rebuilds.js';

/** What only the catalog (and the migration's other declarations) can tell, read before it writes. */
export interface RollupCatalog {
  /** The SQL type of each key column, by key name (`char(3)`); a truncated key is timestamptz. */
  readonly keyTypes: ReadonlyMap<string, string>;
  /** The SQL type of each parent's key column, by parent table. */
  readonly parentKeyTypes: ReadonlyMap<string, string>;
  /**
   * The facts leave with their first parent: their foreign key deletes them with it, or they are a
   * derived fact, whose rows its own triggers take out when the rows below them go with the parent.
   */
  readonly deletedWithFirstParent: boolean;
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

/**
 * A derived fact's writer locks the rows of the table it is summed under (orders) that it will move,
 * FOR NO KEY UPDATE, in key order: `ids` is an SQL list of their keys. The rollups above then share-lock
 * and touch them without waiting on each other's writers.
 */
function derivedLock(d: RollupDeclaration, ids: string): string {
  const under = d.derived!;
  const names = rollupNames(d);
  return (
    `perform 1 from ${names.base(under.table)} u where u.${q(under.key)} in (${ids})` +
    ` order by u.${q(under.key)} for no key update;`
  );
}

/** The facts column a derived fact's link key is taken from. */
const derivedColumn = (d: RollupDeclaration): string => d.keys.find((k) => k.name === d.derived!.link)!.column;

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
  const upsert = `insert into ${names.table} as t (${columns.map(q).join(', ')}) values (${params})
       on conflict (${keyColumns}) do update set ${sums}`;
  if (d.derived === undefined) {
    statements.push(`create function ${names.add}(${types.join(', ')}) returns void language sql as $$ ${upsert}; $$`);
  } else {
    // A derived fact keeps no empty row: a row of it is a fact of the rollups above.
    const sameKeys = d.keys.map((k, i) => `${q(k.name)} = $${i + 1}`).join(' and ');
    statements.push(
      `create function ${names.add}(${types.join(', ')}) returns void language plpgsql as $$
       declare n bigint;
       begin
         ${upsert} returning t.${q(sizeColumn(d))} into n;
         if n = 0 then delete from ${names.table} where ${sameKeys}; end if;
       end $$`,
    );
  }
  for (const parent of d.parents.filter((p) => p.touchApart)) {
    statements.push(
      `create table ${names.touches(parent.table)} (${q(parent.key)} ${catalog.parentKeyTypes.get(parent.table)!} primary key)`,
    );
  }
  statements.push(
    plpgsql(
      names.facts,
      'trigger',
      records(d),
      [
        ...(d.derived === undefined
          ? []
          : [
              derivedLock(
                d,
                `case when tg_op <> 'INSERT' then old.${q(derivedColumn(d))} end, ` +
                  `case when tg_op <> 'DELETE' then new.${q(derivedColumn(d))} end`,
              ),
            ]),
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
        parent.touchApart
          ? `${touchApart(d, parent, `new.${q(parent.link)}`)}\nreturn null;`
          : // A parent this transaction wrote already has a version as new as a touch would make.
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
    // A parent touched apart touches its own row, as a fact's writer does, so that one of them on an
    // older snapshot is refused; a derived fact's parent then locks what its facts will move, in order.
    const touched = parent.touchApart
      ? [
          touchApart(d, parent, `old.${q(parent.key)}`),
          `if new.${q(parent.key)} is distinct from old.${q(parent.key)} then`,
          touchApart(d, parent, `new.${q(parent.key)}`),
          `end if;`,
        ]
      : [];
    const below = i === 0 ? 'f' : `p${i}`;
    const locked =
      d.derived === undefined
        ? []
        : [
            derivedLock(
              d,
              `select f.${q(derivedColumn(d))} ${chainJoin(d, i)} where ${below}.${q(parent.link)} in (old.${q(parent.key)}, new.${q(parent.key)})`,
            ),
          ];
    statements.push(
      plpgsql(
        names.parent(parent.table),
        'trigger',
        records(d),
        [
          `if ${unchanged} then return null; end if;`,
          ...touched,
          ...locked,
          lockBelow,
          parentMove(d, i, 'old', -1),
          parentMove(d, i, 'new', 1),
          `return null;`,
        ].join('\n'),
      ),
    );
  }
  if (catalog.deletedWithFirstParent) {
    statements.push(plpgsql(names.deleted, 'trigger', records(d), `${parentMove(d, 0, 'old', -1)}\nreturn old;`));
  }
  statements.push(plpgsql(names.truncate, 'trigger', '', `truncate ${names.table};\nreturn null;`));
  statements.push(d.derived === undefined ? rebuildStatement(d) : mendStatement(d));
  for (const fn of ownerFunctions(d, catalog)) {
    statements.push(`alter function ${fn}() security definer set search_path = pg_catalog, ${q(d.schema)}`);
    statements.push(`revoke execute on function ${fn}() from public`);
  }
  statements.push(`revoke execute on function ${names.add}(${types.join(', ')}) from public`);
  for (const t of triggers(d, catalog)) statements.push(t.statement);
  statements.push(`select ${names.rebuild}()`);
  if (d.derived !== undefined) return statements; // read by the rollups above, never by the reader
  const list = columns.map(q).join(', ');
  statements.push(`create view ${names.view} as select ${list} from ${names.table} where ${q(sizeColumn(d))} > 0`);
  statements.push(`revoke all on ${names.view} from public`);
  statements.push(...grantStatements(d, reader));
  return statements;
}

/** A parent's row of its touches, made or given a new version: `key` is an SQL expression. */
function touchApart(d: RollupDeclaration, parent: RollupDeclaration['parents'][number], key: string): string {
  const touches = rollupNames(d).touches(parent.table);
  const k = q(parent.key);
  return `insert into ${touches} (${k}) values (${key}) on conflict (${k}) do update set ${k} = excluded.${k};`;
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
    ...(catalog.deletedWithFirstParent ? [names.deleted] : []),
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
  if (catalog.deletedWithFirstParent) {
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
    ...(d.derived === undefined ? [`drop view ${names.view}`] : []),
    ...triggers(d, catalog).map((t) => `drop trigger ${q(t.name)} on ${names.base(t.table)}`),
    ...ownerFunctions(d, catalog).map((fn) => `drop function ${fn}()`),
    `drop function ${names.add}(${columnTypes(d, catalog).join(', ')})`,
    `drop table ${names.table}`,
    ...d.parents.filter((p) => p.touchApart).map((p) => `drop table ${names.touches(p.table)}`),
  ];
}
