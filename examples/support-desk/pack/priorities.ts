/** The ticket priorities and statuses of the support desk. */
import { oneOf } from '../../../src/lib/arguments.js';

export const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const priority = oneOf(PRIORITIES, 'Ticket priority');

export const TICKET_STATUSES = ['open', 'pending', 'solved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];
export const ticketStatus = oneOf(TICKET_STATUSES, 'Ticket status');
