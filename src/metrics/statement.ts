/**
 * The one statement of a `query_metrics` call, compiled from the pack's declarations: the source that
 * serves it, its rows (rows.ts: held to the range, the filters and the caller's data scope), grouped by
 * the dimensions asked for, then each currency's totals and first groups (ranked.ts). Every value
 * (dates, time zone, filter and scope values, limit, threshold, the seed of the person keys) is a bind
 * parameter; the time zone and the seed are bound once, in a lateral join, so that the grouped
 * expressions are the same text in the select list, the grouping sets and grouping(), and a protected
 * count's aggregates are one text that PostgreSQL computes once.
 *
 *   select <dimension expressions over "qg_time"."local">, <currency>, <aggregate> filter (where <its rows>) …
 *          [, grouping('row'::text) as "is_total"]
 *   from <source rows> cross join lateral (select <time> at time zone $tz as "local"
 *                                                [, <person key> as "person_key"]) as "qg_time"
 *        [cross join lateral (<an amount's band>)] [join (<an entity's count of the call's rows>)] …
 *   where <time> >= $start and <time> < $end and <amount bounds> and <filters> and <scope>
 *   group by <keys>, <currency>                                 -- figures that add up: counts, sums
 *         or grouping sets (('row'::text, <keys>, <currency>), (<currency>) or ())   -- the others
 *
 * What the call's metrics are decides three things, each from one metric or one metric beside one
 * dimension: whether the totals add up from the groups (else a grouping set), whether one row filter
 * of all its metrics holds the rows themselves (rows.ts, sharedRows), and whether a call grouped only by
 * an entity's count is aggregated per entity first (rows.ts, perEntity), then tallied (talliedRows).
 *
 * Why the start-up checks need not compile every combination: each fragment (a dimension's
 * expression, a metric's aggregate, a filter's condition, the scope's condition) is the same text
 * whatever else a call asks for; only the source changes it. So compiling each fragment on every
 * source that can serve it, with each other fragment beside it once (the pairs, see checkedArguments
 * in tool.ts), checks every statement a call can build, each of the three choices above included.
 */
import { sql, type AliasedRawBuilder, type Kysely, type RawBuilder } from 'kysely';
import { ConfigError } from '../lib/errors.js';
import { resolveRange } from '../lib/date-range.js';
import { releasedCount } from '../lib/protected-counts.js';
import type { QueryContext, RowQuery } from '../registry/types.js';
import {
  baseMetrics,
  derivedDimensions,
  isStock,
  perCurrency,
  selectedColumns,
  sourceFor,
  type MetricsArgs,
} from './call.js';
import type {
  EntityDeclaration,
  MetricDeclaration,
  MetricSource,
  MetricsModel,
  SourceBuilder,
  SourceRows,
} from './declarations.js';
import { rankedAnswer, type RankedSpec } from './ranked.js';
import {
  countValueTest,
  entityParts,
  isTimeDimension,
  type SourcedCall,
  LOCAL,
  partIsCount,
  perEntity,
  QG_TIME,
  rowsOf,
  sharedRows,
} from './rows.js';

/** Whether a dimension is an entity's own token (one group an entity). */
const entityId = (model: MetricsModel, name: string): boolean =>
  derivedDimensions(model).some((d) => d.name === name && d.kind === 'entity');

/**
 * A constant in the grouped rows' set only, whose grouping() tells them from the totals beside them: the
 * first key could be an entity's id, which no column but its own token may select.
 */
const ROW_MARK = sql`'row'::text`;

/** A time dimension's expression over the local time (param-free: the zone is bound in the lateral join). */
function timeKey(eb: SourceBuilder, name: string, source: MetricSource): RawBuilder<unknown> {
  const local = eb.ref(LOCAL);
  switch (name) {
    case 'hour':
      // The local hour and its offset from UTC, so that an hour that repeats when clocks go back is two rows.
      return sql`to_char(date_trunc('hour', ${local}), 'YYYY-MM-DD"T"HH24:MI') || '|' || extract(epoch from ${local} - (${eb.ref(source.time)} at time zone 'UTC'))::int`;
    case 'day':
      return sql`to_char(${local}, 'YYYY-MM-DD')`;
    case 'hour_of_day':
      return sql`extract(hour from ${local})::int`;
    case 'weekday':
      return sql`extract(isodow from ${local})::int`;
    // One literal fragment per grain: the grouped expression must be the same text in the select list,
    // the grouping sets and grouping(), which a bind parameter (its own $n each time) would not be.
    case 'week':
      return sql`to_char(date_trunc('week', ${local}), 'YYYY-MM-DD')`;
    case 'month':
      return sql`to_char(date_trunc('month', ${local}), 'YYYY-MM-DD')`;
    case 'quarter':
      return sql`to_char(date_trunc('quarter', ${local}), 'YYYY-MM-DD')`;
    default:
      throw new Error(`no time key for the dimension ${name}`);
  }
}

