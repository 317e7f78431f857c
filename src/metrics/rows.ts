/**
 * The rows a `query_metrics` call aggregates: the source's, held to the range, the amount bounds, the
 * filters and the caller's data scope, each beside its local time (bound once, in a lateral join) and
 * what its derived dimensions read: an amount's band, an entity's count of the call's rows (one pass,
 * joined by hash) and its first row ever (a probe). And the two ways a call's figures read fewer rows:
 * a row filter all its metrics share becomes the rows' own, and a call grouped only by an entity's
 * count is aggregated per entity first.
 */
import { expressionBuilder, sql, type Kysely, type RawBuilder } from 'kysely';
import { endOfRange, rangeEndMs, startOfDay } from '../db/range-sql.js';
import { shiftDays } from '../lib/calendar.js';
import { periodEnd, type DayBucket, type ResolvedRange } from '../lib/date-range.js';
import { dayStart, postgresTimestamp } from '../lib/local-day.js';
import { personKey } from '../lib/protected-counts.js';
import type { QueryContext } from '../registry/types.js';
import {
  baseMetrics,
  derivedDimensions,
  needsOf,
  perCurrency,
  amountBounds,
  protectsPeople,
  type DerivedDimension,
  type MetricsArgs,
} from './call.js';
import {
  CYCLIC_TIMES,
  TIME_GRAINS,
  type EntityDeclaration,
  type MetricSource,
  type MetricsModel,
  type RowCondition,
  type SourceBuilder,
  type SourceRows,
} from './declarations.js';

export const QG_TIME = 'qg_time';
export const LOCAL = `${QG_TIME}.local`;

/** Whether a dimension is a time bucket or a cyclic time: one that reads the local time. */
export const isTimeDimension = (name: string): boolean =>
  (TIME_GRAINS as readonly string[]).includes(name) || (CYCLIC_TIMES as readonly string[]).includes(name);

const QG_AS_OF = 'qg_as_of';
const isDayBucket = (name: string): name is DayBucket => ['day', 'week', 'month', 'quarter'].includes(name);

/**
 * The instants a stock is measured at: the end of each bucket of the grain the call groups by, or of
 * the range, never past where the range ends (a range that has not ended is cut at the current minute
 * or at the newest data, src/lib/running.ts); each with its bucket's first local day, which the time
 * dimensions label. A bucket that starts after the cut is not measured: its figure is not known yet.
 * A range cut at its very first instant (the data stopped before it began, or it has not begun) is
 * measured there: the state its first instant finds, what the spans the data hold say of it.
 */
export function asOfInstants(
  range: ResolvedRange,
  timeZone: string,
  grain: DayBucket | undefined,
): { local: string; ms: number }[] {
  const end = rangeEndMs(range, timeZone);
  const out: { local: string; ms: number }[] = [];
  let first = range.startDate;
  while (first < range.endExclusive) {
    const next = grain === undefined ? range.endExclusive : shiftDays(periodEnd(first, grain), 1);
    const bucketEnd = next < range.endExclusive ? next : range.endExclusive;
    if (dayStart(first, timeZone).ms >= end && out.length > 0) break;
    out.push({ local: `${first} 00:00:00`, ms: Math.min(dayStart(bucketEnd, timeZone).ms, end) });
    first = bucketEnd;
  }
  return out;
}

/** A call on the source that serves it: what every function below reads. */
export interface SourcedCall {
  readonly db: Kysely<unknown>;
  readonly model: MetricsModel;
  readonly source: MetricSource;
  readonly args: MetricsArgs;
  readonly ctx: QueryContext;
  readonly range: ResolvedRange;
}

