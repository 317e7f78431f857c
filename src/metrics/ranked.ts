/**
 * The answer of a `query_metrics` call: each currency's totals, and its first `limit` groups in order.
 *
 *   with "qg_t" as (<the totals: one row a currency, or one in all without money>)
 *   select <columns> from (
 *     select <columns of x> from "qg_t" as "t"
 *       cross join lateral (select "l".<…>, row_number() over (order by …) as "rank", count(*) over () as "groups"
 *                           from (select "g".<…> from (<the groups of t's currency>) as "g"
 *                                 order by … limit $limit + 1) as "l") as "x"
 *     union all select <columns of t> from "qg_t" as "t") as "u"
 *   where "u"."is_total" = 1 or "u"."rank" <= $limit
 *   order by "u"."is_total" desc, "u"."currency", "u"."rank"
 *
 * Each currency's groups are one aggregate and a top-N sort of them, what `where currency = … group by
 * … order by … limit` costs in a hand-written statement: no sort of every group. One group more than
 * the limit says whether the list was cut. The totals come from the cheapest of three places:
 * - a statement of their own, on a rollup that serves the call without its dimensions, where the groups
 *   are nearly as many as the rows (an entity's: a customer each);
 * - else, where every figure adds up, the sums of the groups: the groups are then computed once, in
 *   "qg_g", and each currency's are read from it (an entity's one-time and repeat: two groups to add);
 * - else (a distinct count, a percentile), a grouping set beside the groups in "qg_g", in the same pass.
 * The grouped rows carry figures unrounded; money and ratios are rounded here, once, on both sides.
 */
