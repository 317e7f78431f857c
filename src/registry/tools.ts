/** How a tool is listed: its JSON schemas and the description a model chooses it by. */
import { z } from 'zod';
import { ConfigError } from '../lib/errors.js';
import { PERIODS } from '../lib/periods.js';
import type { AnyTemplate } from './types.js';

/**
 * A zod schema as a JSON schema; an input or output must be an object. An input given here is the
 * tool's whole input schema, which `tools/list` gives as `listedInput` leaves it; an output, its whole
 * answer schema, which `tools/list` gives as an object (`outline`). Both are the public contract, so
 * only the generator's noise is left out here (see `compact`).
 */
export function jsonSchema(
  schema: z.ZodType,
  io: 'input' | 'output',
  input?: Record<string, unknown>,
): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  if (json.type !== 'object') throw new ConfigError(`${io} schema must be an object`);
  return compact(json, io, input === undefined ? new Set() : enumsOf(input)) as Record<string, unknown>;
}

/**
 * An answer's listed schema: `{"type": "object"}`, what MCP asks of every output schema. A model
 * chooses and calls a tool by its name, description and input schema, and reads the answer itself,
 * JSON whose field names say what they hold (the instructions say once what the fields many tools
 * share mean); outlines field by field cost 2,681 bytes of the sales pack's listing, against issue
 * 30's budget of 8 KB read before the first question. A client validating an answer against it
 * accepts every answer the server sends. The whole answer schema, as `jsonSchema` gives it, is the
 * tool's public contract (contract/tools.json), and the contract suite checks every answer against it.
 */
export function outline(_answer: Record<string, unknown>): Record<string, unknown> {
  return { type: 'object' };
}

/**
 * An input as `tools/list` gives it: the whole input schema without what the instructions say once
 * for every tool, and without what only a malformed call meets, which the server refuses with a
 * message naming the argument and the rule (a model-fixable error). Left out:
 * - the value list of the shared `period` argument (twelve names on every tool with a date range,
 *   845 bytes of the sales pack's listing): the instructions list them once (src/protocol/identity.ts);
 * - `additionalProperties: false` (a model sends the arguments listed);
 * - the length bounds of a text (an empty name, a 100-character one), `minItems: 1` (an empty list),
 *   and a list's `maxItems` when its items are values of a list no longer (only repeats reach it).
 * Every other value list, number bound, list length, default and format stays: a model chooses its
 * arguments by them. The whole schema is the public contract (contract/tools.json, the registry's
 * `argumentSchemas`), and completions and querygate://catalog read it.
 */
export function listedInput<T>(schema: T): T {
  return dropSaidElsewhere(schema) as T;
}

function dropSaidElsewhere(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(dropSaidElsewhere);
  if (typeof schema !== 'object' || schema === null) return schema;
  const node = schema as Record<string, unknown>;
  const itemValues = (node.items as { enum?: unknown[] } | undefined)?.enum;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'enum' && Array.isArray(value) && enumKey(value) === enumKey(PERIODS)) continue;
    if (key === 'additionalProperties' && value === false) continue;
    if ((key === 'minLength' || key === 'maxLength') && node.type === 'string') continue;
    if (key === 'minItems' && value === 1) continue;
    if (key === 'maxItems' && Array.isArray(itemValues) && typeof value === 'number' && value >= itemValues.length)
      continue;
    out[key] =
      key === 'properties'
        ? mapValues(value, dropSaidElsewhere)
        : VALUE_KEYWORDS.has(key)
          ? value
          : dropSaidElsewhere(value);
  }
  return out;
}

const mapValues = (map: unknown, f: (value: unknown) => unknown): unknown =>
  typeof map === 'object' && map !== null
    ? Object.fromEntries(Object.entries(map).map(([name, value]) => [name, f(value)]))
    : map;

/** The value lists a tool's input lists (null aside), as keys: an output echoing one needs only its type. */
function enumsOf(schema: unknown, found = new Set<string>()): Set<string> {
  if (typeof schema !== 'object' || schema === null) return found;
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'enum' && Array.isArray(value)) found.add(enumKey(value));
    else enumsOf(value, found);
  }
  return found;
}

const enumKey = (values: readonly unknown[]): string => JSON.stringify(values.filter((v) => v !== null));

/** The pattern zod lists for a YYYY-MM-DD day. */
const ISO_DAY_PATTERN = '^\\d{4}-\\d{2}-\\d{2}$';

/** Keywords under which a schema's values are themselves schemas, by name. */
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties']);
/** Keywords whose values are data, not schemas: copied as they are. */
const VALUE_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'required']);

