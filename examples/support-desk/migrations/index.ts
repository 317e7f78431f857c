/** The support desk's migrations in order. Names sort in the order they must run. */
import type { Migration } from 'kysely';
import { supportSchema } from './0001-support-schema.js';
import { reportingViews } from './0002-reporting-views.js';
import { readerGrants } from './0003-reader-grants.js';

export function migrations(options: { readonly readerRole: string }): Record<string, Migration> {
  return {
    '0001-support-schema': supportSchema,
    '0002-reporting-views': reportingViews,
    '0003-reader-grants': readerGrants(options.readerRole),
  };
}
