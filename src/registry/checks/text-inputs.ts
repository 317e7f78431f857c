/**
 * A date smuggled in as text: a template's free text input (a `cohort` of "2019-01-01") that its SQL
 * casts to a date reads whatever range the caller names, past the engine's 90 days, and no name or
 * pattern gives it away (src/lib/date-inputs.ts judges those). PostgreSQL does: asked to prepare the
 * statement, it says which type it reads each parameter as. These probes are asked of the database as
 * the reader at start-up (src/db/doctor/declared-sources.ts), and a text input read as a date, a time
 * or an interval is refused there with the engine's range as the fix.
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { DATE_INPUT_FIX } from '../../lib/date-inputs.js';
import { dateRangeFields } from '../../lib/date-range.js';
import { jsonSchema } from '../tools.js';
import type { AnyTemplate, DeclarationProbe } from '../types.js';
import { compiledCalls } from './checked-calls.js';

/** The engine's own range fields, which are dates by design. */
const RANGE_FIELDS = Object.keys(dateRangeFields);

/** The free text inputs of a template: strings, or lists of strings, of no closed list. */
function textInputs(inputSchema: Tool['inputSchema']): string[] {
  const properties = (inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const free = (p: Record<string, unknown> | undefined): boolean =>
    p !== undefined && p.type === 'string' && !('enum' in p) && !('const' in p);
  return Object.entries(properties)
    .filter(([name]) => !RANGE_FIELDS.includes(name))
    .filter(([, p]) => free(p) || (p.type === 'array' && free(p.items as Record<string, unknown> | undefined)))
    .map(([name]) => name);
}

/**
 * For each free text input, a statement that binds a marker in its place and the position of that
 * parameter: the first checked call whose statement binds it. An input no checked call binds (one
 * only the template's present() reads) has nothing to probe.
 */
export function textInputProbes(template: AnyTemplate): DeclarationProbe[] {
  const inputSchema = jsonSchema(template.input, 'input') as Tool['inputSchema'];
  const fields = textInputs(inputSchema);
  if (fields.length === 0) return [];
  const marker = (field: string): string => `querygate-probe-of-${field}`;
  const probes: DeclarationProbe[] = [];
  const left = new Set(fields);
  for (const call of compiledCalls(template)) {
    const args = { ...call.args };
    for (const field of left) {
      const listed = (inputSchema.properties as Record<string, { type?: string }>)[field]!.type === 'array';
      args[field] = listed ? [marker(field)] : marker(field);
    }
    let statement;
    try {
      statement = call.compile(args);
    } catch {
      continue; // the markers are no value the schema accepts: a builder may refuse them
    }
    const textParameters = [...left].flatMap((field) => {
      const index = statement.parameters.findIndex((p) => typeof p === 'string' && p.includes(marker(field)));
      return index < 0 ? [] : [{ field, position: index + 1 }];
    });
    if (textParameters.length === 0) continue;
    for (const { field } of textParameters) left.delete(field);
    probes.push({
      declaration: `template ${template.name}`,
      statement: { sql: statement.sql, parameters: statement.parameters },
      textParameters,
      fix: DATE_INPUT_FIX,
    });
    if (left.size === 0) break;
  }
  return probes;
}
