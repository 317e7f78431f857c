/** The migrations in order. Names sort in the order they must run. */
import type { Migration } from 'kysely';
import { salesSchema } from './0001-sales-schema.js';
import { reportingViews } from './0002-reporting-views.js';
import { readerRole } from './0003-reader-role.js';
import { readerColumns } from './0004-reader-columns.js';
import { orderHours } from './0005-order-hours.js';
import { rollupHardening } from './0006-rollup-hardening.js';
import { productDays } from './0007-product-days.js';
import { regionDays } from './0008-region-days.js';
import { rollupIsolation } from './0009-rollup-isolation.js';
import { rollupCurrency } from './0010-rollup-currency.js';
import { readerLimits } from './0011-reader-limits.js';
import { storedMasks } from './0012-stored-masks.js';
import { categoryDays } from './0013-category-days.js';
import { regionHours } from './0014-region-hours.js';
import { regionRollups } from './0015-region-rollups.js';
import { rollupGrants } from './0016-rollup-grants.js';
import { customerHistory } from './0017-customer-history.js';
import { categoryLock } from './0018-category-lock.js';
import { rollupRangeRebuild } from './0019-rollup-range-rebuild.js';
import { orderRollups } from './0020-order-rollups.js';
import { productDaysGenerated } from './0021-product-days.js';

export function migrations(options: { readerRole: string }): Record<string, Migration> {
  return {
    '0001-sales-schema': salesSchema,
    '0002-reporting-views': reportingViews,
    '0003-reader-role': readerRole(options.readerRole),
    '0004-reader-columns': readerColumns(options.readerRole),
    '0005-order-hours': orderHours(options.readerRole),
    '0006-rollup-hardening': rollupHardening(options.readerRole),
    '0007-product-days': productDays(options.readerRole),
    '0008-region-days': regionDays(options.readerRole),
    '0009-rollup-isolation': rollupIsolation(),
    '0010-rollup-currency': rollupCurrency(options.readerRole),
    '0011-reader-limits': readerLimits(options.readerRole),
    '0012-stored-masks': storedMasks,
    '0013-category-days': categoryDays(options.readerRole),
    '0014-region-hours': regionHours(options.readerRole),
    '0015-region-rollups': regionRollups(options.readerRole),
    '0016-rollup-grants': rollupGrants(options.readerRole),
    '0017-customer-history': customerHistory,
    '0018-category-lock': categoryLock,
    '0019-rollup-range-rebuild': rollupRangeRebuild,
    '0020-order-rollups': orderRollups(options.readerRole),
    '0021-product-days': productDaysGenerated(options.readerRole),
  };
}
