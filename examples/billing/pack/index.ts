/**
 * The billing pack, scaffolded by `querygate new-pack billing`: what the reader may see of the
 * database (migrations/), what each column is (pack/schema.ts), the metrics (pack/metrics.ts) and the
 * tools (queries/). Serve it by its compiled path: QUERYGATE_PACKS=sales,/abs/path/dist/<this folder>/pack/index.js.
 */
import { definePack } from '../../../src/pack.js';
import { migrations } from '../migrations/index.js';
import { templates } from '../queries/index.js';
import { NOT_PERSONAL_COLUMNS, PERSONAL_COLUMNS } from './schema.js';
import { seed } from './seed.js';

export const billingPack = definePack({
  name: 'billing',
  subject: 'billing',
  instructions:
    'The billing tools take start_date and end_date (YYYY-MM-DD, inclusive), or a period such as last_week. query_billing gives declared metrics by time and by their attributes (its metrics: querygate://catalog).',
  readerSchemas: ['billing_reporting'],
  personalColumns: PERSONAL_COLUMNS,
  notPersonalColumns: NOT_PERSONAL_COLUMNS,
  templates,
  migrations,
  seed,
  // The highest EXPLAIN cost a tool's widest call may have (doctor prints each). The widest is a stock
  // by day over 90 days: each subscription is measured at up to 91 instants, a nested loop of the two
  // (57,816 on the tests' 400 accounts, 278,338 on the demo's 2,000). The ceiling holds a business about
  // twice the demo's; past it, keep the stock in a daily snapshot rollup instead.
  maxPlanCost: 500_000,
});

export default billingPack;
