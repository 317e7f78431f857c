/** Every tool of the billing pack, in one explicit list; the registry checks the whole list at start-up. */
import type { AnyTemplate } from '../../../src/registry/index.js';
import { billingQuery } from './billing-metrics.js';

export const templates: readonly AnyTemplate[] = [billingQuery];
