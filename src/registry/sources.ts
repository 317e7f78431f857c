/** Where a declared column's value comes from: the table columns behind it, and which of them are personal. */
import type { ColumnSpec, PersonalColumn, PersonalColumns, SourceColumn } from './types.js';

/** A pack's declaration of one "schema.table.column", if it is personal. */
export function personalAt(personal: PersonalColumns, source: SourceColumn): PersonalColumn | undefined {
  return (personal as Readonly<Record<string, PersonalColumn>>)[source];
}

/** The table columns a declared column may come from; none for a computed one. */
export function sourcesOf(column: ColumnSpec): readonly SourceColumn[] {
  if (column.source === 'computed') return [];
  return typeof column.source === 'string' ? [column.source] : column.source;
}
