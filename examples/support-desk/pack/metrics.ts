/**
 * The support desk's metrics layer, as declarations the engine compiles into one tool,
 * `query_ticket_metrics` (src/metrics/): what each figure means, what it can be grouped and filtered by,
 * and where it is read from. One source, the tickets with their team's name; the desk keeps no
 * rollup. The tool is named for the desk so that it can be served beside the sales pack's
 * `query_metrics`.
 *
 * The desk protects its requesters: `requesters` is a protected count (src/lib/protected-counts.ts),
 * released by the cell-key rule, never 1 to 4 and with a noise of at most ±2 that the same requesters
 * always get, so that no subtraction of figures (a total minus its rows, a week minus its days, all
 * minus a filtered call) recovers how many people a small team or day stands for. Tickets, hours and
 * rates count no one and stay exact.
 */
import { sql } from 'kysely';
import type { MetricsModel } from '../../../src/metrics/declarations.js';
import { PRIORITIES, TICKET_STATUSES } from './priorities.js';
import { DATA_THROUGH } from './schema.js';

export const supportMetrics: MetricsModel = {
  toolName: 'query_ticket_metrics',
  subject: 'the support desk (tickets by the time they were opened)',
  dataThrough: DATA_THROUGH,
  questions: [
    {
      question: 'How many tickets were opened last week, and how many are resolved?',
      arguments: { metrics: ['tickets', 'resolved_tickets'], period: 'last_week' },
    },
    {
      question: 'Which team resolves the largest share of its tickets?',
      arguments: { metrics: ['resolution_rate', 'tickets'], group_by: ['team'], period: 'last_30_days' },
    },
    {
      question: 'How many distinct requesters opened urgent tickets last month?',
      arguments: { metrics: ['requesters'], filters: { priority: ['urgent'] }, period: 'last_month' },
    },
    {
      question: 'When are tickets opened: by hour of day',
      arguments: { metrics: ['tickets'], group_by: ['hour_of_day'], period: 'last_30_days' },
    },
    {
      question: 'Average hours to a first response by priority this month',
      arguments: {
        metrics: ['avg_first_response_hours', 'responded_tickets'],
        group_by: ['priority'],
        period: 'this_month',
      },
    },
  ],
  metrics: [
    { name: 'tickets', unit: 'count', description: 'Tickets opened, every status.' },
    {
      name: 'requesters',
      unit: 'count',
      people: true,
      protected: true,
      description:
        'Distinct requesters who opened a ticket; protected: each figure is 0 or at least 5 and may differ from the true count by up to 2 (the same requesters always give the same figure), so never subtract one from another.',
    },
    {
      name: 'resolved_tickets',
      unit: 'count',
      description: 'Of the tickets opened, those resolved (solved or closed).',
    },
    {
      name: 'resolution_rate',
      unit: 'ratio',
      ratio: ['resolved_tickets', 'tickets'],
      description: 'resolved_tickets / tickets, 0..1.',
    },
    { name: 'responded_tickets', unit: 'count', description: 'Of the tickets opened, those with a first response.' },
    {
      name: 'first_response_hours',
      unit: 'number',
      description: 'Hours from opening to the first response, summed over the responded tickets (unrounded).',
    },
    {
      name: 'avg_first_response_hours',
      unit: 'ratio',
      ratio: ['first_response_hours', 'responded_tickets'],
      description:
        'Mean hours to a first response of the responded tickets: first_response_hours / responded_tickets (for medians, query_resolution_times).',
    },
  ],
  attributes: [
    {
      name: 'team',
      valuesFrom: { column: 'support_reporting.teams.name', atMost: 100 },
      description: "The name of the ticket's team.",
    },
    { name: 'priority', values: PRIORITIES, description: 'The ticket priority.' },
    { name: 'status', values: TICKET_STATUSES, description: 'The ticket status now.' },
  ],
  sources: [
    {
      name: 'tickets',
      rows: (db) =>
        db
          .selectFrom('support_reporting.tickets as t')
          .innerJoin('support_reporting.teams as tm', 'tm.id', 't.team_id'),
      reads: ['support_reporting.tickets', 'support_reporting.teams'],
      time: 't.created_at',
      attributes: { team: 'tm.name', priority: 't.priority', status: 't.status' },
      people: 't.requester_id',
      measures: {
        tickets: { aggregate: 'count' },
        requesters: { aggregate: 'count_distinct', of: 't.requester_id' },
        resolved_tickets: { aggregate: 'count', of: 't.resolved_at' },
        responded_tickets: { aggregate: 'count', of: 't.first_response_at' },
        first_response_hours: {
          aggregate: 'sum',
          of: (eb) => sql`extract(epoch from ${eb.ref('t.first_response_at')} - ${eb.ref('t.created_at')}) / 3600`,
        },
      },
    },
  ],
};
