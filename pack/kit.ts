/**
 * The one helper the sales templates are written with: bound to the reporting tables, their personal
 * columns and the pack's data-scope dimensions.
 */
import { templateKit } from '../src/pack.js';
import { DATA_SCOPE, PERSONAL_COLUMNS, type ReportingDatabase } from './schema.js';

export const defineTemplate = templateKit<ReportingDatabase, (typeof DATA_SCOPE)[number]['name']>(
  PERSONAL_COLUMNS,
  DATA_SCOPE,
);
