/**
 * Small-group suppression that one subtraction cannot undo. A template whose figures count people
 * declares `smallGroups`: the column that identifies a person and the attributes a caller can group or
 * filter its rows by. For a call, the rows of the range and filters fall into cells, one per
 * combination of those attributes (team × priority, say); a cell of fewer distinct people than the
 * threshold is hidden, and its rows are left out of every figure of the answer: each group, each
 * period and every total. So every published figure is a sum over visible cells only, whatever the
 * grouping, and all groupings of the same range and filters add up to the same visible total: no
 * hidden cell is the difference of two figures, of one answer or of several over the same range.
 *
 * This goes further than secondary suppression (hiding the next smallest cell, so that a margin minus
 * the visible cells no longer gives one hidden cell): here the margins never include a hidden cell.
 * The registry gives the rule and the threshold in ctx.smallGroups; a template applies it with
 * visibleGroupsOnly() and reports what it left out with hiddenGroupCount(), and the registry checks at
 * start-up that every branch of its statement does both.
 */
import { sql, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import { ConfigError } from '../errors.js';

export interface SmallGroupRule {
  /** The column that identifies a person, counted distinct in each cell ("t.requester_id"). */
  readonly people: string;
  /**
   * The columns whose combinations are the cells: every attribute the template can group or filter
   * its rows by ("t.team_id", "t.priority"). A filter on a column left out of them splits cells, and
   * two calls that differ by that filter could then be subtracted.
   */
  readonly by: readonly [string, ...string[]];
  /**
   * For a template whose answers count people only for some arguments (query_metrics asked for a
   * count of people): whether a call's arguments do. The rule holds for those calls; the others
   * count no one and keep every row. Unset, the rule holds for every call.
   */
  readonly appliesTo?: (args: unknown) => boolean;
}

/** The rule as a template's builder gets it: with the fewest distinct people a cell must stand for. */
export interface SmallGroupContext extends SmallGroupRule {
  readonly threshold: number;
}

// A template's rows are of its pack's tables; the helpers only add clauses to them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Rows = SelectQueryBuilder<any, any, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Builder = ExpressionBuilder<any, any>;

const HIDDEN = 'small_group';

function ruleOf(ctx: { readonly smallGroups?: SmallGroupContext }): SmallGroupContext {
  if (!ctx.smallGroups) {
    throw new ConfigError('a template that applies small-group suppression must declare smallGroups');
  }
  return ctx.smallGroups;
}

/** The hidden cells of some rows: one row per combination of `by` that stands for too few people. */
function hiddenCells(rows: Rows, rule: SmallGroupContext): Rows {
  return rows
    .clearSelect()
    .select(rule.by.map((column, i) => sql.ref(column).as(`cell_${i}`)))
    .groupBy(rule.by.map((column) => sql.ref(column)))
    .having(sql`count(distinct ${sql.ref(rule.people)})`, '<', rule.threshold);
}

/**
 * The rows outside every hidden cell: `rows` (the range, filters and data scope, before any grouping)
 * with
 *   where not exists (select 1 from (select by… from <the same rows> group by by…
 *                                    having count(distinct people) < $threshold) as "small_group"
 *                     where "small_group"."cell_0" is not distinct from by_0 and …)
 * A row whose attribute is NULL falls in the NULL cell, never outside every cell.
 */
export function visibleGroupsOnly<QB extends Rows>(rows: QB, ctx: { readonly smallGroups?: SmallGroupContext }): QB {
  const rule = ruleOf(ctx);
  const hidden = hiddenCells(rows, rule).as(HIDDEN);
  return rows.where((eb: Builder) =>
    eb.not(
      eb.exists(
        eb
          .selectFrom(hidden)
          .select(sql<number>`1`.as('hidden'))
          .where(
            sql<SqlBool>`${sql.join(
              rule.by.map(
                (column, i) => sql`${sql.ref(`${HIDDEN}.cell_${i}`)} is not distinct from ${sql.ref(column)}`,
              ),
              sql` and `,
            )}`,
          ),
      ),
    ),
  ) as QB;
}

/**
 * How many cells of `rows` are hidden, as a scalar subquery to select under a column declared
 * `{ type: 'integer', source: 'computed', treatment: 'hidden_groups' }`:
 *   (select count(*) from (<the hidden cells of the same rows>) as "small_group")
 * The registry reads it into `suppressed_groups` and never returns it otherwise.
 */
export function hiddenGroupCount(
  eb: Builder,
  rows: Rows,
  ctx: { readonly smallGroups?: SmallGroupContext },
): SelectQueryBuilder<never, never, { n: number }> {
  return eb.selectFrom(hiddenCells(rows, ruleOf(ctx)).as(HIDDEN)).select((e) => e.fn.countAll<number>().as('n'));
}
