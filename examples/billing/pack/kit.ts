/** The helper hand-written templates are defined with (querygate new-query): bound to the views and their classification. */
import { templateKit } from '../../../src/pack.js';
import { DATA_THROUGH, PERSONAL_COLUMNS, type BillingDatabase } from './schema.js';

export const defineTemplate = templateKit<BillingDatabase>(PERSONAL_COLUMNS, [], DATA_THROUGH);
