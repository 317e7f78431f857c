/**
 * The sales pack's words for querygate://metrics and querygate://schema: what each figure means, and
 * what each view the reader reads holds. Personal columns are not documented (the server refuses to
 * start if one is); test/protocol/resources.test.ts holds the views to the database: every column the reader may
 * read is documented, and nothing else.
 */
import type { MetricDefinition, ViewsDocumentation } from '../src/pack.js';
import type { ReportingDatabase } from './schema.js';

/** The figures a question can be about: explain_change takes one of them. */
export const METRIC_NAMES = ['revenue', 'order_count', 'avg_order_value', 'units'] as const;
export type MetricName = (typeof METRIC_NAMES)[number];

const NET = 'Net: cancelled and refunded orders are left out, whatever their amounts.';
const CURRENCIES =
  'Money is never added across currencies, nor converted: every row is one group in one currency, named in its `currency` field.';

export const METRICS: readonly (MetricDefinition & { name: MetricName | 'data_as_of' })[] = [
  {
    name: 'revenue',
    title: 'Net revenue',
    unit: "money, in the row's currency, rounded to 2 decimals",
    definition: [
      NET,
      'By day, week, month and region (`query_sales`), the sum of the orders’ `total_amount`; by category and by product (`query_top_products`), the sum of quantity × unit price of their items. The schema keeps an order’s total equal to the sum of its items, so both ways agree.',
      CURRENCIES,
    ].join(' '),
  },
  {
    name: 'order_count',
    title: 'Orders',
    unit: 'orders',
    definition: [
      '`query_order_count` counts every order placed in the range, whatever its status (pending, paid, shipped, cancelled, refunded), and `by_status` splits the count by status.',
      '`query_sales` counts net orders only (cancelled and refunded left out), one count per currency; by category, the orders holding at least one item of that category, so categories do not add up to the total.',
    ].join(' '),
  },
  {
    name: 'avg_order_value',
    title: 'Average order value',
    unit: "money, in the row's currency, rounded to 2 decimals",
    definition: [
      'Net revenue divided by net orders of the same group and currency (`revenue / order_count`), computed exactly before rounding.',
      CURRENCIES,
      'An average of two currencies is never given: compare each currency on its own.',
    ].join(' '),
  },
  {
    name: 'units',
    title: 'Units sold',
    unit: 'units (items of a product)',
    definition: `The sum of the quantities of a product's order items (\`query_top_products\`). ${NET}`,
  },
  {
    name: 'data_as_of',
    title: 'Freshness',
    unit: 'an instant, ISO 8601 in UTC',
    definition: [
      'Every result says how fresh it is in `data_as_of`: every order committed before that instant is in its figures.',
      'Each also says `data_through`, the time of the newest order: a range still running is cut there when the orders stop before now, on both sides of a comparison.',
      'The rollups behind counts, sales by period, region and category, and top products are kept by triggers in the same transaction as each change to the orders, so they are never older than `data_as_of`: there is no refresh to wait for.',
      'On a read replica, subtract the replica’s replication lag.',
    ].join(' '),
  },
];

