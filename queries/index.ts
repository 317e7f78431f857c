/** Every tool of the sales pack, in one explicit list; the registry checks the whole list at start-up. */
import type { AnyTemplate } from '../src/registry/index.js';
import { queryMetrics } from './query-metrics.js';
import { queryOrderCount } from './query-order-count.js';
import { queryRecentOrders } from './query-recent-orders.js';
import { querySales } from './query-sales.js';
import { queryTopProducts } from './query-top-products.js';

export const templates: readonly AnyTemplate[] = [
  queryOrderCount,
  querySales,
  queryTopProducts,
  queryRecentOrders,
  queryMetrics,
];
