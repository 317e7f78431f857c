/** The migrations in order. Names sort in the order they must run. */
import type { Migration } from 'kysely';
import { salesSchema } from './0001-sales-schema.js';
import { reportingViews } from './0002-reporting-views.js';
import { readerRole } from './0003-reader-role.js';
import { readerColumns } from './0004-reader-columns.js';
import { rollupHardening } from './0006-rollup-hardening.js';
import { readerLimits } from './0011-reader-limits.js';
import { storedMasks } from './0012-stored-masks.js';
import { customerHistory } from './0017-customer-history.js';
import { rollups } from './0022-rollups.js';
import { SQUASHED, squashed } from './squashed.js';

export function migrations(options: { readerRole: string }): Record<string, Migration> {
  const all: Record<string, Migration> = {
    '0001-sales-schema': salesSchema,
    '0002-reporting-views': reportingViews,
    '0003-reader-role': readerRole(options.readerRole),
    '0004-reader-columns': readerColumns(options.readerRole),
    '0006-rollup-hardening': rollupHardening(options.readerRole),
    '0011-reader-limits': readerLimits(options.readerRole),
    '0012-stored-masks': storedMasks,
    '0017-customer-history': customerHistory,
    '0022-rollups': rollups(options.readerRole),
  };
  for (const name of SQUASHED) all[name] = squashed;
  // In name order, as the migrator runs them.
  return Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
}