/** A derived dimension's expression on a source: a column of its lateral, or the entity's id. */
function derivedKey(model: MetricsModel, source: MetricSource, name: string): RawBuilder<unknown> {
  const d = derivedDimensions(model).find((x) => x.name === name)!;
  const lateral = d.entity ? `qg_${d.entity.name}` : `qg_${name}`;
  switch (d.kind) {
    case 'band':
      return sql`${sql.ref(`${lateral}.k`)}`;
    case 'entity':
      return sql`${sql.ref(source.entities![d.entity!.name]!)}`;
    case 'entity_count':
    case 'entity_type':
      // Labelled once per entity, in the join of its counts (rows.ts, entityParts).
      return sql`${sql.ref(`${lateral}.${name}`)}`;
    case 'entity_since':
      return sql`${sql.ref(`${lateral}_first.since`)}`;
  }
}

/** A grouped key as the answer shows it: an amount's band by its label (grouped by its number, see rowsOf). */
function labelled(model: MetricsModel, name: string, key: RawBuilder<unknown>): RawBuilder<unknown> {
  const d = derivedDimensions(model).find((x) => x.name === name);
  return d?.kind === 'band' ? sql`(${[...d.values!]}::text[])[${key} + 1]` : key;
}

/** The second step of a two-step count: its entities' rows, and the tally a figure is held to (none: every entity). */
interface Parts {
  readonly alias: string;
  readonly within?: RawBuilder<boolean>;
}

/**
 * One base metric's aggregate on a source: `agg(of) filter (where rows)`, sums never null; a protected
 * count released from its true count and its people's keys (src/lib/protected-counts.ts).
 */
function aggregateOf(
  eb: SourceBuilder,
  model: MetricsModel,
  source: MetricSource,
  name: string,
  ctx: QueryContext,
  parts?: Parts,
  hoisted = false,
): RawBuilder<unknown> {
  const measure = source.measures[name]!;
  if (parts !== undefined) {
    // The second step of a two-step count: the parts of each entity (see perEntity) added up.
    // (Every entity has a row of the call: where its part is its count of rows, it counts it.)
    const within = (condition?: RawBuilder<boolean>): RawBuilder<unknown> => {
      const all = [...(condition ? [condition] : []), ...(parts.within ? [parts.within] : [])];
      return all.length === 0 ? sql`` : sql` filter (where ${sql.join(all, sql` and `)})`;
    };
    if (partIsCount(source, name)) {
      return measure.aggregate === 'count'
        ? sql`coalesce(sum(${sql.ref(`${parts.alias}.n`)})${within()}, 0)::bigint`
        : sql`count(*)${within()}`;
    }
    const part = sql.ref(`${parts.alias}.p_${name}`);
    return measure.aggregate === 'count'
      ? sql`coalesce(sum(${part})${within()}, 0)::bigint`
      : sql`count(*)${within(sql`${part} > 0`)}`;
  }
  const of =
    measure.of === undefined ? undefined : typeof measure.of === 'string' ? eb.ref(measure.of) : measure.of(eb);
  const filter = measure.rows && !hoisted ? sql` filter (where ${measure.rows(eb)})` : sql``;
  if (model.metrics.find((m) => m.name === name)!.protected) {
    if (!ctx.protection) throw new ConfigError(`${name} is a protected count but the call has no protection rule`);
    const keys = sql`sum(distinct ${eb.ref(`${QG_TIME}.person_key`)})${filter}`;
    return releasedCount(sql`count(distinct ${eb.ref(source.people!)})${filter}`, keys, ctx.protection);
  }
  switch (measure.aggregate) {
    case 'count':
      return of ? sql`count(${of})${filter}` : sql`count(*)${filter}`;
    case 'count_distinct':
      return sql`count(distinct ${of!})${filter}`;
    case 'sum':
      return sql`coalesce(sum(${of!})${filter}, 0)`;
    case 'percentile':
      return sql`percentile_cont(${measure.fraction!}::float8) within group (order by ${of!})${filter}`;
  }
}

