/**
 * What a `query_metrics` call asks for, read off its arguments and the pack's declarations: the
 * dimensions the engine derives from amounts and entities, the columns every answer selects, what a
 * call reads (metrics, attributes, amounts, entities), whether it comes per currency, and the source
 * that serves it, or why none can.
 */
import { dailyRollupCovers, rollupCovers } from '../db/range-sql.js';
import { resolveRange, type DateRangeInput } from '../lib/date-range.js';
import type { QueryContext } from '../registry/types.js';
import {
  CYCLIC_TIMES,
  TIME_GRAINS,
  type AmountDeclaration,
  type EntityDeclaration,
  type MetricSource,
  type MetricsModel,
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
  /** Whether it groups by an hour, an hour of day or a weekday: no stock is measured at those. */
  readonly hourly: boolean;
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
    hourly: (args.group_by ?? []).some((d) => HOURLY.includes(d)),
  };
}

/**
 * The model's fact tables, each as the sources of base rows that measure it (the sales pack has one:
 * its orders, alone, with their region, and with their items; a billing pack two: invoices and
 * subscriptions): base sources that share a metric are of one fact. A call reads one fact table.
 */
export function factsOf(model: MetricsModel): MetricSource[][] {
  const facts: MetricSource[][] = [];
  for (const s of model.sources.filter((x) => !x.rollup && x.timeGrain === undefined)) {
    const shares = (f: MetricSource[]): boolean => f.some((t) => Object.keys(s.measures).some((m) => m in t.measures));
    const joined = facts.filter(shares);
    const merged = [...joined.flat(), s];
    for (const f of joined) facts.splice(facts.indexOf(f), 1);
    facts.push(merged);
  }
  return facts;
}

/** The fact table of a metric (of a ratio: of its parts), among `facts`, the model's unless given. */
export function factOf(
  model: MetricsModel,
  metric: string,
  facts: readonly MetricSource[][] = factsOf(model),
): MetricSource[] | undefined {
  const part = baseMetrics(model, [metric])[0]!;
  return facts.find((f) => f.some((s) => part in s.measures));
}

/** The metrics of one fact table (each metric's parts measured on its sources), in declaration order. */
export function metricsOfFact(model: MetricsModel, fact: readonly MetricSource[]): string[] {
  return model.metrics
    .map((m) => m.name)
    .filter((m) => baseMetrics(model, [m]).every((n) => fact.some((s) => n in s.measures)));
}

/** The dimensions a stock is not measured by: it is as of an instant, the end of a day at the finest. */
export const HOURLY: readonly string[] = ['hour', 'hour_of_day', 'weekday'];

/** Whether a metric is a stock (see MetricSource.until): measured by a source whose rows hold for a span. */
export function isStock(model: MetricsModel, name: string): boolean {
  return model.sources.some((s) => s.until !== undefined && name in s.measures);
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
    (!needs.people || s.people !== undefined) &&
    (!needs.hourly || s.until === undefined)
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
): { metrics: string[]; others: string[]; reason?: string } | undefined {
  const needs = needsOf(model, args);
  if (model.sources.some((s) => s.timeGrain === undefined && carries(s, needs))) return undefined;
  // Metrics of different fact tables: no one source measures them all, whatever the dimensions.
  const facts = factsOf(model);
  const tableOf = (m: string): MetricSource[] | undefined => factOf(model, m, facts);
  if (new Set(needs.metrics.map(tableOf)).size > 1) {
    return {
      metrics: [...needs.metrics],
      others: [],
      reason: `they are measured on different fact tables (${needs.metrics.map((m) => `${m}: ${tableOf(m)!.at(-1)!.name}`).join('; ')}); ask for them in separate calls with the same range and dimensions`,
    };
  }
  const stocks = needs.metrics.filter((m) => isStock(model, m));
  if (needs.hourly && stocks.length > 0) {
    return {
      metrics: stocks,
      others: (args.group_by ?? []).filter((d) => HOURLY.includes(d)),
      reason:
        'a stock is a figure as of an instant, measured at the end of each day at the finest; group it by day, week, month or quarter',
    };
  }
  return {
    // Judged on the sources of the call's fact table (every source, where the model has one).
    metrics: needs.metrics.filter(
      (m) =>
        !model.sources
          .filter((s) => needs.metrics.some((x) => x in s.measures))
          .every((s) => carries(s, { ...needs, metrics: [m] })),
    ),
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
