/**
 * How fast does each team answer and resolve tickets: the median and 90th percentile of the hours to a
 * first response and to a resolution, for the tickets opened in a date range?
 *
 * Example input: { "start_date": "2025-04-01", "end_date": "2025-06-29", "priority": "high" }
 *
 * SQL (one row per team, and one for the whole desk from the empty grouping set):
 *   select "tm"."name" as "team", count(*) as "ticket_count",
 *          count("t"."first_response_at") as "responded_count",
 *          round(cast(percentile_cont(cast($1 as double precision)) within group
 *                (order by extract(epoch from "t"."first_response_at" - "t"."created_at") / 3600) as numeric), 2)
 *            as "median_first_response_hours",                               -- $1 = 0.5
 *          ... percentile_cont(cast($2 as double precision)) ... as "p90_first_response_hours",  -- $2 = 0.9
 *          count("t"."resolved_at") as "resolved_count",
 *          ... the same over "t"."resolved_at" - "t"."created_at" ... as "median_resolution_hours", "p90_resolution_hours"
 *   from "support_reporting"."tickets" as "t"
 *   inner join "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id"
 * *   where "t"."created_at" >= cast($5 as timestamptz) and "t"."created_at" < cast($6 as timestamptz)
 *     [and "t"."priority" = $7]
 * *   group by grouping sets (("tm"."name"), ()) order by "tm"."name" nulls first limit $n
 * Tickets and hours count no one: every figure is of every ticket of the range and filter.
 * percentile_cont interpolates between the two nearest tickets and skips those still waiting (null).
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import { z } from 'zod';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../../src/lib/date-range.js';
import { count, echoRange, rangeEcho, rowsEnvelope } from '../../../src/lib/result-shape.js';
import type { ResultRow } from '../../../src/registry/index.js';
import { defineTemplate } from '../pack/kit.js';
import { PRIORITIES, priority } from '../pack/priorities.js';
import { ticketsCreatedInRange } from '../pack/range-sql.js';

const input = z
  .strictObject({
    ...dateRangeFields,
    priority: priority.optional().describe('Only tickets of this priority; omit for every priority'),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const hours = z.number().nonnegative().nullable();

const times = {
  ticket_count: count.describe('Tickets opened in the range'),
  responded_count: count.describe('Of them, tickets that have had a first response'),
  median_first_response_hours: hours.describe('Median hours from opening to the first response; null when none'),
  p90_first_response_hours: hours.describe('90th percentile of the hours to the first response; null when none'),
  resolved_count: count.describe('Of them, tickets that are resolved (solved or closed)'),
  median_resolution_hours: hours.describe('Median hours from opening to the resolution; null when none'),
  p90_resolution_hours: hours.describe('90th percentile of the hours to the resolution; null when none'),
};

const figures = z.object(times);
type Figures = z.infer<typeof figures>;
const row = z.object({ team: z.string(), ...times });

const output = z.object({
  ...rangeEcho,
  priority: z.enum(PRIORITIES).nullable().describe('The priority filter, or null when every priority was counted'),
  all_teams: figures.describe('The figures over every team together'),
  ...rowsEnvelope(row.describe('One team with tickets in the range; teams come by name')),
});

/** Hours between two timestamps, to the second. */
const hoursBetween = (from: Expression<unknown>, to: Expression<unknown>): RawBuilder<number> =>
  sql<number>`extract(epoch from ${to} - ${from}) / 3600`;

/** A continuous percentile of some hours, rounded to 2 decimals. */
const percentileHours = (fraction: number, value: RawBuilder<number>): RawBuilder<string> =>
  sql<string>`round(cast(percentile_cont(cast(${fraction} as double precision)) within group (order by ${value}) as numeric), 2)`;

const FIGURES = Object.keys(times) as (keyof Figures)[];

/** A row's figures; a range without tickets has counts of 0 and no times. */
const figuresOf = (row: ResultRow | undefined): Figures =>
  Object.fromEntries(FIGURES.map((f) => [f, row?.[f] ?? (f.endsWith('_count') ? 0 : null)])) as Figures;

export const queryResolutionTimes = defineTemplate({
  name: 'query_resolution_times',
  title: 'Response and resolution times by team',
  description: [
    'For the support tickets opened between start_date and end_date (both inclusive, at most 90 days), gives each team, and all teams together, the median and 90th percentile of the hours to a first response and to a resolution; optionally only one priority.',
    'Use it for service-level questions: "how fast did Billing answer in May?", "what is our p90 resolution time for urgent tickets this quarter?".',
    'Tickets still waiting for a response or a resolution are counted in ticket_count but left out of those times (responded_count and resolved_count say how many are in them). Hours are rounded to 2 decimals.',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-04-01', end_date: '2025-06-29' },
    { start_date: '2025-04-01', end_date: '2025-06-29', priority: 'high' },
  ],
  output,
  columns: {
    team: { type: 'text', source: 'support_reporting.teams.name', treatment: 'plain' },
    ticket_count: { type: 'integer', source: 'computed', treatment: 'plain' },
    responded_count: { type: 'integer', source: 'computed', treatment: 'plain' },
    median_first_response_hours: { type: 'number', source: 'computed', treatment: 'plain' },
    p90_first_response_hours: { type: 'number', source: 'computed', treatment: 'plain' },
    resolved_count: { type: 'integer', source: 'computed', treatment: 'plain' },
    median_resolution_hours: { type: 'number', source: 'computed', treatment: 'plain' },
    p90_resolution_hours: { type: 'number', source: 'computed', treatment: 'plain' },
  },
  query: (db, args, ctx) => {
    return (
      ticketsCreatedInRange(db, resolveRange(args), ctx.timeZone)
        .$if(args.priority !== undefined, (qb) => qb.where('t.priority', '=', args.priority!))
        .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id')
        .select((eb) => {
          const response = hoursBetween(eb.ref('t.created_at'), eb.ref('t.first_response_at'));
          const resolution = hoursBetween(eb.ref('t.created_at'), eb.ref('t.resolved_at'));
          return [
            'tm.name as team',
            eb.fn.countAll().as('ticket_count'),
            eb.fn.count('t.first_response_at').as('responded_count'),
            percentileHours(0.5, response).as('median_first_response_hours'),
            percentileHours(0.9, response).as('p90_first_response_hours'),
            eb.fn.count('t.resolved_at').as('resolved_count'),
            percentileHours(0.5, resolution).as('median_resolution_hours'),
            percentileHours(0.9, resolution).as('p90_resolution_hours'),
          ];
        })
        .groupBy(sql`grouping sets ((${sql.ref('tm.name')}), ())`)
        // The whole desk's row first, so that it is never the one the row cap cuts.
        .orderBy(sql`${sql.ref('tm.name')} nulls first`)
    );
  },
  present: (rows, page, args, ctx) => {
    const teams = rows.filter((r) => r.team !== null).map((r) => ({ team: r.team as string, ...figuresOf(r) }));
    return {
      ...echoRange(args, ctx.timeZone),
      priority: args.priority ?? null,
      all_teams: figuresOf(rows.find((r) => r.team === null)),
      rows: teams,
      row_count: teams.length,
      truncated: page.truncated,
    };
  },
});
