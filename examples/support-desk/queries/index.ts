/** Every tool of the support desk, in one explicit list; the registry checks the whole list at start-up. */
import type { AnyTemplate } from '../../../src/registry/index.js';
import { queryRecentTickets } from './query-recent-tickets.js';
import { queryResolutionTimes } from './query-resolution-times.js';
import { queryTicketMetrics } from './query-ticket-metrics.js';
import { queryTicketVolume } from './query-ticket-volume.js';

export const templates: readonly AnyTemplate[] = [
  queryTicketVolume,
  queryResolutionTimes,
  queryRecentTickets,
  queryTicketMetrics,
];
