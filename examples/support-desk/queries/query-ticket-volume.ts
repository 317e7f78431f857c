/**
 * How many tickets were opened in a date range, per day, ISO week or month, per priority or per team?
 *
 * Example input: { "start_date": "2025-04-01", "end_date": "2025-06-29", "group_by": "week", "priority": "urgent" }
 *
 * SQL (group_by week; day and month differ only in the labels): each day's first instant in the
 * reporting zone and its period's label are bound as arrays, so tickets are cut into days exactly where
 * the range is; <rows> is the range and filter, <hidden> its team-and-priority cells of too few requesters:
 *   <rows> = from "support_reporting"."tickets" as "t"
 *            where "t"."created_at" >= cast($n as timestamptz) and "t"."created_at" < cast($n as timestamptz)
 *              [and "t"."priority" = $n]
 *   <hidden> = select "t"."team_id" as "cell_0", "t"."priority" as "cell_1" <rows>
 *              group by "t"."team_id", "t"."priority" having count(distinct "t"."requester_id") < $k
 *   select (cast($1 as text[]))[width_bucket("t"."created_at", cast($2 as timestamptz[]))] as "group_key",
 *          count(*) as "ticket_count", null::bigint as "requesters",
 *          (select count(*) as "n" from (<hidden>) as "small_group") as "hidden_groups"
 *   <rows> and not exists (select 1 as "hidden" from (<hidden>) as "small_group"
 *                          where "small_group"."cell_0" is not distinct from "t"."team_id" and …)
 *   group by grouping sets (("group_key"), ()) order by "group_key" nulls first limit $n
 * By priority the key is "t"."priority"; by team it is "tm"."name", from an inner join of
 * "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id"; both list the busiest first, and
 * count nullif(count(distinct "t"."requester_id"), 0) as "requesters". The grand total's row (key null)
 * is dropped by present().
 */
import { sql } from 'kysely';
import { z } from 'zod';
import { localPeriodOf, type Period } from '../../../src/db/range-sql.js';
import { oneOf } from '../../../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../../src/lib/date-range.js';
import {
  bucketBounds,
  bucketFields,
  count,
  echoRange,
  rangeEcho,
  rowsEnvelope,
} from '../../../src/lib/result-shape.js';
import { hiddenGroupCount, visibleGroupsOnly } from '../../../src/lib/small-groups.js';
import { defineTemplate } from '../pack/kit.js';
import { PRIORITIES, priority } from '../pack/priorities.js';
import { ticketsCreatedInRange } from '../pack/range-sql.js';

const GROUPINGS = ['day', 'week', 'month', 'priority', 'team'] as const;
type Grouping = (typeof GROUPINGS)[number];

const input = z
  .strictObject({
    ...dateRangeFields,
    group_by: oneOf(GROUPINGS, 'How to group the tickets'),
    priority: priority.optional().describe('Count only tickets of this priority; omit to count every priority'),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  period: z
    .string()
    .optional()
    .describe(
      'First day of the day, ISO week (Monday) or month, YYYY-MM-DD, even when the range covers only part of it',
    ),
  ...bucketFields,
  priority: z.enum(PRIORITIES).optional(),
  team: z.string().optional(),
  ticket_count: count.describe('Tickets opened in the group'),
});

const output = z.object({
  ...rangeEcho,
  group_by: z.enum(GROUPINGS),
  priority: z.enum(PRIORITIES).nullable().describe('The priority filter, or null when every priority was counted'),
  ...rowsEnvelope(row),
});

const keyName = (grouping: Grouping): 'period' | 'priority' | 'team' =>
  grouping === 'priority' || grouping === 'team' ? grouping : 'period';