/** The rows a call counts: the source's, held to the range, the amount bounds, the filters and the caller's data scope. */
export function callRows({ db, model, source, args, ctx, range }: SourcedCall, shared?: RowCondition): SourceRows {
  // A protected count's person keys are bound here, once per row, beside the local time; the lateral
  // join only where a time dimension or a protected count reads it.
  const protection = protectsPeople(model, args.metrics) ? ctx.protection : undefined;
  const local = (args.group_by ?? []).some((d) => isTimeDimension(d));
  let rows = source.rows(db);
  if (source.until !== undefined) {
    // A stock: each row once per instant it is measured at, where it holds then.
    const at = asOfInstants(
      range,
      ctx.timeZone,
      (args.group_by ?? []).find((d) => isDayBucket(d)),
    );
    rows = rows
      .crossJoin(
        db
          .selectNoFrom([
            sql`unnest(${at.map((a) => a.local)}::timestamp[])`.as('local'),
            sql`unnest(${at.map((a) => postgresTimestamp(a.ms))}::timestamptz[])`.as('at'),
          ])
          .as(QG_AS_OF),
      )
      .where(sql.ref(source.time), '<', sql.ref(`${QG_AS_OF}.at`))
      .where((eb: SourceBuilder) =>
        eb.or([eb(sql.ref(source.until!), 'is', null), eb(sql.ref(source.until!), '>=', sql.ref(`${QG_AS_OF}.at`))]),
      );
  }
  if (local || protection) {
    const localTime =
      source.until !== undefined
        ? sql`${sql.ref(`${QG_AS_OF}.local`)}`
        : sql`${sql.ref(source.time)} at time zone ${ctx.timeZone}`;
    rows = rows.crossJoinLateral(
      db
        .selectNoFrom([
          localTime.as('local'),
          ...(protection ? [personKey(sql.ref(source.people!), protection).as('person_key')] : []),
        ])
        .as(QG_TIME),
    );
  }
  if (source.until === undefined) {
    rows = rows
      .where(source.time, '>=', startOfDay(range.startDate, ctx.timeZone))
      .where(source.time, '<', endOfRange(range, ctx.timeZone));
  }
  for (const a of model.amounts ?? []) {
    const value = sql.ref(source.amounts?.[a.name] ?? '');
    for (const [op, bound] of amountBounds(args, a.name)) rows = rows.where(value, op, bound);
  }
  // Derived dimensions take no filter (the input schema refuses one): only attributes filter.
  for (const [name, values] of Object.entries(args.filters ?? {})) {
    if (values !== undefined) rows = rows.where(source.attributes[name]!, 'in', values);
  }
  for (const a of model.attributes) {
    const scope = a.scope === undefined ? undefined : ctx.dataScope?.[a.scope];
    if (scope !== undefined) rows = rows.where(source.attributes[a.name]!, 'in', scope);
  }
  return shared ? rows.where((eb: SourceBuilder) => shared(eb)) : rows;
}

/**
 * The row filter every metric of a call shares (a sum and a count of the same kept rows), or undefined.
 * Such a filter holds the rows themselves, as a hand-written statement's WHERE would, instead of each
 * aggregate's FILTER: a group none of whose rows it keeps is then not listed (it would show only zeros),
 * and the totals are the same. Not where the call reads an entity's count of its rows (that counts
 * every row of the call, whatever a metric keeps).
 */
export function sharedRows(
  db: Kysely<unknown>,
  model: MetricsModel,
  source: MetricSource,
  args: MetricsArgs,
): RowCondition | undefined {
  if ((model.entities ?? []).some((e) => entityFacts(model, args, e).count)) return undefined;
  const measures = baseMetrics(model, args.metrics).map((n) => source.measures[n]!);
  const first = measures[0]?.rows;
  if (first === undefined) return undefined;
  const eb = expressionBuilder<any, any>(); // eslint-disable-line @typescript-eslint/no-explicit-any
  const text = (rows: RowCondition): string => {
    const c = sql`${rows(eb)}`.compile(db);
    return JSON.stringify([c.sql, c.parameters]);
  };
  return measures.every((m) => m.rows !== undefined && text(m.rows) === text(first)) ? first : undefined;
}

/** Which of an entity's facts a call groups by: its count of rows in the call, its first row ever. */
function entityFacts(model: MetricsModel, args: MetricsArgs, e: EntityDeclaration): { count: boolean; since: boolean } {
  const kinds = derivedDimensions(model)
    .filter((d) => d.entity === e && (args.group_by ?? []).includes(d.name))
    .map((d) => d.kind);
  return {
    count: kinds.includes('entity_count') || kinds.includes('entity_type'),
    since: kinds.includes('entity_since'),
  };
}

/** The rows of a call with what its derived dimensions read beside each: an amount's band, an entity's facts. */
export function rowsOf(call: SourcedCall, shared?: RowCondition): SourceRows {
  const { db, model, source, args, ctx, range } = call;
  let rows = callRows(call, shared);
  const needs = needsOf(model, args, ctx);
  for (const a of model.amounts ?? []) {
    if (!needs.amounts.includes(a.name) || !(args.group_by ?? []).includes(`${a.name}_band`)) continue;
    // The band's number, computed once per row beside it (0 below the first edge, 1 from it to the
    // second, …): its edges are a bind parameter, so the grouped expression is a column of the lateral,
    // the same text wherever it is written. The groups are numbers, labelled once each (statement.ts).
    const value = sql.ref(source.amounts![a.name]!);
    const band = sql`width_bucket((${value})::numeric, ${[...a.bands]}::numeric[])`;
    rows = rows.crossJoinLateral(db.selectNoFrom(band.as('k')).as(`qg_${a.name}_band`));
  }
  for (const e of model.entities ?? []) {
    const facts = entityFacts(model, args, e);
    if (facts.count) {
      // One row an entity with its count of the call's rows, joined by hash: one pass, not a probe a row.
      const counts = entityParts(call, e, false).as(`qg_${e.name}`);
      rows = rows.innerJoin(counts, (join) =>
        join.onRef(`qg_${e.name}.id` as never, '=', source.entities![e.name]! as never),
      );
    }
    if (facts.since) {
      // Its first row ever, a probe answered by an index on (id, time) where the pack has one.
      const start = startOfDay(range.startDate, ctx.timeZone);
      const time = sql`${sql.ref(`qg_f.${e.history.time}`)}`;
      const first = (db as Kysely<any>) // eslint-disable-line @typescript-eslint/no-explicit-any
        .selectFrom(`${e.history.from} as qg_f`)
        .where(sql.ref(`qg_f.${e.history.id}`), '=', sql.ref(source.entities![e.name]!))
        .select(sql<string>`case when min(${time}) >= ${start} then 'new' else 'returning' end`.as('since'));
      rows = rows.crossJoinLateral(first.as(`qg_${e.name}_first`));
    }
  }
  return rows;
}

