/**
 * query_billing: any declared billing metric in one call, by time and by attribute ("events by kind
 * last month"), compiled by src/metrics/ from pack/metrics.ts.
 */
import { metricsTemplate } from '../../../src/metrics/tool.js';
import { billingMetrics } from '../pack/metrics.js';
import { PERSONAL_COLUMNS } from '../pack/schema.js';

export const billingQuery = metricsTemplate(billingMetrics, PERSONAL_COLUMNS);
