/**
 * The one statement of a `query_metrics` call, compiled from the pack's declarations: the source that
 * serves it, its rows held to the range, the filters and the caller's data scope, grouped by the
 * dimensions asked for with the totals as grouping sets of the same statement, then ranked and cut
 * per currency. Every value (dates, time zone, filter and scope values, limit, threshold, the seed of
 * the person keys) is a bind parameter; the time zone and the seed are bound once, in a lateral join,
 * so that the grouped expressions are the same text in the select list, the grouping sets and
 * grouping(), and a protected count's aggregates are one text that PostgreSQL computes once.
 *
 *   select <dimensions>, <currency>, <metrics>, "r"."is_total", "r"."grand", "r"."groups"
 *   from (select "g".*, row_number() over (partition by "g"."is_total", "g"."currency" order by …) as "rank",
 *                count(*) over (partition by "g"."is_total", "g"."currency") as "groups"
 *         from (select <dimension expressions over "qg_time"."local">, <currency>,
 *                      <aggregate> filter (where <the rows it counts>) …,
 *                      grouping('row'::text) as "is_total", grouping(<currency>) as "grand"
 *               from <source rows> cross join lateral (select <time> at time zone $tz as "local"
 *                                                        [, <person key> as "person_key"]) as "qg_time"
 *                    [cross join lateral (<an amount's band, an entity's facts>) …]
 *               where <time> >= $start and <time> < $end and <filters> and <scope>
 *               group by grouping sets (('row'::text, <keys>, <currency>), (<currency>) or ())) as "g") as "r"
 *   where "r"."rank" <= $limit or "r"."is_total" = 1
 *   order by "r"."is_total" desc, "r"."currency", "r"."rank"
 *
 * Why the start-up checks need not compile every combination: each fragment (a dimension's
 * expression, a metric's aggregate, a filter's condition, the scope's condition) is the same text
 * whatever else a call asks for; only the source changes it. So compiling each fragment on every
 * source that can serve it, with each other fragment beside it once (the pairs, see checkedArguments
 * in tool.ts), checks every statement a call can build.
 */
import { sql, type AliasedRawBuilder, type Kysely, type RawBuilder } from 'kysely';
import { ConfigError } from '../errors.js';
import { dailyRollupCovers, endOfRange, rollupCovers, startOfDay } from '../db/range-sql.js';
import { resolveRange, type DateRangeInput, type ResolvedRange } from '../lib/date-range.js';
import { personKey, releasedCount } from '../lib/protected-counts.js';
import type { QueryContext, RowQuery } from '../registry/types.js';
import {
  CYCLIC_TIMES,
  TIME_GRAINS,
  type AmountDeclaration,
  type EntityDeclaration,
  type MetricDeclaration,
  type MetricSource,
  type MetricsModel,
  type SourceBuilder,
  type SourceRows,
} from './declarations.js';

export interface MetricsArgs extends DateRangeInput {
  readonly metrics: readonly string[];
  readonly group_by?: readonly string[] | undefined;
  readonly filters?: Readonly<Record<string, readonly string[] | undefined>> | undefined;
  readonly order_by?: string | undefined;
  readonly limit: number;
}

/**
 * A dimension the engine derives from a pack's amounts and entities (see declarations.ts): its name,
 * what it is of, and the values a filter on it accepts (none for an entity's token, which no filter
 * takes: a token is not turned back into an id).
 */
export interface DerivedDimension {
  readonly name: string;
  readonly kind: 'band' | 'entity' | 'entity_count' | 'entity_type' | 'entity_since';
  readonly amount?: AmountDeclaration;
  readonly entity?: EntityDeclaration;
  readonly values?: readonly [string, ...string[]];
}

/** The labels of an amount's bands: "under 25", "25-50", …, "500 and over". */
export function bandLabels(edges: readonly number[]): [string, ...string[]] {
  return [
    `under ${edges[0]}`,
    ...edges.slice(1).map((e, i) => `${edges[i]}-${e}`),
    `${edges[edges.length - 1]} and over`,
  ];
}

export const ENTITY_COUNTS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10+'] as const;

