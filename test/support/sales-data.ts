/**
 * The seeded data, read raw through the admin connection, and plain-JavaScript answers to the
 * questions the tools answer. Nothing here uses the server's SQL, so its figures are independent.
 */
import type pg from 'pg';

/** A row of query_sales, as the tool returns it. */
export interface SalesRow {
  period?: string;
  region?: string;
  category?: string;
  currency: string;
  order_count: number;
  revenue: number;
  avg_order_value: number;
}

export interface RawOrder {
  id: number;
  customerId: number;
  status: string;
  orderedAt: Date;
  currency: string;
  totalCents: number;
}
export interface RawItem {
  orderId: number;
  productId: number;
  quantity: number;
  priceCents: number;
}
export interface RawProduct {
  id: number;
  sku: string;
  name: string;
  category: string;
}
export interface RawCustomer {
  id: number;
  name: string;
  email: string;
  phone: string;
  region: string;
}
export interface SalesData {
  orders: RawOrder[];
  items: RawItem[];
  products: Map<number, RawProduct>;
  customers: Map<number, RawCustomer>;
}

const toCents = (value: string): number => {
  const [whole, frac = ''] = value.split('.');
  return Number(whole) * 100 + Number(frac.padEnd(2, '0'));
};

export async function loadSalesData(admin: pg.Client): Promise<SalesData> {
  const orders = await admin.query(
    'select id, customer_id, status, ordered_at, currency, total_amount::text as total from sales.orders',
  );
  const items = await admin.query(
    'select order_id, product_id, quantity, unit_price::text as price from sales.order_items',
  );
  const products = await admin.query('select id, sku, name, category from sales.products');
  const customers = await admin.query('select id, name, email, phone, region from sales.customers');
  return {
    orders: orders.rows.map((r) => ({
      id: Number(r.id),
      customerId: Number(r.customer_id),
      status: r.status as string,
      orderedAt: r.ordered_at as Date,
      currency: r.currency as string,
      totalCents: toCents(r.total as string),
    })),
    items: items.rows.map((r) => ({
      orderId: Number(r.order_id),
      productId: Number(r.product_id),
      quantity: Number(r.quantity),
      priceCents: toCents(r.price as string),
    })),
    products: new Map(
      products.rows.map((r) => [Number(r.id), { id: Number(r.id), sku: r.sku, name: r.name, category: r.category }]),
    ),
    customers: new Map(
      customers.rows.map((r) => [
        Number(r.id),
        { id: Number(r.id), name: r.name, email: r.email, phone: r.phone, region: r.region },
      ]),
    ),
  };
}

/** The calendar day of an instant in a time zone, YYYY-MM-DD. */
export function localDay(instant: Date, timeZone: string): string {
  let format = dayFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(timeZone, format);
  }
  return format.format(instant);
}
const dayFormats = new Map<string, Intl.DateTimeFormat>();

export function ordersBetween(data: SalesData, start: string, end: string, timeZone = 'UTC'): RawOrder[] {
  return data.orders.filter((o) => {
    const day = localDay(o.orderedAt, timeZone);
    return day >= start && day <= end;
  });
}

export const isNet = (o: RawOrder): boolean => o.status !== 'cancelled' && o.status !== 'refunded';

/** Cents to a 2-decimal number, rounding a fraction of a cent half away from zero as numeric round() does. */
export const money = (cents: number): number => Math.round(cents) / 100;

/** Monday of the ISO week holding a YYYY-MM-DD day. */
export function isoWeekStart(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  const sinceMonday = (date.getUTCDay() + 6) % 7;
  return new Date(date.getTime() - sinceMonday * 86_400_000).toISOString().slice(0, 10);
}
