/**
 * Which tickets were opened most recently in a date range, where are they now, and (only when asked) who
 * opened them, desensitized?
 *
 * Example input: { "start_date": "2025-06-01", "end_date": "2025-06-30", "status": "open", "limit": 20,
 *                  "requester_fields": ["email"] }
 *
 * SQL:
 *   select "t"."id" as "ticket_ref", "t"."created_at", "t"."priority", "t"."status", "tm"."name" as "team",
 *          "a"."name_initials" as "agent_initials", "t"."first_response_at", "t"."resolved_at",
 *          null as "requester_initials", "r"."email_masked" as "requester_email",
 *          null as "requester_phone_last4", null as "requester_ref"
 *   from "support_reporting"."tickets" as "t"
 *   inner join "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id"
 *   left join "support_reporting"."agents" as "a" on "a"."id" = "t"."agent_id"
 *   inner join "support_reporting"."requesters" as "r" on "r"."id" = "t"."requester_id"  -- only when a field of it is asked
 *   where "t"."created_at" >= cast($1 as timestamptz) and "t"."created_at" < cast($2 as timestamptz)
 *     [and "t"."status" = $3] [and "t"."priority" = $4]
 *     [and "tm"."name" in ($t1, ..)] [and "t"."priority" in ($p1, ..)] [and "t"."status" in ($s1, ..)]
 *   order by "t"."created_at" desc, "t"."id" desc limit $n
 * A requester field not named in requester_fields is never read: its column is a NULL under its name
 * (the registry holds every statement to the declared columns), and present() leaves it out. Ids leave
 * as keyed-hash tokens, names as initials, emails as j***@domain, phones as the last 4 digits; the view
 * already holds them masked, and the server masks them again on the way out.
 */
import { z } from 'zod';
import { filterValues, label, rowLimit } from '../../../src/lib/arguments.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../../src/lib/date-range.js';
import { namedFields, unnamedColumn, withoutUnnamed } from '../../../src/lib/named-fields.js';
import { echoRange, rangeEcho, rowsEnvelope } from '../../../src/lib/result-shape.js';
import { defineTemplate } from '../pack/kit.js';
import { PRIORITIES, TICKET_STATUSES, priority, ticketStatus } from '../pack/priorities.js';
import { ticketsCreatedInRange } from '../pack/range-sql.js';

/** The requester fields a caller may name (src/lib/named-fields.ts), and the row key each comes under. */
const CHECKED_RANGE = { start_date: '2025-06-01', end_date: '2025-06-30' };

const REQUESTER_FIELDS = {
  initials: 'requester_initials',
  email: 'requester_email',
  phone_last4: 'requester_phone_last4',
  ref: 'requester_ref',
} as const;
type RequesterField = keyof typeof REQUESTER_FIELDS;
const FIELD_NAMES = Object.keys(REQUESTER_FIELDS) as [RequesterField, ...RequesterField[]];
/** Where each requester field is read, the requesters joined as `r`. */
const SOURCE_OF = {
  initials: 'r.name_initials',
  email: 'r.email_masked',
  phone_last4: 'r.phone_last4',
  ref: 't.requester_id',
} as const satisfies Record<RequesterField, string>;
const TICKET_COLUMNS = [
  't.id as ticket_ref',
  't.created_at',
  't.priority',
  't.status',
  'tm.name as team',
  'a.name_initials as agent_initials',
  't.first_response_at',
  't.resolved_at',
] as const;

const filters = z
  .strictObject(
    {
      team: filterValues(label, 20, 'Team names, as query_ticket_volume by team names them'),
      priority: filterValues(priority, PRIORITIES.length, 'Ticket priorities'),
      status: filterValues(ticketStatus, TICKET_STATUSES.length, 'Ticket statuses'),
    },
    { error: 'is not a known filter; the filters are team, priority and status' },
  )
  .optional()
  .describe(
    'Keeps the tickets matching every filter given, e.g. {"team": ["Billing"], "priority": ["urgent", "high"]}',
  );

