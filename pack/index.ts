/**
 * The sales pack, querygate's default: a shop's orders, order items, products and customers, read
 * through masked views in the `reporting` schema and the rollups the database keeps beside them.
 */
import type pg from 'pg';
import { migrations } from '../migrations/index.js';
import { templates } from '../queries/index.js';
import { reports } from '../reports/index.js';
import { weeklyReportResource } from '../reports/resources.js';
import { metricsPrompt } from '../src/metrics/prompt.js';
import { definePack } from '../src/pack.js';
import { METRICS, VIEWS } from './docs.js';
import { salesMetrics } from './metrics.js';
import { prompts } from './prompts.js';
import { SALES_ROLLUPS } from './rollups.js';
import { DATA_SCOPE, NOT_PERSONAL_COLUMNS, PERSONAL_COLUMNS } from './schema.js';
import { DEFAULT_SEED_ORDERS, seedDatabase } from './seed.js';

export const salesPack = definePack({
  name: 'sales',
  subject: 'sales',
  instructions: [
    'The sales tools take start_date and end_date (YYYY-MM-DD, inclusive), or a period such as last_week or month_to_date, which the server resolves in the reporting time zone.',
    'Revenue figures are net: cancelled and refunded orders are left out. Money is never added across currencies. Customer data comes back desensitized.',
    'The rollups behind some figures are kept by the database in the same transactions as the orders, so they are never older than data_as_of.',
  ].join(' '),
  readerSchemas: ['reporting'],
  personalColumns: PERSONAL_COLUMNS,
  notPersonalColumns: NOT_PERSONAL_COLUMNS,
  dataScope: DATA_SCOPE,
  templates,
  reports,
  migrations,
  // The name Kysely gives by default: databases migrated before packs existed keep their history.
  migrationTable: 'kysely_migration',
  rollups: SALES_ROLLUPS,
  seed: {
    unit: 'orders',
    defaultCount: DEFAULT_SEED_ORDERS,
    testCount: 4000,
    isEmpty: async (admin: pg.Client) =>
      (await admin.query<{ empty: boolean }>('select not exists (select 1 from sales.orders) as empty')).rows[0]!.empty,
    run: async (adminUrl, request, logger) => {
      const summary = await seedDatabase(
        adminUrl,
        { orders: request.count ?? DEFAULT_SEED_ORDERS, until: request.until, replace: request.replace },
        logger,
      );
      return { ...summary };
    },
  },
  // The costliest sales template over 90 days plans at about 4,150 on the 50,000-order demo data
  // (`querygate doctor`); the ceiling leaves room for a larger shop, not for a template that scans
  // every order of the range where a rollup would do.
  maxPlanCost: 250_000,
  metrics: METRICS,
  views: VIEWS,
  prompts: [...prompts, metricsPrompt(salesMetrics)],
  resourceTemplates: [weeklyReportResource],
});

export default salesPack;
