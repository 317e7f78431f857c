/**
 * Any declared support-desk metric in one call (src/metrics/, declarations in pack/metrics.ts):
 * "tickets by hour of day", "resolution rate by team", "distinct requesters of urgent tickets".
 *
 * Example input: { "metrics": ["tickets", "resolution_rate"], "group_by": ["team"], "period": "last_30_days" }
 *
 * SQL: see src/metrics/statement.ts, over "support_reporting"."tickets" as "t" inner join
 * "support_reporting"."teams" as "tm" on "tm"."id" = "t"."team_id". `requesters` is a protected count,
 * released by the cell-key rule (src/lib/protected-counts.ts); every other figure is exact.
 */
import { metricsTemplate } from '../../../src/metrics/tool.js';
import { supportMetrics } from '../pack/metrics.js';
import { PERSONAL_COLUMNS } from '../pack/schema.js';

export const queryTicketMetrics = metricsTemplate(supportMetrics, PERSONAL_COLUMNS);
