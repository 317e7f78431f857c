/**
 * The sales pack's metrics layer, as declarations the engine compiles into `query_metrics`
 * (src/metrics/): what each figure means, what it can be grouped and filtered by, and where it is read
 * from. Sources are listed smallest first: the hourly rollup (no region, so never for a scoped caller
 * nor a region), the hourly rollup by region (for them), the daily product rollups (revenue and units
 * by product and category, for calls of whole UTC days), then the orders alone (what is measured per
 * order: amounts, percentiles, customers), the orders with their customer's region, then the order
 * items with their product. The schema keeps an order's total equal to the sum of its items, so revenue agrees
 * whichever source serves it.
 */
import type { MetricSource, MetricsModel, RowCondition } from '../src/metrics/declarations.js';
import { DATA_THROUGH } from './schema.js';
import { ORDER_STATUSES, NON_REVENUE_STATUSES } from './statuses.js';

const net =
  (status: string): RowCondition =>
  (eb) =>
    eb(eb.ref(status), 'not in', NON_REVENUE_STATUSES);
/** The percentiles of an order's amount the pack measures: name, fraction, and what it is. */
const PERCENTILES = [
  ['median_order_value', 0.5, 'median'],
  ['p90_order_value', 0.9, '90th-percentile'],
] as const;
const refunded =
  (status: string): RowCondition =>
  (eb) =>
    eb(eb.ref(status), '=', 'refunded');

/** What the rows of orders (aliased `o`, one row per order) measure, alone or with their customer. */
const ORDER_ROWS = {
  time: 'o.ordered_at',
  currency: 'o.currency',
  people: 'o.customer_id',
  amounts: { order_value: 'o.total_amount' },
  entities: { customer: 'o.customer_id' },
  measures: {
    orders: { aggregate: 'count' },
    net_orders: { aggregate: 'count', rows: net('o.status') },
    revenue: { aggregate: 'sum', of: 'o.total_amount', rows: net('o.status') },
    gross_amount: { aggregate: 'sum', of: 'o.total_amount' },
    refunded_orders: { aggregate: 'count', rows: refunded('o.status') },
    customers: { aggregate: 'count_distinct', of: 'o.customer_id' },
    // One row per order: its amount's percentiles.
    ...Object.fromEntries(
      PERCENTILES.map(([name, fraction]) => [
        name,
        { aggregate: 'percentile' as const, of: 'o.total_amount', fraction, rows: net('o.status') },
      ]),
    ),
  },
} satisfies Omit<MetricSource, 'name' | 'rows' | 'reads' | 'attributes'>;

