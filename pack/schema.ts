/**
 * The tables the reader role can see: views in the `reporting` schema over `sales`, and the rollups
 * the triggers keep (order_hours per UTC hour, product_days, region_days and category_days per UTC
 * day; migrations 0005 to 0010 and 0013). Their types are generated from the live schema (`npm run codegen -- .`, see
 * schema.generated.ts), so a template that names a column the database lacks fails the type check.
 * Raw personal data stays in `sales.customers`; `reporting.customers` already masks it at the source,
 * and the server masks every personal column again on the way out (see PERSONAL_COLUMNS).
 */
import type { DataScopeDimension, PersonalColumns } from '../src/pack.js';
import type { DB } from './schema.generated.js';

export type ReportingDatabase = DB;

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

/**
 * What a caller's view of sales may be narrowed to. Every template applies `region` (the rollups
 * without a region give way to region_days or the rows for a scoped call), so a caller scoped to
 * regions sees every tool, with figures of those regions alone.
 */
export const DATA_SCOPE = [
  {
    name: 'region',
    description:
      "The customer's sales region (reporting.customers.region, e.g. Europe): a caller scoped to regions sees only the orders of customers in them, in every figure.",
  },
] as const satisfies readonly DataScopeDimension[];
