/** The support desk's range SQL: the tickets created in a range of days of the reporting time zone. */
import type { Kysely } from 'kysely';
import { endOfRange, startOfDay } from '../../../src/db/range-sql.js';
import type { ResolvedRange } from '../../../src/lib/date-range.js';
import type { SupportDatabase } from './schema.js';

/**
 * Tickets created in [start 00:00, end + 1 day 00:00) of the reporting time zone (or up to the cut of a
 * range that has not ended), aliased `t`. Both
 * bounds are bind parameters constant for the planner, so the range uses the index on created_at.
 */
export function ticketsCreatedInRange(db: Kysely<SupportDatabase>, range: ResolvedRange, timeZone: string) {
  return db
    .selectFrom('support_reporting.tickets as t')
    .where('t.created_at', '>=', startOfDay(range.startDate, timeZone))
    .where('t.created_at', '<', endOfRange(range, timeZone));
}
