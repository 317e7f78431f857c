/** How a tool is listed: its JSON schemas and the description a model chooses it by. */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import type { AnyTemplate } from './types.js';

/** A zod schema as the JSON schema `tools/list` gives; an input or output must be an object. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  if (json.type !== 'object') throw new ConfigError(`${io} schema must be an object`);
  return json;
}

/** The description a model reads: the template's text, its first two examples, and when to give a period. */
export function describe(template: AnyTemplate, inputSchema: Tool['inputSchema']): string {
  const shown = template.examples.slice(0, 2).map((e) => JSON.stringify(e));
  const relative =
    inputSchema.properties && 'period' in inputSchema.properties
      ? ' For a relative question ("last week", "this month so far") give period instead of the dates, e.g. {"period": "last_week"}: the server knows what day it is in the reporting time zone.'
      : '';
  return `${template.description} Example input: ${shown.join(' or ')}.${relative}`;
}