/**
 * The entity a call can count in two steps, or undefined: one that groups only by that entity's count
 * of rows (`<name>_<counts>`, `<name>_type`), with no money, and whose metrics all add up over the
 * entity's rows (counts, and distinct counts of the entity itself). Such a call is aggregated first per
 * entity, then per group of entities, as a hand-written statement would: no distinct count over the rows.
 */
export function perEntity(model: MetricsModel, source: MetricSource, args: MetricsArgs): EntityDeclaration | undefined {
  const dims = args.group_by ?? [];
  const derived = derivedDimensions(model);
  const e = derived.find((d) => d.name === dims[0])?.entity;
  if (e === undefined || source.entities?.[e.name] === undefined || perCurrency(model, args)) return undefined;
  const ofCount = dims.every((n) => {
    const d = derived.find((x) => x.name === n);
    return d?.entity === e && (d.kind === 'entity_count' || d.kind === 'entity_type');
  });
  const adds = baseMetrics(model, args.metrics).every((n) => {
    const measure = source.measures[n]!;
    if (model.metrics.find((m) => m.name === n)!.protected) return false;
    return (
      measure.aggregate === 'count' ||
      (measure.aggregate === 'count_distinct' && measure.of === source.entities![e.name])
    );
  });
  return ofCount && adds ? e : undefined;
}

/** Whether a metric's part in a two-step count is the entity's count of rows itself: it counts every row. */
export const partIsCount = (source: MetricSource, name: string): boolean => {
  const measure = source.measures[name]!;
  return measure.rows === undefined && (measure.aggregate === 'count_distinct' || measure.of === undefined);
};

/**
 * Whether an entity's count of the call's rows, n (at least 1), is a value of its count dimension:
 * '1' … '9' and '10+' of `<entity>_<counts>`, 'one_time' and 'repeat' of `<entity>_type`. The one place
 * the values are told apart, for the grouped label and for the tallies of a two-step count alike.
 */
export function countValueTest(
  kind: DerivedDimension['kind'],
  value: string,
  n: RawBuilder<unknown>,
): RawBuilder<boolean> {
  if (kind === 'entity_type') return value === 'repeat' ? sql`${n} > 1` : sql`${n} = 1`;
  if (kind !== 'entity_count') throw new Error(`${kind} is not an entity's count`);
  return value.endsWith('+') ? sql`${n} >= ${Number.parseInt(value, 10)}` : sql`${n} = ${Number(value)}`;
}

/**
 * One row an entity: `select <id> as id, count(*) as n from <the call's rows> group by <id>`, its count
 * of the call's rows, with the label of each of its count dimensions the call groups by (for a join to
 * the rows: bound once here, so that the grouped key is a column); and, for the first step of a two-step count, each
 * metric's part that is not that count.
 */
export function entityParts(call: SourcedCall, e: EntityDeclaration, withParts = true): SourceRows {
  const { model, source, args } = call;
  const id = sql.ref(source.entities![e.name]!);
  const n = sql`count(*)`;
  return callRows(call)
    .select((eb: SourceBuilder) => [
      id.as('id'),
      sql<number>`${n}`.as('n'),
      ...derivedDimensions(model)
        .filter((d) => !withParts && d.entity === e && (args.group_by ?? []).includes(d.name))
        .filter((d) => d.kind === 'entity_count' || d.kind === 'entity_type')
        .map((d) =>
          sql`case ${sql.join(
            d.values!.map((v) => sql`when ${countValueTest(d.kind, v, n)} then ${v}::text`),
            sql` `,
          )} end`.as(d.name),
        ),
      ...baseMetrics(model, args.metrics)
        .filter((name) => withParts && !partIsCount(source, name))
        .map((name) => {
          const measure = source.measures[name]!;
          const of =
            measure.aggregate !== 'count' || measure.of === undefined
              ? undefined
              : typeof measure.of === 'string'
                ? eb.ref(measure.of)
                : measure.of(eb);
          const filter = measure.rows ? sql` filter (where ${measure.rows(eb)})` : sql``;
          return (of ? sql`count(${of})${filter}` : sql`count(*)${filter}`).as(`p_${name}`);
        }),
    ])
    .groupBy(id);
}