/** A metric's figure in a grouped row, unrounded (ranked.ts rounds money and ratios): ratios from the sums of their parts. */
function metricValue(
  eb: SourceBuilder,
  model: MetricsModel,
  source: MetricSource,
  m: MetricDeclaration,
  ctx: QueryContext,
  parts?: Parts,
  hoisted = false,
): RawBuilder<unknown> {
  const raw = (name: string): RawBuilder<unknown> => {
    const d = model.metrics.find((x) => x.name === name)!;
    if (!d.ratio) return aggregateOf(eb, model, source, name, ctx, parts, hoisted);
    return sql`(${raw(d.ratio[0])})::numeric / nullif(${raw(d.ratio[1])}, 0)`;
  };
  return raw(m.name);
}

/** The statement of a call (without LIMIT: the registry adds it). */
export function metricsStatement(
  db: Kysely<unknown>,
  model: MetricsModel,
  args: MetricsArgs,
  ctx: QueryContext,
): RowQuery {
  const range = resolveRange(args);
  const dims = args.group_by ?? [];
  const money = perCurrency(model, args);
  const source = sourceFor(model, args, ctx);
  const entity = perEntity(model, source, args);
  const adds = (m: MetricDeclaration): 'count' | 'sum' | undefined => {
    const aggregate = source.measures[m.name]?.aggregate;
    if (m.ratio || m.protected || aggregate === undefined) return undefined;
    // Counted per entity first, each entity is in one group: its distinct count adds up too.
    if (entity !== undefined) return 'count';
    return aggregate === 'count' || aggregate === 'sum' ? aggregate : undefined;
  };
  const asked = model.metrics.filter((m) => args.metrics.includes(m.name));
  const spec: RankedSpec = {
    columns: selectedColumns(model),
    keys: dims.flatMap((d) => (source.labels?.[d] !== undefined ? [d, `${d}_name`] : [d])),
    metrics: asked.map((m) => ({
      name: m.name,
      ...(m.unit === 'money' ? { round: 2 as const } : m.unit === 'ratio' ? { round: 4 as const } : {}),
      ...(adds(m) ? { adds: adds(m)! } : {}),
    })),
    money,
    order: orderOf(model, args),
    limit: args.limit,
  };
  const groupsOf =
    dims.length === 0
      ? undefined
      : (currency?: RawBuilder<unknown>, totalsBeside = false) =>
          groupedRows({ db, model, source, args, ctx, range }, { money, currency, totalsBeside, entity });
  // The totals: where the groups are an entity's (a customer each: as many groups as rows, nearly), the
  // same call without its dimensions on a rollup that serves it (per currency when the groups are, even
  // where only a band read made them so); else the sums of the groups where every figure adds up, else
  // a grouping set beside them.
  const whole = { ...args, group_by: [] };
  const wholeSource = sourceFor(model, whole, ctx);
  // A stock grouped by time does not add up over its buckets: its total is as of the range's end.
  const stockOverTime =
    dims.some((d) => isTimeDimension(d)) && baseMetrics(model, args.metrics).some((n) => isStock(model, n));
  const wholeTotals = (): SourceRows =>
    groupedRows(
      { db, model, args: whole, ctx, range, source: money && !wholeSource.currency ? source : wholeSource },
      // No dimension: never counted per entity first.
      { money },
    );
  const totals: Parameters<typeof rankedAnswer>[1] =
    stockOverTime && money && groupsOf !== undefined
      ? stockTotals(db, asked, wholeTotals(), groupsOf())
      : groupsOf === undefined || stockOverTime || (wholeSource.rollup && dims.some((d) => entityId(model, d)))
        ? wholeTotals()
        : spec.metrics.every((m) => m.adds !== undefined)
          ? 'sums of the groups'
          : 'beside the groups';
  return rankedAnswer(db, totals, groupsOf, spec);
}

