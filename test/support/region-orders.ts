/**
 * A template as a pack author would write one for small-group suppression: the orders of a range per
 * customer region, each row standing for its distinct customers. The registry's and the contract
 * suite's tests of suppression both run it.
 */
import { z } from 'zod';
import { defineTemplate } from '../../pack/kit.js';
import { ordersInRange } from '../../pack/range-sql.js';
import { checkDateRange, DATE_RANGE_ALWAYS, dateRangeFields, resolveRange } from '../../src/lib/date-range.js';
import type { AnyTemplate } from '../../src/registry/index.js';

export function regionOrdersTemplate(
  name: string,
  examples: readonly [Record<string, unknown>, ...Record<string, unknown>[]],
): AnyTemplate {
  return defineTemplate({
    name,
    title: 'Orders by region',
    description: 'Counts the orders of a range per customer region; regions of too few customers are left out.',
    input: z.strictObject({ ...dateRangeFields }).superRefine(checkDateRange, DATE_RANGE_ALWAYS),
    examples,
    output: z.object({ rows: z.array(z.object({ region: z.string(), orders: z.number() }).strict()) }),
    columns: {
      region: { type: 'text', source: 'reporting.customers.region', treatment: 'plain' },
      orders: { type: 'integer', source: 'computed', treatment: 'plain' },
      customers: { type: 'integer', source: 'computed', treatment: 'distinct_people' },
    },
    query: (db, args, ctx) =>
      ordersInRange(db, resolveRange(args), ctx.timeZone)
        .innerJoin('reporting.customers as c', 'c.id', 'o.customer_id')
        .groupBy('c.region')
        .select((eb) => [
          'c.region',
          eb.fn.countAll<string>().as('orders'),
          eb.fn.count<string>('o.customer_id').distinct().as('customers'),
        ])
        .orderBy('c.region'),
    present: (rows) => ({ rows: rows as { region: string; orders: number }[] }),
  }) as AnyTemplate;
}
