/**
 * A pack's migration that makes its declared rollups: it checks each declaration against the catalog
 * (the columns exist, a truncated key is a timestamptz, no foreign key up the chain deletes in
 * cascade), then runs the engine's statements (statements.ts). A migration that has run keeps its
 * meaning: a changed declaration needs a new migration that drops and remakes the rollup.
 */
import { CompiledQuery, type Kysely, type Migration } from 'kysely';
import { ConfigError } from '../../lib/errors.js';
import { checkRollupDeclaration, type RollupDeclaration } from './declaration.js';
import { rangeRebuildDropStatements, rangeRebuildStatements } from './rebuilds.js';
import { chainOf } from './base-rows.js';
import { createStatements, dropStatements, grantStatements, type RollupCatalog } from './statements.js';

async function run(db: Kysely<unknown>, statement: string): Promise<void> {
  await db.executeQuery(CompiledQuery.raw(statement));
}

async function columnType(
  db: Kysely<unknown>,
  schema: string,
  table: string,
  column: string,
): Promise<string | undefined> {
  const { rows } = await db.executeQuery<{ type: string }>(
    CompiledQuery.raw(
      `select format_type(a.atttypid, a.atttypmod) as type
         from pg_attribute a
        where a.attrelid = to_regclass(quote_ident($1) || '.' || quote_ident($2)) and a.attname = $3
          and a.attnum > 0 and not a.attisdropped`,
      [schema, table, column],
    ),
  );
  return rows[0]?.type;
}

/** The delete action of the foreign key from `table.link` to `parent`: c(ascade), r(estrict), a (no action), n, d; none. */
async function deleteAction(
  db: Kysely<unknown>,
  schema: string,
  table: string,
  link: string,
  parent: string,
): Promise<string | undefined> {
  const { rows } = await db.executeQuery<{ action: string }>(
    CompiledQuery.raw(
      `select c.confdeltype as action
         from pg_constraint c
         join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
        where c.contype = 'f' and cardinality(c.conkey) = 1 and a.attname = $3
          and c.conrelid = to_regclass(quote_ident($1) || '.' || quote_ident($2))
          and c.confrelid = to_regclass(quote_ident($1) || '.' || quote_ident($4))`,
      [schema, table, link, parent],
    ),
  );
  return rows[0]?.action;
}

/**
 * Reads what the statements need from the catalog, refusing a declaration the tables do not bear out.
 * `factsDerived`: the facts are a derived fact declared in the same migration (rollupMigration).
 */
export async function readRollupCatalog(
  db: Kysely<unknown>,
  d: RollupDeclaration,
  factsDerived = false,
): Promise<RollupCatalog> {
  const table = (from: string): string => (from === 'facts' ? d.facts : from);
  const needs = async (where: string, from: string, column: string): Promise<string> => {
    const type = await columnType(db, d.schema, table(from), column);
    if (type === undefined) {
      throw new ConfigError(
        `rollup ${d.name}: ${where} ${d.schema}.${table(from)}.${column} does not exist; name a column of ${d.schema}.${table(from)}`,
      );
    }
    return type;
  };
  const chain = chainOf(d);
  const parentKeyTypes = new Map<string, string>();
  for (const [i, parent] of d.parents.entries()) {
    parentKeyTypes.set(parent.table, await needs(`parents[${i}].key`, parent.table, parent.key));
    await needs(`parents[${i}].link`, chain[i] === d.facts ? 'facts' : chain[i]!, parent.link);
  }
  const keyTypes = new Map<string, string>();
  for (const [i, key] of d.keys.entries()) {
    const type = await needs(`keys[${i}].column`, key.from, key.column);
    if (key.truncate !== undefined && type !== 'timestamp with time zone') {
      throw new ConfigError(
        `rollup ${d.name}: keys[${i}] cuts ${key.column} to the ${key.truncate}, but it is ${type}; cut only a timestamptz (UTC hours and days)`,
      );
    }
    keyTypes.set(key.name, type);
  }
  for (const [i, measure] of d.measures.entries()) {
    if ('sum' in measure) for (const column of measure.sum) await needs(`measures[${i}].sum`, 'facts', column);
  }
  let deletedWithFirstParent = factsDerived;
  for (const [i, parent] of d.parents.entries()) {
    const action = await deleteAction(db, d.schema, chain[i]!, parent.link, parent.table);
    if (action === 'n' || action === 'd') {
      throw new ConfigError(
        `rollup ${d.name}: deleting a row of ${parent.table} sets ${chain[i]}.${parent.link} to a default; only cascade, restrict or no action keep a rollup exact`,
      );
    }
    if (action === 'c') {
      if (i > 0) {
        throw new ConfigError(
          `rollup ${d.name}: deleting a row of ${parent.table} deletes ${chain[i]} in cascade, past the facts' first parent; make that key restrict, or declare the rollup nearer`,
        );
      }
      deletedWithFirstParent = true;
    }
  }
  return { keyTypes, parentKeyTypes, deletedWithFirstParent };
}

/**
 * Whether `d`'s facts are a derived fact of `declarations`; refuses a rollup that sums one under
 * another first parent than the one the derived fact declares.
 */
function sumsDerived(d: RollupDeclaration, declarations: readonly RollupDeclaration[]): boolean {
  const below = declarations.find((x) => x.name === d.facts && x.schema === d.schema && x.derived !== undefined);
  if (below === undefined) return false;
  const under = below.derived!;
  const first = d.parents[0];
  if (first?.table !== under.table || first.key !== under.key || first.link !== under.link) {
    throw new ConfigError(
      `rollup ${d.name}: its facts ${d.facts} are a derived fact summed under ${under.table}.${under.key} by ${under.link}; make parents[0] { table: '${under.table}', key: '${under.key}', link: '${under.link}' }`,
    );
  }
  return true;
}

/** The migration that makes every rollup declared, in order, each filled from the rows already there. */
export function rollupMigration(declarations: readonly RollupDeclaration[], reader: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // Every declaration is checked before anything is made.
      const derived = declarations.map((d) => sumsDerived(checkRollupDeclaration(d), declarations));
      for (const [i, d] of declarations.entries()) {
        const catalog = await readRollupCatalog(db, d, derived[i]);
        for (const statement of [...createStatements(d, catalog, reader), ...rangeRebuildStatements(d)]) {
          await run(db, statement);
        }
      }
    },
    async down(db: Kysely<unknown>): Promise<void> {
      for (const d of [...declarations].reverse()) {
        const catalog = await readRollupCatalog(db, d, sumsDerived(d, declarations));
        for (const statement of [...rangeRebuildDropStatements(d), ...dropStatements(d, catalog)]) {
          await run(db, statement);
        }
      }
    },
  };
}

/**
 * Carries databases whose rollups were made when every column was granted over to the declarations'
 * grants: the reader keeps only the columns its templates read (a measure marked `unread` is revoked).
 * Down grants every column again, as before.
 */
export function rollupGrantsMigration(declarations: readonly RollupDeclaration[], reader: string): Migration {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      for (const d of declarations) for (const statement of grantStatements(d, reader)) await run(db, statement);
    },
    async down(db: Kysely<unknown>): Promise<void> {
      const all = declarations.map((d) => ({ ...d, measures: d.measures.map((m) => ({ ...m, unread: undefined })) }));
      for (const d of all) for (const statement of grantStatements(d, reader)) await run(db, statement);
    },
  };
}
