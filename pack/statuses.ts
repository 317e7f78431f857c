/** The order statuses of the sales pack, and which of them leave revenue out. */
import { oneOf } from '../src/lib/arguments.js';

export const ORDER_STATUSES = ['pending', 'paid', 'shipped', 'cancelled', 'refunded'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
/** Statuses left out of revenue: the money did not stay with the company. */
export const NON_REVENUE_STATUSES: readonly OrderStatus[] = ['cancelled', 'refunded'];

export const orderStatus = oneOf(ORDER_STATUSES);