/**
 * The JSON schema zod emits, without what constrains nothing:
 * - the safe-integer bounds zod puts on every integer (±2^53 − 1; an integer past them is not exact
 *   in JSON read by JavaScript, and the server's own zod check keeps them);
 * - `propertyNames: {type: "string"}` on records (every JSON key is a string), and
 *   `additionalProperties: {}` (the empty schema, which every value passes);
 * - `anyOf: [X, {type: "null"}]` of a nullable, written as X with "null" added to its type (and to
 *   its enum or const): the same values pass, in a third of the bytes;
 * - in an output, `additionalProperties: false`: an answer is parsed by its zod schema before it is
 *   sent, which drops any key the schema does not name, so no answer can carry one;
 * - in an output, `description` and `minimum`: what a field means is said once, in the server's
 *   instructions (money and its currency) or the tool's description, not on every field of every tool;
 *   and a bound on an answer's value binds the server, whose own zod check enforces it before sending,
 *   not the client reading it. Every field keeps its type, and every object its required list;
 * - beside `format: "date"`, the YYYY-MM-DD `pattern`: the format says it, and more (a day the
 *   calendar has); the engine's range days declare it (src/lib/date-range.ts);
 * - in an output, an `enum` the tool's input lists already (`period`, `group_by`): the answer echoes
 *   what the caller gave, which the input's list bounded; the field keeps its type.
 */
function compact(schema: unknown, io: 'input' | 'output', echoed: ReadonlySet<string> = new Set()): unknown {
  if (Array.isArray(schema)) return schema.map((s) => compact(s, io, echoed));
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (
      (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) ||
      (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)
    )
      continue;
    if (key === 'propertyNames' && isOnlyStringType(value)) continue;
    if (key === 'pattern' && value === ISO_DAY_PATTERN && (schema as { format?: unknown }).format === 'date') continue;
    if (key === 'additionalProperties' && value === false && io === 'output') continue;
    if (io === 'output' && (key === 'description' || key === 'minimum')) continue;
    if (io === 'output' && key === 'enum' && 'type' in schema && echoed.has(enumKey(value as unknown[]))) continue;
    if (key === 'additionalProperties' && isEmptySchema(value)) continue;
    if (VALUE_KEYWORDS.has(key)) out[key] = value;
    else out[key] = SCHEMA_MAPS.has(key) ? compactEach(value, io, echoed) : compact(value, io, echoed);
  }
  return mergeNullable(out);
}

function compactEach(map: unknown, io: 'input' | 'output', echoed: ReadonlySet<string>): unknown {
  if (typeof map !== 'object' || map === null) return map;
  return Object.fromEntries(Object.entries(map).map(([name, s]) => [name, compact(s, io, echoed)]));
}

const isEmptySchema = (value: unknown): boolean =>
  value === true ||
  (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0);

const isOnlyStringType = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  Object.keys(value).length === 1 &&
  (value as { type?: unknown }).type === 'string';

/** Keywords that would change meaning if a branch's keywords were lifted beside them. */
const COMBINING = ['anyOf', 'oneOf', 'allOf', 'not', '$ref', 'type', 'enum', 'const'];

/** `{anyOf: [X, {type: "null"}], ...rest}` as `{...X, ...rest, type: [X.type, "null"]}`, when X is one plain typed schema. */
function mergeNullable(schema: Record<string, unknown>): Record<string, unknown> {
  const { anyOf, ...rest } = schema;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return schema;
  const isNull = (s: unknown): boolean =>
    typeof s === 'object' && s !== null && Object.keys(s).length === 1 && (s as { type?: unknown }).type === 'null';
  const branch = (isNull(anyOf[1]) ? anyOf[0] : isNull(anyOf[0]) ? anyOf[1] : undefined) as
    Record<string, unknown> | undefined;
  if (branch === undefined || typeof branch.type !== 'string') return schema;
  if (COMBINING.some((key) => key in rest) || ['anyOf', 'oneOf', 'allOf', 'not', '$ref'].some((key) => key in branch))
    return schema;
  if (Object.keys(branch).some((key) => key in rest)) return schema;
  const { const: constant, ...plain } = branch;
  const merged: Record<string, unknown> = { ...plain, ...rest, type: [branch.type, 'null'] };
  if (constant !== undefined) merged.enum = [constant, null];
  else if (Array.isArray(branch.enum)) merged.enum = [...(branch.enum as unknown[]), null];
  return merged;
}

/**
 * The description a model reads: the template's text and its first example. The range's own rules
 * (inclusive days, at most 90, the reporting time zone, a period instead of the dates) the
 * instructions say once.
 */
export function describe(template: AnyTemplate): string {
  return `${template.description} Example input: ${JSON.stringify(template.examples[0])}.`;
}
