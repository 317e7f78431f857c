/**
 * Which tickets were opened most recently in a date range, by whom (desensitized), and where are they now?
 *
 * Example input: { "start_date": "2025-06-01", "end_date": "2025-06-30", "status": "open", "limit": 20 }
 *
 * SQL:
 *   select "t"."id" as "ticket_ref", "t"."created_at", "t"."priority", "t"."status", "tm"."name" as "team",
 *          "a"."name_initials" as "agent_initials", "t"."first_response_at", "t"."resolved_at",
 *          "t"."requester_id" as "requester_ref", "r"."name_initials" as "requester_initials",
 *          "r"."email_masked" as "requester_email", "r"."phone_last4" as "requester_phone_last4"
 *   from "support_reporting"."tickets" as "t"
 *   inner join "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id"
 *   inner join "support_reporting"."requesters" as "r" on "r"."id" = "t"."requester_id"
 *   left join "support_reporting"."agents" as "a" on "a"."id" = "t"."agent_id"
 *   where "t"."created_at" >= cast($1 as timestamptz) and "t"."created_at" < cast($2 as timestamptz)
 *     [and "t"."status" = $3] [and "t"."priority" = $4]
 *   order by "t"."created_at" desc, "t"."id" desc limit $n
 * Ids leave as keyed-hash tokens, names as initials, emails as j***@domain, phones as the last 4 digits;
 * the view already holds them masked, and the server masks them again on the way out.
 */
import { z } from 'zod';
import { rowLimit } from '../../../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../../src/lib/date-range.js';
import { echoRange, rangeEcho, rowsEnvelope } from '../../../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';
import { PRIORITIES, TICKET_STATUSES, priority, ticketStatus } from '../pack/priorities.js';
import { ticketsCreatedInRange } from '../pack/range-sql.js';

const input = z
  .strictObject({
    ...dateRangeFields,
    status: ticketStatus.optional().describe('Only tickets in this status; omit for every status'),
    priority: priority.optional().describe('Only tickets of this priority; omit for every priority'),
    limit: rowLimit(20),
  })
  .superRefine(checkDateRange, DATE_RANGE_ALWAYS);

const row = z.object({
  ticket_ref: z.string().describe('Opaque, stable reference of the ticket (not its internal id)'),
  created_at: z.string().describe('When the ticket was opened, ISO 8601 in UTC'),
  priority: z.enum(PRIORITIES),
  status: z.enum(TICKET_STATUSES),
  team: z.string(),
  agent_initials: z.string().nullable().describe("The assigned agent's initials; null while nobody has taken it"),
  first_response_at: z.string().nullable().describe('When an agent first answered, ISO 8601 in UTC; null if not yet'),
  resolved_at: z.string().nullable().describe('When the ticket was solved, ISO 8601 in UTC; null if not yet'),
  requester_ref: z.string().describe('Opaque, stable reference of the requester'),
  requester_initials: z.string(),
  requester_email: z.string().describe('Masked: first letter and domain only'),
  requester_phone_last4: z.string().describe('Last four digits of the phone number'),
});

const output = z.object({
  ...rangeEcho,
  status: z.enum(TICKET_STATUSES).nullable(),
  priority: z.enum(PRIORITIES).nullable(),
  ...rowsEnvelope(row),
});

export const queryRecentTickets = defineTemplate({
  name: 'query_recent_tickets',
  title: 'Most recent tickets',
  description: [
    'Lists the support tickets opened most recently between start_date and end_date (both inclusive, at most 90 days), newest first, optionally only one status (open, pending, solved, closed) or priority.',
    'Use it to look at individual tickets: "show the last 20 open urgent tickets", "latest tickets for Billing this week".',
    'Requester data is desensitized: initials, a masked email and the last 4 phone digits; ticket and requester references are opaque tokens, stable across calls. limit is 1..100 (default 20).',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-06-01', end_date: '2025-06-30', status: 'open', limit: 20 },
    { start_date: '2025-06-24', end_date: '2025-06-30', priority: 'urgent' },
  ],
  output,
  columns: {
    ticket_ref: { type: 'text', source: 'support_reporting.tickets.id', treatment: 'token' },
    created_at: { type: 'timestamp', source: 'support_reporting.tickets.created_at', treatment: 'plain' },
    priority: { type: 'text', source: 'support_reporting.tickets.priority', treatment: 'plain' },
    status: { type: 'text', source: 'support_reporting.tickets.status', treatment: 'plain' },
    team: { type: 'text', source: 'support_reporting.teams.name', treatment: 'plain' },
    agent_initials: { type: 'text', source: 'support_reporting.agents.name_initials', treatment: 'initials' },
    first_response_at: { type: 'timestamp', source: 'support_reporting.tickets.first_response_at', treatment: 'plain' },
    resolved_at: { type: 'timestamp', source: 'support_reporting.tickets.resolved_at', treatment: 'plain' },
    requester_ref: { type: 'text', source: 'support_reporting.tickets.requester_id', treatment: 'token' },
    requester_initials: { type: 'text', source: 'support_reporting.requesters.name_initials', treatment: 'initials' },
    requester_email: { type: 'text', source: 'support_reporting.requesters.email_masked', treatment: 'mask_email' },
    requester_phone_last4: {
      type: 'text',
      source: 'support_reporting.requesters.phone_last4',
      treatment: 'mask_phone',
    },
  },
  rowLimit: (args) => args.limit,
  query: (db, args, ctx) =>
    ticketsCreatedInRange(db, resolveRange(args), ctx.timeZone)
      .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id')
      .innerJoin('support_reporting.requesters as r', 'r.id', 't.requester_id')
      .leftJoin('support_reporting.agents as a', 'a.id', 't.agent_id')
      .$if(args.status !== undefined, (qb) => qb.where('t.status', '=', args.status!))
      .$if(args.priority !== undefined, (qb) => qb.where('t.priority', '=', args.priority!))
      .select([
        't.id as ticket_ref',
        't.created_at',
        't.priority',
        't.status',
        'tm.name as team',
        'a.name_initials as agent_initials',
        't.first_response_at',
        't.resolved_at',
        't.requester_id as requester_ref',
        'r.name_initials as requester_initials',
        'r.email_masked as requester_email',
        'r.phone_last4 as requester_phone_last4',
      ])
      .orderBy('t.created_at', 'desc')
      .orderBy('t.id', 'desc'),
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    status: args.status ?? null,
    priority: args.priority ?? null,
    rows: rows as z.infer<typeof row>[],
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
