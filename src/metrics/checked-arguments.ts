/**
 * The calls the start-up checks compile for `query_metrics`, in place of the product of its metrics,
 * dimensions and filters (see the head comment of statement.ts for why fragments compose).
 */
import { COMPARISONS } from '../lib/comparison.js';
import { CYCLIC_TIMES, MAX_METRICS, TIME_GRAINS, type MetricSource, type MetricsModel } from './declarations.js';
import { derivedDimensions, factsOf, metricsOfFact, unservable, type MetricsArgs } from './call.js';

/**
 * The calls the start-up checks compile instead of every combination (see statement.ts). A fragment's
 * SQL depends on the source that serves the call, never on the fragments beside it, and the source is
 * chosen by the metrics, the attributes read (grouped, filtered, scoped) and the zone; the checks run
 * each call in a whole-hour and a half-hour zone, unscoped and scoped. So these compile every
 * fragment on every source that can serve it, and every way two keys compose:
 * - each metric alone and with each attribute as its group: the metric on every source, from the
 *   smallest that serves it (alone) to the last (grouped by the attribute only the last carries), with
 *   its own row filter holding the rows, and its totals added up or as a grouping set;
 * - each derived dimension with the first metric: an entity's count alone (counted per entity first)
 *   and beside an attribute (joined to the rows);
 * - each dimension with the first metric, and each attribute with it on every source that carries it
 *   (paired with an attribute that only that source and the later ones carry);
 * - a time bucket and a cyclic dimension with an attribute, the two cyclic ones together, two
 *   attributes together; each filter alone and with a group; each comparison; a period; every
 *   metric at once; an ordering by a metric.
 */
export function checkedArguments(model: MetricsModel): Record<string, unknown>[] {
  const range = { start_date: '2025-03-01', end_date: '2025-03-31' };
  const derived = derivedDimensions(model);
  const attributes = model.attributes.map((a) => a.name);
  const dims = [...TIME_GRAINS, ...CYCLIC_TIMES, ...attributes, ...derived.map((d) => d.name)];
  const sample = (name: string): string[] => [
    model.attributes.find((a) => a.name === name)?.identifier?.example ??
      [...model.attributes, ...derived].find((a) => a.name === name)!.values?.[0] ??
      'check-value',
  ];
  const filterable = (name: string): boolean => !derived.some((d) => d.name === name);
  const call = (m: readonly string[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    metrics: m,
    ...extra,
    ...range,
  });
  const calls: Record<string, unknown>[] = [];
  for (const m of model.metrics.map((x) => x.name)) {
    calls.push(call([m]));
    for (const a of attributes) calls.push(call([m], { group_by: [a] }));
  }
  // The rest once per fact table (a model may have several), with its metrics.
  for (const fact of factsOf(model)) calls.push(...factCalls(metricsOfFact(model, fact), fact));
  const seen = new Set<string>();
  return calls
    .filter((c) => unservable(model, c as unknown as MetricsArgs) === undefined)
    .filter((c) => !seen.has(JSON.stringify(c)) && seen.add(JSON.stringify(c)) !== undefined);

  function factCalls(metrics: readonly string[], fact: readonly MetricSource[]): Record<string, unknown>[] {
    const calls: Record<string, unknown>[] = [];
    // The fact table's first attribute, and its finest grain (a stock is measured a day at the finest).
    const first = attributes.find((a) => fact.some((s) => a in s.attributes)) ?? attributes[0];
    const finest = fact.some((s) => s.until !== undefined) ? TIME_GRAINS[1]! : dims[0];
    for (const d of dims) calls.push(call([metrics[0]!], { group_by: [d] }));
    // An attribute on each source that carries it: beside the attribute that picks that source.
    for (const a of attributes) {
      for (const b of attributes) if (a !== b) calls.push(call([metrics[0]!], { group_by: [a, b] }));
    }
    for (const d of [TIME_GRAINS[0]!, TIME_GRAINS[2]!, CYCLIC_TIMES[0]!, CYCLIC_TIMES[1]!]) {
      calls.push(call(metrics.slice(0, 2), { group_by: [d, first] }));
    }
    calls.push(call(metrics.slice(0, 2), { group_by: [...CYCLIC_TIMES] }));
    calls.push(call(metrics.slice(0, 2), { group_by: [TIME_GRAINS[1]!, CYCLIC_TIMES[0]!] }));
    // A derived dimension is a column of its own lateral join whatever else is asked: each with the
    // first metric on every source that carries it (beside each attribute), and its filter.
    for (const d of derived) {
      for (const a of attributes) calls.push(call([metrics[0]!], { group_by: [d.name, a] }));
    }
    for (const a of [...attributes, ...derived.map((d) => d.name)].filter(filterable)) {
      calls.push(call([metrics[0]!], { filters: { [a]: sample(a) } }));
      calls.push(call(metrics.slice(0, 2), { group_by: [TIME_GRAINS[1]!], filters: { [a]: sample(a) } }));
    }
    for (const a of model.amounts ?? []) {
      calls.push(call([metrics[0]!], { [`min_${a.name}`]: 10, [`max_${a.name}`]: 100 }));
      calls.push(call(metrics.slice(0, 2), { group_by: [first], [`min_${a.name}`]: 10 }));
    }
    for (const c of COMPARISONS) calls.push(call(metrics.slice(0, 2), { compare_to: c }));
    calls.push({ metrics: metrics.slice(0, MAX_METRICS), group_by: [finest], period: 'last_week' });
    calls.push(call(metrics.slice(-MAX_METRICS), { group_by: [first], order_by: metrics[metrics.length - 1] }));
    return calls;
  }
}