/** The dimensions derived from the model's amounts and entities, in a fixed order. */
export function derivedDimensions(model: MetricsModel): DerivedDimension[] {
  return [
    ...(model.amounts ?? []).map((a): DerivedDimension => ({
      name: `${a.name}_band`,
      kind: 'band',
      amount: a,
      values: bandLabels(a.bands),
    })),
    ...(model.entities ?? []).flatMap((e): DerivedDimension[] => [
      { name: e.name, kind: 'entity', entity: e },
      { name: `${e.name}_${e.history.counts}`, kind: 'entity_count', entity: e, values: [...ENTITY_COUNTS] },
      { name: `${e.name}_type`, kind: 'entity_type', entity: e, values: ['one_time', 'repeat'] },
      { name: `${e.name}_since`, kind: 'entity_since', entity: e, values: ['new', 'returning'] },
    ]),
  ];
}

/** The columns every statement selects, in this order, whatever the call asks for. */
export function selectedColumns(model: MetricsModel): string[] {
  return [
    ...TIME_GRAINS,
    ...CYCLIC_TIMES,
    ...model.attributes.flatMap((a) => (a.labelled ? [a.name, `${a.name}_name`] : [a.name])),
    ...derivedDimensions(model).map((d) => d.name),
    'currency',
    ...model.metrics.map((m) => m.name),
    'is_total',
    'grand',
    'groups',
  ];
}

/** The base metrics a call's metrics are computed from: ratios give their parts. */
export function baseMetrics(model: MetricsModel, names: readonly string[]): string[] {
  const out = new Set<string>();
  const visit = (name: string): void => {
    const m = model.metrics.find((x) => x.name === name)!;
    if (m.ratio) m.ratio.forEach(visit);
    else out.add(name);
  };
  names.forEach(visit);
  return [...out];
}

/** Whether an answer with these metrics releases a protected count of people (a ratio's part included). */
export function protectsPeople(model: MetricsModel, names: readonly string[]): boolean {
  return baseMetrics(model, names).some((n) => model.metrics.find((m) => m.name === n)!.protected === true);
}

/** What a call reads of a source: its metrics, attributes, amounts and entities. */
interface CallNeeds {
  readonly metrics: readonly string[];
  readonly attributes: readonly string[];
  readonly amounts: readonly string[];
  readonly entities: readonly string[];
  readonly people: boolean;
}

/** What a call reads: the metrics, the attributes it groups and filters by and the data scope's, the amounts and entities. */
export function needsOf(
  model: MetricsModel,
  args: Pick<MetricsArgs, 'metrics' | 'group_by' | 'filters'>,
  ctx?: Pick<QueryContext, 'dataScope'>,
): CallNeeds {
  const attributes = new Set<string>();
  const amounts = new Set<string>();
  const entities = new Set<string>();
  const derived = derivedDimensions(model);
  const read = (name: string): void => {
    if (model.attributes.some((a) => a.name === name)) attributes.add(name);
    const d = derived.find((x) => x.name === name);
    if (d?.amount) amounts.add(d.amount.name);
    if (d?.entity) entities.add(d.entity.name);
  };
  for (const d of args.group_by ?? []) read(d);
  for (const [f, values] of Object.entries(args.filters ?? {})) if (values !== undefined) read(f);
  for (const a of model.attributes) if (a.scope !== undefined && ctx?.dataScope?.[a.scope]) attributes.add(a.name);
  for (const a of model.amounts ?? []) if (amountBounds(args, a.name).length > 0) amounts.add(a.name);
  return {
    metrics: baseMetrics(model, args.metrics),
    attributes: [...attributes],
    amounts: [...amounts],
    entities: [...entities],
    people: protectsPeople(model, args.metrics),
  };
}

/** Whether a call's figures come per currency: it asks for money, or reads an amount (in its row's currency). */
export function perCurrency(model: MetricsModel, args: Pick<MetricsArgs, 'metrics' | 'group_by' | 'filters'>): boolean {
  return (
    baseMetrics(model, args.metrics).some((n) => model.metrics.find((m) => m.name === n)!.unit === 'money') ||
    needsOf(model, args).amounts.length > 0
  );
}

/** Whether a source can compute everything a call reads, whatever its time grain. */
function carries(s: MetricSource, needs: CallNeeds): boolean {
  return (
    needs.metrics.every((m) => m in s.measures) &&
    needs.attributes.every((a) => a in s.attributes) &&
    needs.amounts.every((a) => a in (s.amounts ?? {})) &&
    needs.entities.every((e) => e in (s.entities ?? {})) &&
    (!needs.people || s.people !== undefined)
  );
}

