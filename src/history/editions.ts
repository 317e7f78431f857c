/**
 * The history of reports: every edition produced (by `querygate report` or by a schedule) kept in the
 * job store, its answer whole, so that `report show` gives back exactly what was sent, and a rerun of a
 * period already kept says what it restates instead of silently differing. Plain functions over the
 * job store's handle, as the job role, each one statement or one short transaction.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql, type ColumnType, type Generated, type Kysely, type Selectable } from 'kysely';
import { scopeKey, type DataScope } from '../lib/data-scope.js';
import { restatedFigures, restatementSentence, type FigureChange } from './restatement.js';

type Json<T> = ColumnType<T, string, string>;

interface EditionsTable {
  id: string;
  report: string;
  start_date: ColumnType<string | null, string | null, string | null>;
  end_date: ColumnType<string | null, string | null, string | null>;
  scope_key: string;
  data_scope: Json<DataScope | null> | null;
  arguments: Json<Record<string, unknown>>;
  answer: Json<Record<string, unknown>>;
  hash: string;
  data_through: Date | null;
  ran_at: Generated<Date>;
  source: string;
  restates: string | null;
}

export type EditionTables = {
  'querygate_jobs.report_editions': EditionsTable;
};

export type EditionRow = Selectable<EditionsTable>;

/**
 * The history's part of a store that holds its table beside others (the job store, with
 * `withTables<EditionTables>()`). Kysely's handles are invariant in their tables, though a handle to
 * more tables reads this one exactly as a handle to it alone would: the one cast of the two.
 */
export const historyOf = <DB extends EditionTables>(db: Kysely<DB>): Kysely<EditionTables> =>
  db as unknown as Kysely<EditionTables>;
const EDITIONS = 'querygate_jobs.report_editions' as const;

/** An answer's fingerprint: SHA-256 of its JSON with the keys of every object in order. */
export function answerHash(answer: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value;
  return createHash('sha256')
    .update(JSON.stringify(canonical(answer)))
    .digest('hex');
}

/** A restatement, as the answer carries it: the edition it differs from, and every figure that changed. */
export interface Restated {
  readonly edition: string;
  readonly since: string;
  readonly changes: readonly FigureChange[];
  /** The sentence every format shows. */
  readonly text: string;
}

export interface NewEdition {
  readonly report: string;
  readonly args: Record<string, unknown>;
  readonly dataScope: DataScope | undefined;
  /** The answer as produced, before the restatement is added to it. */
  readonly answer: Record<string, unknown>;
  /** `cli`, or `schedule:<name>`. */
  readonly source: string;
}

const dateOf = (value: unknown): string | null =>
  typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : null;

/**
 * Keeps an edition of a report, and says what it restates: the figures that differ from the newest
 * edition of the same report, period (the answer's start_date and end_date) and scope. The answer kept
 * is the one sent, with its `restated` field. One transaction, holding a lock on the period, so that
 * two runs of one period at once compare in turn.
 */
export async function keepEdition(
  db: Kysely<EditionTables>,
  edition: NewEdition,
): Promise<{ row: EditionRow; answer: Record<string, unknown> }> {
  return db.transaction().execute((tx) => keepEditionIn(tx, edition));
}

/** keepEdition within a transaction the caller holds (a schedule's run settles in one). */
export async function keepEditionIn(
  tx: Kysely<EditionTables>,
  edition: NewEdition,
): Promise<{ row: EditionRow; answer: Record<string, unknown> }> {
  const start = dateOf(edition.answer.start_date);
  const end = dateOf(edition.answer.end_date);
  const scope = scopeKey(edition.dataScope);
  await sql`select pg_advisory_xact_lock(hashtext(${`querygate_editions:${edition.report}:${start}:${end}:${scope}`}))`.execute(
    tx,
  );
  const previous =
    start === null || end === null
      ? undefined
      : await tx
          .selectFrom(EDITIONS)
          .selectAll()
          .where('report', '=', edition.report)
          .where('start_date', '=', start)
          .where('end_date', '=', end)
          .where('scope_key', '=', scope)
          .orderBy('ran_at', 'desc')
          .limit(1)
          .executeTakeFirst();
  const changes = previous ? restatedFigures(previous.answer, edition.answer) : [];
  const since = previous?.ran_at.toISOString();
  // Figures equal to a restated edition's are restated still: a second rerun says what the first did.
  const restated: Restated | undefined =
    previous && changes.length > 0
      ? { edition: previous.id, since: since!, changes, text: restatementSentence(since!, changes) }
      : (previous?.answer.restated as Restated | undefined);
  const answer = restated ? { ...edition.answer, restated } : edition.answer;
  const through = answer.data_through;
  const row = await tx
    .insertInto(EDITIONS)
    .values({
      id: randomBytes(9).toString('base64url'),
      report: edition.report,
      start_date: start,
      end_date: end,
      scope_key: scope,
      data_scope: edition.dataScope === undefined ? null : JSON.stringify(edition.dataScope),
      arguments: JSON.stringify(edition.args),
      answer: JSON.stringify(answer),
      hash: answerHash(answer),
      data_through: typeof through === 'string' ? new Date(through) : null,
      source: edition.source,
      restates: restated?.edition ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, answer };
}

/** One edition by its id. */
export async function findEdition(db: Kysely<EditionTables>, id: string): Promise<EditionRow | undefined> {
  return db.selectFrom(EDITIONS).selectAll().where('id', '=', id).executeTakeFirst();
}

/** The newest editions first, of one report or of all. */
export async function listEditions(
  db: Kysely<EditionTables>,
  options: { readonly report?: string; readonly limit: number },
): Promise<EditionRow[]> {
  let query = db.selectFrom(EDITIONS).selectAll().orderBy('ran_at', 'desc').limit(options.limit);
  if (options.report !== undefined) query = query.where('report', '=', options.report);
  return query.execute();
}

/** Deletes the editions older than the retention; gives how many. */
export async function deleteOldEditions(db: Kysely<EditionTables>, keepMs: number): Promise<number> {
  const result = await db
    .deleteFrom(EDITIONS)
    .where('ran_at', '<', sql<Date>`now() - make_interval(secs => ${keepMs / 1000})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