import { sql, type AliasedRawBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { RowQuery } from '../registry/types.js';

export interface RankedSpec {
  /** Every column of the answer, in order (the statement's selectedColumns). */
  readonly columns: readonly string[];
  /** The dimension columns the grouped rows carry (keys and their labels). */
  readonly keys: readonly string[];
  /** The metrics asked for, how their figure is finished, and how it adds up over groups if it does. */
  readonly metrics: readonly { name: string; round?: 2 | 4; adds?: 'count' | 'sum' }[];
  /** Whether the rows carry a currency (money, or an amount, read). */
  readonly money: boolean;
  /** The order of a currency's groups: a grouped column and whether it runs biggest first. */
  readonly order: readonly (readonly [string, boolean])[];
  readonly limit: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Grouped = SelectQueryBuilder<any, any, any>;

/** Totals that come with the groups: added up from them, or a grouping set beside them (is_total = 1). */
export type Totals = 'sums of the groups' | 'beside the groups';

/**
 * The answer from its totals (a statement, or the sums of the groups) and, with dimensions, the groups
 * of one currency (given none: of every currency).
 */
export function rankedAnswer(
  db: Kysely<unknown>,
  totals: Grouped | Totals,
  groupsOf: ((currency?: RawBuilder<unknown>, totalsBeside?: boolean) => Grouped) | undefined,
  spec: RankedSpec,
): RowQuery {
  const q = db as Kysely<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const ref = (alias: string, column: string): RawBuilder<unknown> => sql.ref(`${alias}.${column}`);
  const currency = (alias: string): RawBuilder<unknown> => (spec.money ? ref(alias, 'currency') : sql`null::text`);
  const finish = (m: RankedSpec['metrics'][number], value: RawBuilder<unknown>): RawBuilder<unknown> =>
    m.round === undefined ? value : m.round === 2 ? sql`round((${value})::numeric, 2)` : sql`round(${value}, 4)`;
  const columns = (alias: string, total: boolean, groups: RawBuilder<unknown>): AliasedRawBuilder<unknown, string>[] =>
    spec.columns.map((c) => {
      const m = spec.metrics.find((x) => x.name === c);
      if (m) return finish(m, ref(alias, c)).as(c);
      if (c === 'currency') return currency(alias).as(c);
      if (c === 'is_total') return (total ? sql`1` : sql`0`).as(c);
      if (c === 'grand') return sql`0`.as(c);
      if (c === 'groups') return groups.as(c);
      // A totals row's key is null of the group rows' type (an id is no text): an untyped null takes it.
      if (spec.keys.includes(c)) return (total ? sql`null` : ref(alias, c)).as(c);
      const numeric = spec.columns.indexOf(c) > spec.columns.indexOf('currency');
      return (numeric ? sql`null::numeric` : sql`null::text`).as(c);
    });

  // Only totals: the totals statement is the answer (one row a currency, or one in all).
  if (groupsOf === undefined) {
    if (typeof totals === 'string') throw new Error('totals that come with the groups need groups');
    return q
      .selectFrom(totals.as('t'))
      .select(columns('t', true, sql`1`))
      .orderBy(currency('t')) as unknown as RowQuery;
  }
  const shared = typeof totals === 'string';
  const beside = totals === 'beside the groups';
  // Named, not *: the registry's check follows each answer column to the columns behind it.
  const carried = [
    ...spec.keys,
    ...(spec.money ? ['currency'] : []),
    ...spec.metrics.map((m) => m.name),
    ...(spec.order.some(([c]) => c === 'qg_first') ? ['qg_first'] : []),
  ];
  const orderBy = (alias: string): RawBuilder<unknown> =>
    sql.join(spec.order.map(([c, desc]) => (desc ? sql`${ref(alias, c)} desc nulls last` : sql`${ref(alias, c)} asc`)));
  const ofCurrency = sql<boolean>`${currency('g')} is not distinct from ${currency('t')}`;
  const groups = shared
    ? q
        .selectFrom('qg_g as g')
        .select(carried.map((c) => ref('g', c).as(c)))
        .$if(beside, (b) => b.where(sql<boolean>`${ref('g', 'is_total')} = 0`))
        .$if(spec.money, (b) => b.where(ofCurrency))
    : q.selectFrom(groupsOf(currency('t')).as('g')).select(carried.map((c) => ref('g', c).as(c)));
  const first = groups.orderBy(sql`${orderBy('g')}`).limit(spec.limit + 1);
  const listed = q
    .selectFrom(first.as('l'))
    .select(carried.map((c) => ref('l', c).as(c)))
    .select([
      sql<number>`row_number() over (order by ${orderBy('l')})`.as('rank'),
      sql<number>`count(*) over ()`.as('groups'),
    ]);
  const answer = q
    .selectFrom('qg_t as t')
    .crossJoinLateral(listed.as('x'))
    .select([...columns('x', false, ref('x', 'groups')), ref('x', 'rank').as('rank')])
    .unionAll(q.selectFrom('qg_t as t').select([...columns('t', true, sql`1`), sql`0::bigint`.as('rank')]));
  const fromGroups = beside
    ? q
        .selectFrom('qg_g as g')
        .select([
          ...(spec.money ? [ref('g', 'currency').as('currency')] : []),
          ...spec.metrics.map((m) => ref('g', m.name).as(m.name)),
        ])
        .where(sql<boolean>`${ref('g', 'is_total')} = 1`)
    : q
        .selectFrom('qg_g as g')
        .select([
          ...(spec.money ? [ref('g', 'currency').as('currency')] : []),
          ...spec.metrics.map((m) => {
            const total = sql`coalesce(sum(${ref('g', m.name)}), 0)`;
            return (m.adds === 'count' ? sql`${total}::bigint` : total).as(m.name);
          }),
        ])
        .$if(spec.money, (b) => b.groupBy(ref('g', 'currency')));
  const withTotals = shared
    ? q.with('qg_g', () => groupsOf(undefined, beside)).with('qg_t', () => fromGroups)
    : q.with('qg_t', () => totals as Grouped);
  return withTotals
    .selectFrom(answer.as('u'))
    .select(spec.columns.map((c) => ref('u', c).as(c)))
    .where(sql<boolean>`${ref('u', 'is_total')} = 1 or ${ref('u', 'rank')} <= ${spec.limit}`)
    .orderBy(ref('u', 'is_total'), 'desc')
    .orderBy(ref('u', 'currency'))
    .orderBy(ref('u', 'rank')) as unknown as RowQuery;
}
