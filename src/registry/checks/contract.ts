import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ConfigError } from '../../lib/errors.js';
import { assertDateInputs } from '../../lib/date-inputs.js';
import type { AnyTemplate } from '../types.js';

/**
 * A template's contract holds together: its date inputs are the shared ones (src/lib/date-inputs.ts),
 * it takes compare_to exactly when it declares compare(), and its output is an object.
 */
export function assertContract(template: AnyTemplate, inputSchema: Tool['inputSchema']): void {
  assertDateInputs(
    `template ${template.name}`,
    template.input,
    (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>,
    template.examples,
  );
  if ('compare_to' in (inputSchema.properties ?? {}) !== (template.compare !== undefined)) {
    throw new ConfigError(
      `template ${template.name}: a template that takes compare_to must declare compare(), and one that declares compare() must take compare_to`,
    );
  }
  if (!(template.output instanceof z.ZodObject))
    throw new ConfigError(`template ${template.name}: output must be an object`);
}
