/** The one helper the sales templates are written with: bound to the reporting tables and their personal columns. */
import { templateKit } from '../src/pack.js';
import { PERSONAL_COLUMNS, type ReportingDatabase } from './schema.js';

export const defineTemplate = templateKit<ReportingDatabase>(PERSONAL_COLUMNS);
