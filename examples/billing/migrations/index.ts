/** The billing pack's migrations in order. Names sort in the order they must run. */
import type { Migration } from 'kysely';
import { readerViews } from './0001-reader-views.js';

export function migrations(options: { readonly readerRole: string }): Record<string, Migration> {
  return { '0001-reader-views': readerViews(options.readerRole) };
}