/**
 * Why no source can serve a call, or undefined when one can: the metrics that cannot be computed with
 * the rest, and the rest. A metric measured per order (a median) grouped by what belongs to an order's
 * items (a category), say.
 */
export function unservable(
  model: MetricsModel,
  args: Pick<MetricsArgs, 'metrics' | 'group_by' | 'filters'>,
): { metrics: string[]; others: string[] } | undefined {
  const needs = needsOf(model, args);
  if (model.sources.some((s) => s.timeGrain === undefined && carries(s, needs))) return undefined;
  return {
    metrics: needs.metrics.filter((m) => !model.sources.every((s) => carries(s, { ...needs, metrics: [m] }))),
    others: [...needs.attributes, ...needs.amounts, ...needs.entities],
  };
}

/** The first source (smallest first) that serves the call; a call no source serves is refused by its input schema. */
export function sourceFor(model: MetricsModel, args: MetricsArgs, ctx: QueryContext): MetricSource {
  const range = resolveRange(args);
  const needs = needsOf(model, args, ctx);
  const groupsByHour = (args.group_by ?? []).some((d) => d === 'hour' || d === 'hour_of_day');
  return (
    model.sources.find(
      (s) =>
        (s.timeGrain !== 'hour' || rollupCovers(range, ctx.timeZone)) &&
        (s.timeGrain !== 'day' || (dailyRollupCovers(range, ctx.timeZone) && !groupsByHour)) &&
        carries(s, needs),
    ) ??
    model.sources.find((s) => s.timeGrain === undefined && carries(s, needs)) ??
    model.sources[model.sources.length - 1]!
  );
}

/** The bounds a call puts on an amount: [operator, value] for min_<name> (at least) and max_<name> (below). */
export function amountBounds(args: object, name: string): ['>=' | '<', number][] {
  const values = args as Record<string, unknown>;
  const out: ['>=' | '<', number][] = [];
  if (typeof values[`min_${name}`] === 'number') out.push(['>=', values[`min_${name}`] as number]);
  if (typeof values[`max_${name}`] === 'number') out.push(['<', values[`max_${name}`] as number]);
  return out;
}

const QG_TIME = 'qg_time';
const LOCAL = `${QG_TIME}.local`;
/**
 * A constant in the grouped rows' set only, whose grouping() tells them from the totals: the first key
 * could be an entity's id, which no column but its own token may select.
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
      return sql`case when ${sql.ref(`${lateral}.n`)} >= 10 then '10+' else ${sql.ref(`${lateral}.n`)}::text end`;
    case 'entity_type':
      return sql`case when ${sql.ref(`${lateral}.n`)} > 1 then 'repeat' else 'one_time' end`;
    case 'entity_since':
      return sql`${sql.ref(`${lateral}_first.since`)}`;
  }
}

const isTime = (name: string): boolean => (TIME_GRAINS as readonly string[]).includes(name);
const isCyclic = (name: string): boolean => (CYCLIC_TIMES as readonly string[]).includes(name);

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
): RawBuilder<unknown> {
  const measure = source.measures[name]!;
  const of =
    measure.of === undefined ? undefined : typeof measure.of === 'string' ? eb.ref(measure.of) : measure.of(eb);
  const filter = measure.rows ? sql` filter (where ${measure.rows(eb)})` : sql``;
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

/** A metric's figure in a grouped row: rounded money, ratios from the sums of their parts. */
function metricValue(
  eb: SourceBuilder,
  model: MetricsModel,
  source: MetricSource,
  m: MetricDeclaration,
  ctx: QueryContext,
): RawBuilder<unknown> {
  const raw = (name: string): RawBuilder<unknown> => {
    const d = model.metrics.find((x) => x.name === name)!;
    if (!d.ratio) return aggregateOf(eb, model, source, name, ctx);
    return sql`(${raw(d.ratio[0])})::numeric / nullif(${raw(d.ratio[1])}, 0)`;
  };
  if (m.unit === 'money') return sql`round((${raw(m.name)})::numeric, 2)`;
  if (m.unit === 'ratio') return sql`round(${raw(m.name)}, 4)`;
  return raw(m.name);
}