export const queryTicketVolume = defineTemplate({
  name: 'query_ticket_volume',
  title: 'Tickets opened by period, priority or team',
  description: [
    'Counts the support tickets opened between start_date and end_date (both inclusive, at most 90 days), grouped by day, week (ISO, starting Monday), month, priority or team; optionally only one priority.',
    'Use it for ticket volume questions: "how many tickets per week this quarter?", "which team got the most tickets in May?", "urgent tickets per day last week".',
    'Periods are labelled by their first day, which may fall before start_date; only tickets opened inside the range are counted, and a period the range covers only in part (cut by start_date, end_date, or the current minute while the range is running) says partial: true with the first_day and last_day it counts. Periods without tickets are not listed. Priorities and teams come busiest first. The tickets of a team and priority that come from fewer requesters than the small-group threshold (5 unless configured) are left out of every figure, whatever the grouping, so every grouping of the same range and priority adds up to the same total; suppressed_groups counts those team-and-priority groups, and figures_cover says visible_groups_only when there are any.',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-04-01', end_date: '2025-06-29', group_by: 'week' },
    { start_date: '2025-05-01', end_date: '2025-05-31', group_by: 'team', priority: 'urgent' },
    { start_date: '2025-05-01', end_date: '2025-05-31', group_by: 'priority' },
  ],
  output,
  columns: {
    group_key: { type: 'text', source: 'computed', treatment: 'plain' },
    ticket_count: { type: 'integer', source: 'computed', treatment: 'plain' },
    // A priority's or a team's tickets come from few enough requesters, at times, to single one out.
    requesters: { type: 'integer', source: 'computed', treatment: 'distinct_people' },
    hidden_groups: { type: 'integer', source: 'computed', treatment: 'hidden_groups' },
  },
  // A team's tickets of one priority from fewer requesters than the threshold are left out of every
  // figure, by team, by priority and by period alike, so no grouping's total gives them away.
  smallGroups: { people: 't.requester_id', by: ['t.team_id', 't.priority'] },
  query: (db, args, ctx) => {
    const range = resolveRange(args);
    const rows = ticketsCreatedInRange(db, range, ctx.timeZone).$if(args.priority !== undefined, (qb) =>
      qb.where('t.priority', '=', args.priority!),
    );
    const tickets = visibleGroupsOnly(rows, ctx);
    // The grand total's row (key null), dropped by present(), is there so that an answer whose every
    // group is hidden still says how many were; its count of requesters is null when nobody is left.
    switch (args.group_by) {
      case 'priority':
        return tickets
          .select((eb) => [
            't.priority as group_key',
            eb.fn.countAll().as('ticket_count'),
            sql<number | null>`nullif(count(distinct ${eb.ref('t.requester_id')}), 0)`.as('requesters'),
            hiddenGroupCount(eb, rows, ctx).as('hidden_groups'),
          ])
          .groupBy(sql`grouping sets ((${sql.ref('t.priority')}), ())`)
          .orderBy('ticket_count', 'desc')
          .orderBy('group_key');
      case 'team':
        return tickets
          .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id')
          .select((eb) => [
            'tm.name as group_key',
            eb.fn.countAll().as('ticket_count'),
            sql<number | null>`nullif(count(distinct ${eb.ref('t.requester_id')}), 0)`.as('requesters'),
            hiddenGroupCount(eb, rows, ctx).as('hidden_groups'),
          ])
          .groupBy(sql`grouping sets ((${sql.ref('tm.name')}), ())`)
          .orderBy('ticket_count', 'desc')
          .orderBy('group_key');
      default: {
        const period: Period = args.group_by;
        return tickets
          .select((eb) => [
            localPeriodOf(eb.ref('t.created_at'), range, ctx.timeZone, period).as('group_key'),
            eb.fn.countAll().as('ticket_count'),
            // A period is not a group of people: null keeps every period (see the registry's Treatment).
            sql<string | null>`null::bigint`.as('requesters'),
            hiddenGroupCount(eb, rows, ctx).as('hidden_groups'),
          ])
          .groupBy(sql`grouping sets ((${sql.ref('group_key')}), ())`)
          .orderBy(sql`${sql.ref('group_key')} nulls first`);
      }
    }
  },
  present: (rows, page, args, ctx) => {
    const groups = rows.filter((r) => r.group_key !== null);
    return {
      ...echoRange(args, ctx.timeZone),
      group_by: args.group_by,
      priority: args.priority ?? null,
      rows: groups.map(({ group_key, ticket_count }) => {
        const { group_by: by } = args;
        const bounds =
          by === 'priority' || by === 'team' ? {} : bucketBounds(String(group_key), by, args, ctx.timeZone);
        return { [keyName(by)]: group_key, ...bounds, ticket_count } as z.infer<typeof row>;
      }),
      row_count: groups.length,
      truncated: page.truncated,
    };
  },
});
