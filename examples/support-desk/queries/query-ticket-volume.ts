/**
 * How many tickets were opened in a date range, per day, ISO week or month, per priority or per team?
 *
 * Example input: { "start_date": "2025-04-01", "end_date": "2025-06-29", "group_by": "week", "priority": "urgent" }
 *
 * SQL (group_by week; day and month differ only in the labels): each day's first instant in the
 * reporting zone and its period's label are bound as arrays, so tickets are cut into days exactly where
 * the range is:
 *   select (cast($1 as text[]))[width_bucket("t"."created_at", cast($2 as timestamptz[]))] as "group_key",
 *          count(*) as "ticket_count"
 *   from "support_reporting"."tickets" as "t"
 *   where "t"."created_at" >= cast($3 as timestamptz) and "t"."created_at" < cast($4 as timestamptz)
 *     [and "t"."priority" = $5]
 *   group by "group_key" order by "group_key" limit $n
 * By priority the key is "t"."priority"; by team it is "tm"."name", from an inner join of
 * "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id"; both list the busiest first.
 * Tickets are things counted, not people: every count is exact (the desk protects its requesters in
 * query_ticket_metrics' `requesters`, src/lib/protected-counts.ts).
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
    'Periods are labelled by their first day, which may fall before start_date; only tickets opened inside the range are counted, and a period the range covers only in part (cut by start_date, end_date, or the current minute while the range is running) says partial: true with the first_day and last_day it counts. Periods without tickets are not listed. Priorities and teams come busiest first. Every count is exact.',
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
  },
  query: (db, args, ctx) => {
    const range = resolveRange(args);
    const tickets = ticketsCreatedInRange(db, range, ctx.timeZone).$if(args.priority !== undefined, (qb) =>
      qb.where('t.priority', '=', args.priority!),
    );
    switch (args.group_by) {
      case 'priority':
        return tickets
          .select((eb) => ['t.priority as group_key', eb.fn.countAll().as('ticket_count')])
          .groupBy('t.priority')
          .orderBy('ticket_count', 'desc')
          .orderBy('group_key');
      case 'team':
        return tickets
          .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id')
          .select((eb) => ['tm.name as group_key', eb.fn.countAll().as('ticket_count')])
          .groupBy('tm.name')
          .orderBy('ticket_count', 'desc')
          .orderBy('group_key');
      default: {
        const period: Period = args.group_by;
        return tickets
          .select((eb) => [
            localPeriodOf(eb.ref('t.created_at'), range, ctx.timeZone, period).as('group_key'),
            eb.fn.countAll().as('ticket_count'),
          ])
          .groupBy(sql.ref('group_key'))
          .orderBy(sql.ref('group_key'));
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
