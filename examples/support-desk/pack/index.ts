/**
 * The support desk, querygate's second example pack: tickets, the teams and agents who answer them and
 * the requesters who open them, read through masked views in `support_reporting`. Serve it by its
 * compiled path: QUERYGATE_PACKS=/abs/path/dist/examples/support-desk/pack/index.js (or "sales,<path>").
 */
import type pg from 'pg';
import { definePack } from '../../../src/pack.js';
import { migrations } from '../migrations/index.js';
import { templates } from '../queries/index.js';
import { NOT_PERSONAL_COLUMNS, PERSONAL_COLUMNS } from './schema.js';
import { DEFAULT_SEED_TICKETS, seedSupportDesk } from './seed.js';

export const supportDeskPack = definePack({
  name: 'support_desk',
  subject: 'the support desk',
  instructions: [
    'The support desk tools take start_date and end_date (YYYY-MM-DD, inclusive), or a period such as last_week, and look at the tickets opened in that range.',
    'Response and resolution times are in hours, as medians and 90th percentiles; tickets still waiting are counted but left out of the times. Requester data comes back desensitized.',
    'query_ticket_metrics gives declared counts, rates and distinct requesters by time, team, priority or status in one call (its metrics: querygate://catalog).',
  ].join(' '),
  readerSchemas: ['support_reporting'],
  personalColumns: PERSONAL_COLUMNS,
  notPersonalColumns: NOT_PERSONAL_COLUMNS,
  templates,
  migrations,
  seed: {
    unit: 'tickets',
    defaultCount: DEFAULT_SEED_TICKETS,
    testCount: 3000,
    isEmpty: async (admin: pg.Client) =>
      (await admin.query<{ empty: boolean }>('select not exists (select 1 from support.tickets) as empty')).rows[0]!
        .empty,
    run: async (adminUrl, request, logger) => {
      const summary = await seedSupportDesk(
        adminUrl,
        { tickets: request.count ?? DEFAULT_SEED_TICKETS, until: request.until, replace: request.replace },
        logger,
      );
      return { ...summary };
    },
  },
  // Every template reads one range of created_at through the covering index, so a plan's cost grows with
  // the tickets of 90 days: about 680 for recent tickets (every status and priority) on the 20,000-ticket
  // demo desk, whose last 90 days hold some 3,800 tickets (EXPLAIN in UTC, Havana and Kolkata alike).
  // Ticket volume and resolution times read the range three times (their rows, and the small-group
  // cells they leave out and count): about 2,270 and 2,000. The ceiling leaves room for a desk four
  // times as busy, not for a plan that scans the whole table.
  maxPlanCost: 10_000,
});

export default supportDeskPack;
