/** The one helper the support desk's templates are written with: bound to its views and their personal columns. */
import { templateKit } from '../../../src/pack.js';
import { DATA_THROUGH, PERSONAL_COLUMNS, type SupportDatabase } from './schema.js';

export const defineTemplate = templateKit<SupportDatabase>(PERSONAL_COLUMNS, [], DATA_THROUGH);