const input = z
  .strictObject({
    ...dateRangeFields,
    status: ticketStatus.optional().describe('Only tickets in this status; omit for every status'),
    priority: priority.optional().describe('Only tickets of this priority; omit for every priority'),
    filters,
    requester_fields: namedFields(FIELD_NAMES, 'requester'),
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
  requester_ref: z.string().optional().describe('The same token for the same requester in every call and tool'),
  requester_initials: z.string().optional(),
  requester_email: z.string().optional().describe('First letter and domain only'),
  requester_phone_last4: z.string().optional(),
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
    'filters keep tickets of some teams, priorities or statuses, e.g. {"team": ["Billing"]}; status and priority keep one each.',
    'Rows carry no requester data unless requester_fields names it (initials, email, phone_last4, ref), masked; ref is a stable requester token that links the same requester across calls, so ask for it only to count or follow requesters. ticket_ref is an opaque token. limit is 1..100 (default 20).',
  ].join(' '),
  input,
  examples: [
    { start_date: '2025-06-01', end_date: '2025-06-30', status: 'open', limit: 20 },
    {
      start_date: '2025-06-24',
      end_date: '2025-06-30',
      priority: 'urgent',
      filters: { team: ['Billing'], priority: ['urgent', 'high'], status: ['open', 'pending'] },
      requester_fields: ['initials', 'email', 'phone_last4', 'ref'],
    },
  ],
  // Each condition and each requester field is a fragment of its own (see query_recent_orders): each
  // alone, then all at once, cover every statement.
  checkedArguments: [
    ...TICKET_STATUSES.map((status) => ({ ...CHECKED_RANGE, status })),
    ...PRIORITIES.map((p) => ({ ...CHECKED_RANGE, priority: p })),
    ...FIELD_NAMES.map((field) => ({ ...CHECKED_RANGE, requester_fields: [field] })),
    { ...CHECKED_RANGE, filters: { team: ['check-value'] } },
    { ...CHECKED_RANGE, filters: { priority: ['urgent'] } },
    { ...CHECKED_RANGE, filters: { status: ['open'] } },
    {
      ...CHECKED_RANGE,
      status: 'open',
      priority: 'urgent',
      filters: { team: ['check-value'], priority: ['urgent'], status: ['open'] },
      requester_fields: FIELD_NAMES,
      limit: 100,
    },
    { period: 'last_week' },
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
  query: (db, args, ctx) => {
    const asked = new Set(args.requester_fields);
    const { team, priority, status } = args.filters ?? {};
    const tickets = ticketsCreatedInRange(db, resolveRange(args), ctx.timeZone)
      .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id')
      .leftJoin('support_reporting.agents as a', 'a.id', 't.agent_id')
      .$if(args.status !== undefined, (qb) => qb.where('t.status', '=', args.status!))
      .$if(args.priority !== undefined, (qb) => qb.where('t.priority', '=', args.priority!))
      .$if(team !== undefined, (qb) => qb.where('tm.name', 'in', team!))
      .$if(priority !== undefined, (qb) => qb.where('t.priority', 'in', priority!))
      .$if(status !== undefined, (qb) => qb.where('t.status', 'in', status!))
      .orderBy('t.created_at', 'desc')
      .orderBy('t.id', 'desc');
    // Only the fields asked for are read; the others are a NULL under their name (src/lib/named-fields.ts).
    if (!FIELD_NAMES.some((field) => field !== 'ref' && asked.has(field))) {
      return tickets.select((eb) => [
        ...TICKET_COLUMNS,
        ...FIELD_NAMES.map((field) =>
          field === 'ref' && asked.has(field)
            ? eb.ref('t.requester_id').as('requester_ref')
            : unnamedColumn(eb, REQUESTER_FIELDS[field]),
        ),
      ]);
    }
    return tickets
      .innerJoin('support_reporting.requesters as r', 'r.id', 't.requester_id')
      .select((eb) => [
        ...TICKET_COLUMNS,
        ...FIELD_NAMES.map((field) =>
          asked.has(field)
            ? eb.ref(SOURCE_OF[field]).as(REQUESTER_FIELDS[field])
            : unnamedColumn(eb, REQUESTER_FIELDS[field]),
        ),
      ]);
  },
  present: (rows, page, args, ctx) => ({
    ...echoRange(args, ctx.timeZone),
    status: args.status ?? null,
    priority: args.priority ?? null,
    rows: withoutUnnamed<RequesterField, z.infer<typeof row>>(rows, REQUESTER_FIELDS, args.requester_fields),
    row_count: rows.length,
    truncated: page.truncated,
  }),
});