/**
 * The totals of a money stock grouped by time: as of the range's end, for every currency of the
 * groups, so that a currency whose every row had ended by then keeps its groups (the answer lists each
 * currency's groups beside its totals), with a stock of 0 and a ratio of none.
 */
function stockTotals(
  db: Kysely<unknown>,
  asked: readonly MetricDeclaration[],
  whole: SourceRows,
  groups: SourceRows,
): SourceRows {
  const q = db as Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const currencies = q.selectFrom(groups.as('qg_g')).select(sql.ref('qg_g.currency').as('currency')).distinct();
  return q
    .selectFrom(currencies.as('qg_c'))
    .leftJoin(whole.as('qg_w'), 'qg_w.currency', 'qg_c.currency')
    .select([
      sql.ref('qg_c.currency').as('currency'),
      ...asked.map((m) =>
        (m.ratio ? sql`${sql.ref(`qg_w.${m.name}`)}` : sql`coalesce(${sql.ref(`qg_w.${m.name}`)}, 0)`).as(m.name),
      ),
    ]);
}

/**
 * A call's figures on a source, grouped by its dimensions and its currency (unrounded: ranked.ts
 * rounds them), held to one currency when one is given: the groups of that currency.
 */
function groupedRows(
  call: SourcedCall,
  {
    money,
    currency,
    totalsBeside = false,
    entity,
  }: {
    money: boolean;
    currency?: RawBuilder<unknown>;
    totalsBeside?: boolean;
    /** The entity the call is counted by first (perEntity, worked out once by the caller). */
    entity?: EntityDeclaration | undefined;
  },
): SourceRows {
  const { db, model, source, args, ctx } = call;
  const dims = args.group_by ?? [];
  if (entity) return talliedRows(call, entity, totalsBeside);
  const shared = sharedRows(db, model, source, args);
  let rows: SourceRows = rowsOf(call, shared);
  if (money && currency) rows = rows.where(sql.ref(source.currency!), '=', currency);
  const keyOf = (eb: SourceBuilder, name: string): RawBuilder<unknown> =>
    isTimeDimension(name)
      ? timeKey(eb, name, source)
      : model.attributes.some((a) => a.name === name)
        ? sql`${eb.ref(source.attributes[name]!)}`
        : derivedKey(model, source, name);
  const selected = rows.select((eb: SourceBuilder) => {
    const out: AliasedRawBuilder<unknown, string>[] = [];
    for (const d of dims) {
      out.push(labelled(model, d, keyOf(eb, d)).as(d));
      const label = source.labels?.[d];
      if (label !== undefined) out.push(sql`${eb.ref(label)}`.as(`${d}_name`));
    }
    if (money) out.push(sql`${eb.ref(source.currency!)}`.as('currency'));
    for (const m of model.metrics.filter((x) => args.metrics.includes(x.name))) {
      out.push(metricValue(eb, model, source, m, ctx, undefined, shared !== undefined).as(m.name));
    }
    // The first instant of the hour bucket (the same whichever source serves it), to list hours in time
    // order even when clocks go back.
    const hourStart = sql`${eb.ref(source.time)} - (${eb.ref(LOCAL)} - date_trunc('hour', ${eb.ref(LOCAL)}))`;
    if (dims.includes('hour')) out.push(sql`min(${hourStart})`.as('qg_first'));
    if (totalsBeside) out.push(sql`grouping(${ROW_MARK})`.as('is_total'));
    return out;
  });
  // Nothing to group by (no dimension, no currency): one row of totals, with no GROUP BY.
  if (dims.length === 0 && !money) return selected;
  return selected.groupBy((eb: SourceBuilder) => {
    const keys = [
      ...dims.map((d) => keyOf(eb, d)),
      ...dims.filter((d) => source.labels?.[d] !== undefined).map((d) => sql`${eb.ref(source.labels![d]!)}`),
    ];
    const currencyKey = money ? [sql`${eb.ref(source.currency!)}`] : [];
    if (!totalsBeside) return [...keys, ...currencyKey];
    const sets = [sql`(${sql.join([ROW_MARK, ...keys, ...currencyKey])})`, sql`(${sql.join(currencyKey)})`];
    return [sql`grouping sets (${sql.join(sets)})`];
  });
}