/** The rows of a call: the source's, held to the range, the filters and the caller's data scope. */
function rowsOf(
  db: Kysely<unknown>,
  model: MetricsModel,
  source: MetricSource,
  args: MetricsArgs,
  ctx: QueryContext,
  range: ResolvedRange,
): SourceRows {
  // A protected count's person keys are bound here, once per row, beside the local time.
  const protection = protectsPeople(model, args.metrics) ? ctx.protection : undefined;
  let rows = source
    .rows(db)
    .crossJoinLateral(
      db
        .selectNoFrom([
          sql`${sql.ref(source.time)} at time zone ${ctx.timeZone}`.as('local'),
          ...(protection ? [personKey(sql.ref(source.people!), protection).as('person_key')] : []),
        ])
        .as(QG_TIME),
    )
    .where(source.time, '>=', startOfDay(range.startDate, ctx.timeZone))
    .where(source.time, '<', endOfRange(range, ctx.timeZone));
  const needs = needsOf(model, args, ctx);
  for (const a of model.amounts ?? []) {
    if (!needs.amounts.includes(a.name)) continue;
    const value = sql.ref(source.amounts![a.name]!);
    for (const [op, bound] of amountBounds(args, a.name)) rows = rows.where(value, op, bound);
    // The band, computed once per row beside it: its edges and labels are bind parameters, so the
    // grouped expression is a column of the lateral, the same text wherever it is written.
    const labels = bandLabels(a.bands);
    const band = sql`case ${sql.join(
      a.bands.map((edge, i) => sql`when ${value} < ${edge} then ${labels[i]!}`),
      sql` `,
    )} else ${labels[labels.length - 1]!} end`;
    rows = rows.crossJoinLateral(db.selectNoFrom(band.as('k')).as(`qg_${a.name}_band`));
  }
  for (const e of model.entities ?? []) {
    if (!needs.entities.includes(e.name)) continue;
    const start = startOfDay(range.startDate, ctx.timeZone);
    const end = endOfRange(range, ctx.timeZone);
    // Two probes, each answered by an index on (id, time) where the pack has one: its rows in the range,
    // and its first row ever.
    const view = e.history.from;
    const history = (alias: string): SourceRows =>
      (db as Kysely<any>) // eslint-disable-line @typescript-eslint/no-explicit-any
        .selectFrom(`${view} as ${alias}`)
        .where(sql.ref(`${alias}.${e.history.id}`), '=', sql.ref(source.entities![e.name]!));
    const time = (alias: string): RawBuilder<unknown> => sql`${sql.ref(`${alias}.${e.history.time}`)}`;
    const inRange = history('qg_h')
      .select(sql<number>`count(*)`.as('n'))
      .where(time('qg_h'), '>=', start)
      .where(time('qg_h'), '<', end);
    const first = history('qg_f').select(
      sql<string>`case when min(${time('qg_f')}) >= ${start} then 'new' else 'returning' end`.as('since'),
    );
    rows = rows.crossJoinLateral(inRange.as(`qg_${e.name}`)).crossJoinLateral(first.as(`qg_${e.name}_first`));
  }
  for (const [name, values] of Object.entries(args.filters ?? {})) {
    if (values === undefined) continue;
    rows = model.attributes.some((a) => a.name === name)
      ? rows.where(source.attributes[name]!, 'in', values)
      : rows.where(derivedKey(model, source, name), 'in', values);
  }
  for (const a of model.attributes) {
    const scope = a.scope === undefined ? undefined : ctx.dataScope?.[a.scope];
    if (scope !== undefined) rows = rows.where(source.attributes[a.name]!, 'in', scope);
  }
  return rows;
}