export const salesMetrics: MetricsModel = {
  subject: 'sales',
  dataThrough: DATA_THROUGH,
  questions: [
    {
      question: 'When do we get the most orders?',
      arguments: { metrics: ['orders'], group_by: ['hour_of_day'], period: 'last_30_days' },
    },
    {
      question: 'How many orders last week, and how many were refunded?',
      arguments: { metrics: ['orders', 'refunded_orders'], period: 'last_week' },
    },
    {
      question: 'Which weekday sells most?',
      arguments: { metrics: ['revenue'], group_by: ['weekday'], period: 'last_90_days' },
    },
    {
      question: 'How many distinct customers ordered last month?',
      arguments: { metrics: ['customers'], period: 'last_month' },
    },
    {
      question: 'Revenue of Europe by category this month',
      arguments: {
        metrics: ['revenue', 'net_orders'],
        group_by: ['category'],
        filters: { region: ['Europe'] },
        period: 'this_month',
      },
    },
    {
      question: 'Top 10 products of the Books category last month',
      arguments: {
        metrics: ['revenue', 'units'],
        group_by: ['product'],
        filters: { category: ['Books'] },
        order_by: 'revenue',
        limit: 10,
        period: 'last_month',
      },
    },
    {
      question: 'Revenue this month so far against the same days a year ago',
      arguments: { metrics: ['revenue', 'orders'], period: 'month_to_date', compare_to: 'previous_year' },
    },
    {
      question: 'Refund rate and average order value by region last quarter (90 days)',
      arguments: { metrics: ['refund_rate', 'avg_order_value'], group_by: ['region'], period: 'last_90_days' },
    },
    {
      question: 'Daily revenue last week, with the week total',
      arguments: { metrics: ['revenue'], group_by: ['day'], period: 'last_week' },
    },
    {
      question: 'Median and 90th-percentile order value last month',
      arguments: { metrics: ['median_order_value', 'p90_order_value'], period: 'last_month' },
    },
    {
      question: 'Orders of 250 or more last week',
      arguments: { metrics: ['orders', 'gross_amount'], min_order_value: 250, period: 'last_week' },
    },
    {
      question: 'Top 10 customers by revenue last month',
      arguments: {
        metrics: ['revenue', 'net_orders'],
        group_by: ['customer'],
        order_by: 'revenue',
        limit: 10,
        period: 'last_month',
      },
    },
    {
      question: 'New and returning customers last week',
      arguments: { metrics: ['customers', 'revenue'], group_by: ['customer_since'], period: 'last_week' },
    },
    {
      question: 'Value of refunded orders last month',
      arguments: { metrics: ['gross_amount', 'orders'], filters: { status: ['refunded'] }, period: 'last_month' },
    },
    {
      question: 'Revenue by region this month against last month, row by row',
      arguments: { metrics: ['revenue'], group_by: ['region'], period: 'this_month', compare_to: 'previous_period' },
    },
    {
      question: 'Orders by region and status last week',
      arguments: { metrics: ['orders'], group_by: ['region', 'status'], period: 'last_week' },
    },
  ],
  metrics: [
    { name: 'orders', unit: 'count', description: 'Orders placed, every status.' },
    { name: 'net_orders', unit: 'count', description: 'Orders not cancelled nor refunded.' },
    {
      name: 'revenue',
      unit: 'money',
      description:
        'Net revenue: the amounts of orders not cancelled nor refunded (by category or product, their items: quantity x unit price).',
    },
    { name: 'avg_order_value', unit: 'money', ratio: ['revenue', 'net_orders'], description: 'revenue / net_orders.' },
    {
      name: 'gross_amount',
      unit: 'money',
      description:
        'The amounts of orders in every status, cancelled and refunded included; by status, the value of refunded orders.',
    },
    ...PERCENTILES.map(([name, , what]) => ({
      name,
      unit: 'money' as const,
      description: `The ${what} amount of orders not cancelled nor refunded (interpolated), per currency; not by category or product.`,
    })),
    {
      name: 'customers',
      unit: 'count',
      // Not protected: query_recent_orders already lists single orders with their region and status, so
      // perturbing aggregate customer counts would protect no one and cost the headline figure.
      people: true,
      description: 'Distinct customers who placed an order, every status: exact.',
    },
    {
      name: 'orders_per_customer',
      unit: 'ratio',
      ratio: ['orders', 'customers'],
      description: 'orders / customers.',
    },
    { name: 'refunded_orders', unit: 'count', description: 'Orders refunded.' },
    {
      name: 'refund_rate',
      unit: 'ratio',
      ratio: ['refunded_orders', 'orders'],
      description: 'refunded_orders / orders, 0..1.',
    },
    { name: 'units', unit: 'count', description: 'Units sold in orders not cancelled nor refunded.' },
  ],
  attributes: [
    { name: 'region', scope: 'region', description: "The customer's sales region." },
    {
      name: 'category',
      valuesFrom: { column: 'reporting.products.category', atMost: 200 },
      description: 'The product category (of the order items).',
    },
    {
      name: 'product',
      identifier: { pattern: '^[A-Z0-9][A-Z0-9-]{0,39}$', example: 'SKU-00001' },
      labelled: 'reporting.products.name',
      // More products sell in 90 days than one answer holds: completions read them category by category.
      completedWithin: 'category',
      description: "The product's SKU, with its name beside it.",
    },
    { name: 'status', values: ORDER_STATUSES, description: 'The order status.' },
  ],
  amounts: [
    {
      name: 'order_value',
      description: "An order's amount, every status, in its own currency.",
      bands: [25, 50, 100, 250, 500],
    },
  ],
  entities: [
    {
      name: 'customer',
      description: 'The customer who placed the order, as an opaque token (the customer_ref of query_recent_orders).',
      id: 'reporting.orders.customer_id',
      history: { from: 'reporting.orders', id: 'customer_id', time: 'ordered_at', counts: 'orders' },
    },
  ],
  sources: [
    {
      name: 'order_hours rollup',
      rollup: true,
      rows: (db) => db.selectFrom('reporting.order_hours as h'),
      reads: ['reporting.order_hours'],
      time: 'h.hour',
      timeGrain: 'hour',
      currency: 'h.currency',
      attributes: { status: 'h.status' },
      measures: {
        orders: { aggregate: 'sum', of: 'h.order_count' },
        net_orders: { aggregate: 'sum', of: 'h.order_count', rows: net('h.status') },
        revenue: { aggregate: 'sum', of: 'h.total_amount', rows: net('h.status') },
        refunded_orders: { aggregate: 'sum', of: 'h.order_count', rows: refunded('h.status') },
        gross_amount: { aggregate: 'sum', of: 'h.total_amount' },
      },
    },
    {
      // The same figures by customer region: what a scoped caller, or a region asked for, reads.
      name: 'region_hours rollup',
      rollup: true,
      rows: (db) => db.selectFrom('reporting.region_hours as rh'),
      reads: ['reporting.region_hours'],
      time: 'rh.hour',
      timeGrain: 'hour',
      currency: 'rh.currency',
      attributes: { region: 'rh.region', status: 'rh.status' },
      measures: {
        orders: { aggregate: 'sum', of: 'rh.order_count' },
        net_orders: { aggregate: 'sum', of: 'rh.order_count', rows: net('rh.status') },
        revenue: { aggregate: 'sum', of: 'rh.total_amount', rows: net('rh.status') },
        refunded_orders: { aggregate: 'sum', of: 'rh.order_count', rows: refunded('rh.status') },
        gross_amount: { aggregate: 'sum', of: 'rh.total_amount' },
      },
    },
    // Revenue and units by product, category and status, per UTC day: for calls whose days are UTC days
    // (the engine checks), read from the daily product rollups instead of the items. Order counts do not
    // add up across products, so these rollups measure neither orders nor customers.
    {
      name: 'product_days rollup',
      rollup: true,
      rows: (db) =>
        db.selectFrom('reporting.product_days as pd').innerJoin('reporting.products as pp', 'pp.id', 'pd.product_id'),
      reads: ['reporting.product_days', 'reporting.products'],
      time: 'pd.day',
      timeGrain: 'day',
      currency: 'pd.currency',
      attributes: { status: 'pd.status', category: 'pp.category', product: 'pp.sku' },
      labels: { product: 'pp.name' },
      measures: {
        revenue: { aggregate: 'sum', of: 'pd.revenue', rows: net('pd.status') },
        gross_amount: { aggregate: 'sum', of: 'pd.revenue' },
        units: { aggregate: 'sum', of: 'pd.units', rows: net('pd.status') },
      },
    },
    {
      // The same by customer region, keyed region first (pack/rollups.ts): for scoped callers and regions.
      name: 'region_product_days rollup',
      rollup: true,
      rows: (db) =>
        db
          .selectFrom('reporting.region_product_days as rp')
          .innerJoin('reporting.products as rpp', 'rpp.id', 'rp.product_id'),
      reads: ['reporting.region_product_days', 'reporting.products'],
      time: 'rp.day',
      timeGrain: 'day',
      currency: 'rp.currency',
      attributes: { region: 'rp.region', status: 'rp.status', category: 'rpp.category', product: 'rpp.sku' },
      labels: { product: 'rpp.name' },
      measures: {
        revenue: { aggregate: 'sum', of: 'rp.revenue', rows: net('rp.status') },
        gross_amount: { aggregate: 'sum', of: 'rp.revenue' },
        units: { aggregate: 'sum', of: 'rp.units', rows: net('rp.status') },
      },
    },
    {
      // The orders alone: every call that reads no region (and no caller scoped to regions), without
      // a join to their customers.
      name: 'orders',
      rows: (db) => db.selectFrom('reporting.orders as o'),
      reads: ['reporting.orders'],
      attributes: { status: 'o.status' },
      ...ORDER_ROWS,
    },
    {
      name: "orders with their customer's region",
      rows: (db) =>
        db.selectFrom('reporting.orders as o').innerJoin('reporting.customers as c', 'c.id', 'o.customer_id'),
      reads: ['reporting.orders', 'reporting.customers'],
      attributes: { region: 'c.region', status: 'o.status' },
      ...ORDER_ROWS,
    },
    {
      name: 'order items',
      rows: (db) =>
        db
          .selectFrom('reporting.orders as o')
          .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
          .innerJoin('reporting.order_items as oi', 'oi.order_id', 'o.id')
          .innerJoin('reporting.products as p', 'p.id', 'oi.product_id'),
      reads: ['reporting.orders', 'reporting.customers', 'reporting.order_items', 'reporting.products'],
      time: 'o.ordered_at',
      currency: 'o.currency',
      attributes: { region: 'c.region', status: 'o.status', category: 'p.category', product: 'p.sku' },
      labels: { product: 'p.name' },
      people: 'o.customer_id',
      amounts: { order_value: 'o.total_amount' },
      entities: { customer: 'o.customer_id' },
      measures: {
        orders: { aggregate: 'count_distinct', of: 'o.id' },
        net_orders: { aggregate: 'count_distinct', of: 'o.id', rows: net('o.status') },
        revenue: {
          aggregate: 'sum',
          of: (eb) => eb(eb.ref('oi.quantity'), '*', eb.ref('oi.unit_price')),
          rows: net('o.status'),
        },
        refunded_orders: { aggregate: 'count_distinct', of: 'o.id', rows: refunded('o.status') },
        gross_amount: {
          aggregate: 'sum',
          of: (eb) => eb(eb.ref('oi.quantity'), '*', eb.ref('oi.unit_price')),
        },
        customers: { aggregate: 'count_distinct', of: 'o.customer_id' },
        units: { aggregate: 'sum', of: 'oi.quantity', rows: net('o.status') },
      },
    },
  ],
};
