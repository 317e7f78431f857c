/**
 * The tables the reader role can see: views in the `reporting` schema over `sales`.
 * Raw personal data stays in `sales.customers`; `reporting.customers` already masks it at the source,
 * and the server masks every personal column again on the way out (see PERSONAL_COLUMNS).
 */
import type { ColumnType } from 'kysely';
import type { PersonalColumns } from '../src/pack.js';

/** node-postgres returns int8 and numeric as strings, so that no precision is lost. */
type Int8 = ColumnType<string, never, never>;
type Numeric = ColumnType<string, never, never>;
type ReadOnly<T> = ColumnType<T, never, never>;

export interface ReportingOrders {
  id: Int8;
  customer_id: Int8;
  status: ReadOnly<string>;
  ordered_at: ReadOnly<Date>;
  currency: ReadOnly<string>;
  total_amount: Numeric;
}

export interface ReportingOrderItems {
  order_id: Int8;
  product_id: Int8;
  quantity: ReadOnly<number>;
  unit_price: Numeric;
}

export interface ReportingProducts {
  id: Int8;
  sku: ReadOnly<string>;
  name: ReadOnly<string>;
  category: ReadOnly<string>;
  unit_price: Numeric;
}

export interface ReportingCustomers {
  id: Int8;
  region: ReadOnly<string>;
  name_initials: ReadOnly<string>;
  email_masked: ReadOnly<string>;
  phone_last4: ReadOnly<string>;
  created_at: ReadOnly<Date>;
}

/** Orders per UTC hour, status and currency, kept by triggers (migrations 0005, 0010). */
export interface ReportingOrderHours {
  hour: ReadOnly<Date>;
  status: ReadOnly<string>;
  currency: ReadOnly<string>;
  order_count: Int8;
  total_amount: Numeric;
}

/** Order items per UTC day, product, order status and currency, kept by triggers (migrations 0007, 0010). */
export interface ReportingProductDays {
  day: ReadOnly<Date>;
  product_id: Int8;
  status: ReadOnly<string>;
  currency: ReadOnly<string>;
  units: Int8;
  revenue: Numeric;
}

/** Orders per UTC day, customer region, status and currency, kept by triggers (migrations 0008, 0010). */
export interface ReportingRegionDays {
  day: ReadOnly<Date>;
  region: ReadOnly<string>;
  status: ReadOnly<string>;
  currency: ReadOnly<string>;
  order_count: Int8;
  total_amount: Numeric;
}

export interface ReportingDatabase {
  'reporting.orders': ReportingOrders;
  'reporting.order_items': ReportingOrderItems;
  'reporting.products': ReportingProducts;
  'reporting.customers': ReportingCustomers;
  'reporting.order_hours': ReportingOrderHours;
  'reporting.product_days': ReportingProductDays;
  'reporting.region_days': ReportingRegionDays;
}

/**
 * Every column that must never leave the server raw. A template that returns one of these
 * without the matching treatment is refused when the registry is built.
 */
export const PERSONAL_COLUMNS: PersonalColumns<ReportingDatabase> = {
  'reporting.orders.id': { kind: 'internal_id', entity: 'order' },
  'reporting.orders.customer_id': { kind: 'internal_id', entity: 'customer' },
  'reporting.order_items.order_id': { kind: 'internal_id', entity: 'order' },
  'reporting.order_items.product_id': { kind: 'internal_id', entity: 'product' },
  'reporting.products.id': { kind: 'internal_id', entity: 'product' },
  'reporting.product_days.product_id': { kind: 'internal_id', entity: 'product' },
  'reporting.customers.id': { kind: 'internal_id', entity: 'customer' },
  'reporting.customers.name_initials': { kind: 'name' },
  'reporting.customers.email_masked': { kind: 'email' },
  'reporting.customers.phone_last4': { kind: 'phone' },
};