/** The statement of a call (without LIMIT: the registry adds it). */
export function metricsStatement(
  db: Kysely<unknown>,
  model: MetricsModel,
  args: MetricsArgs,
  ctx: QueryContext,
): RowQuery {
  const range = resolveRange(args);
  const source = sourceFor(model, args, ctx);
  const dims = args.group_by ?? [];
  const money = perCurrency(model, args);
  const rows = rowsOf(db, model, source, args, ctx, range);

  const keyOf = (eb: SourceBuilder, name: string): RawBuilder<unknown> =>
    isTime(name) || isCyclic(name)
      ? timeKey(eb, name, source)
      : model.attributes.some((a) => a.name === name)
        ? sql`${eb.ref(source.attributes[name]!)}`
        : derivedKey(model, source, name);
  const grouped = rows
    .select((eb: SourceBuilder) => {
      const keys = dims.map((d) => keyOf(eb, d));
      const currency = money ? sql`${eb.ref(source.currency!)}` : undefined;
      const grand = currency ? sql`grouping(${currency})` : sql`0`;
      const out: AliasedRawBuilder<unknown, string>[] = [];
      for (const name of [...TIME_GRAINS, ...CYCLIC_TIMES]) {
        out.push((dims.includes(name) ? keyOf(eb, name) : sql`null::text`).as(name));
      }
      for (const a of model.attributes) {
        out.push((dims.includes(a.name) ? keyOf(eb, a.name) : sql`null::text`).as(a.name));
        if (a.labelled) {
          const label = source.labels?.[a.name];
          out.push((dims.includes(a.name) && label ? sql`${eb.ref(label)}` : sql`null::text`).as(`${a.name}_name`));
        }
      }
      for (const d of derivedDimensions(model)) {
        out.push((dims.includes(d.name) ? keyOf(eb, d.name) : sql`null::text`).as(d.name));
      }
      out.push((currency ?? sql`null::text`).as('currency'));
      for (const m of model.metrics) {
        const value = args.metrics.includes(m.name) ? metricValue(eb, model, source, m, ctx) : sql`null::numeric`;
        // Money comes per currency: no grouping set adds two (no grand total across currencies is computed,
        // so a median or a distinct count is never worked out for rows no answer returns).
        out.push(value.as(m.name));
      }
      out.push((keys.length > 0 ? sql`grouping(${ROW_MARK})` : sql`1`).as('is_total'));
      out.push(grand.as('grand'));
      // The first instant of the hour bucket (the same whichever source serves it), to list hours in time
      // order even when clocks go back; null unless hours are asked for.
      const hourStart = sql`${eb.ref(source.time)} - (${eb.ref(LOCAL)} - date_trunc('hour', ${eb.ref(LOCAL)}))`;
      out.push((dims.includes('hour') ? sql`min(${hourStart})` : sql`null::timestamptz`).as('qg_first'));
      return out;
    })
    .groupBy((eb: SourceBuilder) => {
      const keys = dims.map((d) => keyOf(eb, d));
      const labels = dims
        .filter((d) => source.labels?.[d] !== undefined)
        .map((d) => sql`${eb.ref(source.labels![d]!)}`);
      const currency = money ? sql`${eb.ref(source.currency!)}` : undefined;
      const marked = keys.length > 0 ? [ROW_MARK, ...keys] : [];
      const sets = [sql`(${sql.join([...marked, ...labels, ...(currency ? [currency] : [])])})`];
      if (keys.length > 0) sets.push(currency ? sql`(${currency})` : sql`()`);
      return [sql`grouping sets (${sql.join(sets)})`];
    });

  const order = orderOf(model, args);
  const partition = ['g.is_total', 'g.currency'] as const;
  const ranked = db.selectFrom(grouped.as('g')).select((eb) => [
    ...selectedColumns(model)
      .filter((c) => c !== 'groups')
      .map((c) => eb.ref(`g.${c}`).as(c)),
    eb.fn
      .agg<number>('row_number', [])
      .over((ob) => {
        let w = ob.partitionBy([...partition] as never);
        for (const [ref, desc] of order) w = w.orderBy(ref as never, desc ? (o) => o.desc().nullsLast() : 'asc');
        return w;
      })
      .as('rank'),
    eb.fn
      .countAll<number>()
      .over((ob) => ob.partitionBy([...partition] as never))
      .as('groups'),
  ]);
  return db
    .selectFrom(ranked.as('r'))
    .select((eb) => selectedColumns(model).map((c) => eb.ref(`r.${c}`).as(c)))
    .where((eb) => eb.or([eb('r.rank', '<=', args.limit), eb('r.is_total', '=', 1)]))
    .orderBy('r.is_total', 'desc')
    .orderBy('r.currency')
    .orderBy('r.rank');
}

/** The order within each currency's rows: a metric asked for, else time, else the first metric, biggest first. */
function orderOf(model: MetricsModel, args: MetricsArgs): [string, boolean][] {
  const dims = args.group_by ?? [];
  const byKey = dims.map((d): [string, boolean] => [d === 'hour' ? 'g.qg_first' : `g.${d}`, false]);
  if (args.order_by !== undefined) return [[`g.${args.order_by}`, true], ...byKey];
  const attributeOnly = dims.length > 0 && dims.every((d) => !isTime(d) && !isCyclic(d));
  if (attributeOnly) return [[`g.${args.metrics[0]!}`, true], ...byKey];
  return byKey.length > 0 ? byKey : [['g.is_total', false]];
}
