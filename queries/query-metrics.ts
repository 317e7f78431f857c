/**
 * Any declared sales metric in one call (src/metrics/, declarations in pack/metrics.ts): "orders by
 * weekday", "revenue of Europe by category", "refund rate this month against a year ago".
 *
 * Example input: { "metrics": ["revenue"], "group_by": ["category"], "filters": { "region": ["Europe"] }, "period": "last_30_days" }
 *
 * SQL: see src/metrics/statement.ts; the hourly rollup serves what it carries, the orders and their
 * items the rest.
 */
import { salesMetrics } from '../pack/metrics.js';
import { DATA_SCOPE, PERSONAL_COLUMNS } from '../pack/schema.js';
import { metricsTemplate } from '../src/metrics/tool.js';

export const queryMetrics = metricsTemplate(salesMetrics, PERSONAL_COLUMNS, DATA_SCOPE);
