/**
 * The one helper the sales templates are written with: bound to the reporting tables, their personal
 * columns, the pack's data-scope dimensions and its high-water mark.
 */
import { templateKit } from '../src/pack.js';
import { DATA_SCOPE, DATA_THROUGH, PERSONAL_COLUMNS, type ReportingDatabase } from './schema.js';

export const defineTemplate = templateKit<ReportingDatabase, (typeof DATA_SCOPE)[number]['name']>(
  PERSONAL_COLUMNS,
  DATA_SCOPE,
  DATA_THROUGH,
);