export const VIEWS: ViewsDocumentation<ReportingDatabase> = {
  'reporting.orders': {
    description: 'One row per order, whatever its status.',
    columns: {
      status:
        'pending, paid, shipped, cancelled or refunded; cancelled and refunded orders are left out of net figures',
      ordered_at:
        'when the order was placed (a timestamp with time zone); days, weeks and months are cut in the reporting time zone',
      currency: 'ISO 4217 code of the currency of the order’s amounts',
      total_amount: 'the order’s amount in its currency: the sum of quantity × unit price of its items',
    },
  },
  'reporting.order_items': {
    description: 'One row per product of an order.',
    columns: {
      quantity: 'units of the product in the order',
      unit_price: 'the price of one unit when the order was placed, in the order’s currency',
    },
  },
  'reporting.products': {
    description: 'The catalogue of products.',
    columns: {
      sku: 'the product’s stock-keeping unit code',
      name: 'the product’s name',
      category: 'the product’s category, as sales by category group them',
    },
  },
  'reporting.customers': {
    description:
      'The customers, masked at the source: what the tools may return of a person is read here already masked.',
    columns: { region: 'the customer’s sales region, as sales by region group them' },
  },
  'reporting.order_hours': {
    description:
      'Orders and amounts per UTC hour, status and currency, kept by triggers in the same transaction as every change to the orders; an hour without orders has no row.',
    columns: {
      hour: 'the UTC hour, as the timestamp it starts at',
      status: 'the status of the orders counted',
      currency: 'the currency of the amounts',
      order_count: 'orders placed in the hour with that status and currency',
      total_amount: 'the sum of their total_amount',
    },
  },
  'reporting.product_days': {
    description:
      'Units and revenue per UTC day, product, order status and currency, kept exact by triggers like the hourly rollup.',
    columns: {
      day: 'the UTC day, as the timestamp it starts at',
      status: 'the status of the orders the items belong to',
      currency: 'the currency of the amounts',
      units: 'the sum of the quantities',
      revenue: 'the sum of quantity × unit price',
    },
  },
  'reporting.region_days': {
    description:
      'Orders and amounts per UTC day, customer region, order status and currency, kept exact by triggers on the orders and on the customers (a customer who moves takes their orders along).',
    columns: {
      day: 'the UTC day, as the timestamp it starts at',
      region: 'the customer’s sales region',
      status: 'the status of the orders counted',
      currency: 'the currency of the amounts',
      order_count: 'orders with that day, region, status and currency',
      total_amount: 'the sum of their total_amount',
    },
  },
  'reporting.region_hours': {
    description:
      'Orders and amounts per customer region, UTC hour, order status and currency, kept by the same triggers as region_days: what a caller scoped to regions reads its sales by day, week or month and its order counts from.',
    columns: {
      region: 'the customer’s sales region',
      hour: 'the UTC hour, as the timestamp it starts at',
      status: 'the status of the orders counted',
      currency: 'the currency of the amounts',
      order_count: 'orders with that region, hour, status and currency',
      total_amount: 'the sum of their total_amount',
    },
  },
  'reporting.category_days': {
    description:
      'Net sales per UTC day, product category, order status and currency, kept exact by triggers on the items, the orders and the products (a product that changes category takes its items along).',
    columns: {
      day: 'the UTC day, as the timestamp it starts at',
      category: 'the product category',
      status: 'the status of the orders counted',
      currency: 'the currency of the amounts',
      order_count:
        'orders with that day, status and currency holding at least one item of the category, each counted once however many it holds',
      revenue: 'the sum of quantity × unit price of those items of the category',
    },
  },
  'reporting.region_product_days': {
    description:
      'Units and revenue per customer region, UTC day, product, order status and currency: a rollup declared in pack/rollups.ts and kept exact by the triggers the engine makes (a customer who moves takes their items along); what a caller scoped to regions reads its top products from.',
    columns: {
      region: 'the customer’s sales region',
      day: 'the UTC day, as the timestamp it starts at',
      status: 'the status of the orders the items belong to',
      currency: 'the currency of the amounts',
      units: 'the sum of their quantities',
      revenue: 'the sum of quantity × unit price',
    },
  },
  'reporting.region_category_days': {
    description:
      'Net sales per customer region, UTC day, product category, order status and currency: a declared rollup (pack/rollups.ts) kept exact by the engine’s triggers; what a caller scoped to regions reads its sales by category from.',
    columns: {
      region: 'the customer’s sales region',
      day: 'the UTC day, as the timestamp it starts at',
      category: 'the product category',
      status: 'the status of the orders counted',
      currency: 'the currency of the amounts',
      order_count:
        'orders with that region, day, status and currency holding at least one item of the category, each counted once',
      revenue: 'the sum of quantity × unit price of those items of the category',
    },
  },
};
