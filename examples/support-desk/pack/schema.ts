/**
 * The relations the reader role can see: the views of `support_reporting` over `support`. Their types
 * are generated from the live schema (`npm run codegen -- support-desk`, see schema.generated.ts), so
 * a template that names a column the views lack fails the type check. Raw personal data stays in
 * `support`; the views already mask it at the source, and the server masks every personal column
 * again on the way out, as PERSONAL_COLUMNS declares.
 */
import type { HighWaterMark, NotPersonalColumns, PersonalColumns } from '../../../src/pack.js';
import type { DB } from './schema.generated.js';

export type SupportDatabase = DB;

/**
 * Every column that must never leave the server raw. A template that returns one of these without
 * the matching treatment is refused when the registry is built.
 */
export const PERSONAL_COLUMNS: PersonalColumns<SupportDatabase> = {
  'support_reporting.tickets.id': { kind: 'internal_id', entity: 'ticket' },
  'support_reporting.tickets.requester_id': { kind: 'internal_id', entity: 'requester' },
  'support_reporting.tickets.agent_id': { kind: 'internal_id', entity: 'agent' },
  'support_reporting.tickets.team_id': { kind: 'internal_id', entity: 'team' },
  'support_reporting.teams.id': { kind: 'internal_id', entity: 'team' },
  'support_reporting.agents.id': { kind: 'internal_id', entity: 'agent' },
  'support_reporting.agents.team_id': { kind: 'internal_id', entity: 'team' },
  'support_reporting.agents.name_initials': { kind: 'name' },
  'support_reporting.requesters.id': { kind: 'internal_id', entity: 'requester' },
  'support_reporting.requesters.name_initials': { kind: 'name' },
  'support_reporting.requesters.email_masked': { kind: 'email' },
  'support_reporting.requesters.phone_last4': { kind: 'phone' },
};

/**
 * Every other column the reader reads: nothing personal. With PERSONAL_COLUMNS it names every column
 * of support_reporting; a column added to a view and left out of both stops the server at start-up.
 */
export const NOT_PERSONAL_COLUMNS: NotPersonalColumns<SupportDatabase> = [
  'support_reporting.teams.name',
  'support_reporting.tickets.created_at',
  'support_reporting.tickets.first_response_at',
  'support_reporting.tickets.priority',
  'support_reporting.tickets.resolved_at',
  'support_reporting.tickets.status',
];

/** How far the data reach: the newest ticket's time (the end of the (created_at, id) index). */
export const DATA_THROUGH: HighWaterMark<SupportDatabase> = (db) =>
  db.selectFrom('support_reporting.tickets').select((eb) => eb.fn.max('created_at').as('data_through'));