/**
 * The groups of a two-step count (perEntity), tallied instead of grouped: its dimensions are an entity's
 * count of rows, whose values are known in advance, so one pass over the entities adds each figure up
 * for every combination of values (an aggregate with a filter each), and each combination that holds an
 * entity becomes a row. Hashing each entity into a group by a computed label cost a fifth more.
 *
 *   select "qg_v".<dims>, "qg_v".<metrics> from (select count(*) filter (where <n is 1>) as "n_0",
 *            <metric> filter (where <n is 1>) as "<metric>_0", … for each combination) as "qg_a"
 *   cross join lateral (select '1' as <dim>, "qg_a"."n_0" as "qg_n", … union all …) as "qg_v"
 *   where "qg_v"."qg_n" > 0
 */
function talliedRows(call: SourcedCall, entity: EntityDeclaration, totalsBeside: boolean): SourceRows {
  const { db, model, source, args, ctx } = call;
  const q = db as Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const alias = `qg_${entity.name}`;
  const n = sql.ref(`${alias}.n`);
  const dims = args.group_by ?? [];
  const derived = derivedDimensions(model);
  type Value = { dim: string; value: string; test: RawBuilder<boolean> };
  const axes = dims.map((name): Value[] => {
    const d = derived.find((x) => x.name === name)!;
    return d.values!.map((value) => ({ dim: name, value, test: countValueTest(d.kind, value, n) }));
  });
  const combinations = axes.reduce<Value[][]>((acc, axis) => acc.flatMap((c) => axis.map((v) => [...c, v])), [[]]);
  // The totals beside them, where asked for: every entity, with no value (is_total = 1).
  const tallies = [...combinations, ...(totalsBeside ? [undefined] : [])];
  const asked = model.metrics.filter((m) => args.metrics.includes(m.name));
  const tally = q.selectFrom(entityParts(call, entity).as(alias)).select((eb: SourceBuilder) =>
    tallies.flatMap((combination, i) => {
      const within =
        combination &&
        sql<boolean>`${sql.join(
          combination.map((v) => v.test),
          sql` and `,
        )}`;
      return [
        (within ? sql`count(*) filter (where ${within})` : sql`count(*)`).as(`n_${i}`),
        ...asked.map((m) =>
          metricValue(eb, model, source, m, ctx, { alias, ...(within ? { within } : {}) }).as(`${m.name}_${i}`),
        ),
      ];
    }),
  );
  const each = tallies.map((combination, i) =>
    q.selectNoFrom([
      ...dims.map((dim) => {
        const v = combination?.find((x) => x.dim === dim);
        return (v ? sql`${v.value}::text` : sql`null::text`).as(dim);
      }),
      sql.ref(`qg_a.n_${i}`).as('qg_n'),
      ...asked.map((m) => sql.ref(`qg_a.${m.name}_${i}`).as(m.name)),
      ...(totalsBeside ? [(combination ? sql`0` : sql`1`).as('is_total')] : []),
    ]),
  );
  const values = each.slice(1).reduce((union, s) => union.unionAll(s), each[0]!);
  const columns = [...dims, ...asked.map((m) => m.name), ...(totalsBeside ? ['is_total'] : [])];
  return q
    .selectFrom(tally.as('qg_a'))
    .crossJoinLateral(values.as('qg_v'))
    .select(columns.map((c) => sql.ref(`qg_v.${c}`).as(c)))
    .where((eb: SourceBuilder) =>
      eb.or([eb(sql.ref('qg_v.qg_n'), '>', 0), ...(totalsBeside ? [eb(sql.ref('qg_v.is_total'), '=', 1)] : [])]),
    );
}

/** The order within each currency's rows: a metric asked for, else time, else the first metric, biggest first. */
function orderOf(model: MetricsModel, args: MetricsArgs): [string, boolean][] {
  const dims = args.group_by ?? [];
  const byKey = dims.map((d): [string, boolean] => [d === 'hour' ? 'qg_first' : d, false]);
  if (args.order_by !== undefined) return [[args.order_by, true], ...byKey];
  const attributeOnly = dims.length > 0 && dims.every((d) => !isTimeDimension(d));
  if (attributeOnly) return [[args.metrics[0]!, true], ...byKey];
  return byKey;
}
