/** How a tool is listed: its JSON schemas and the description a model chooses it by. */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { SHARED_ANSWER_FIELDS } from './outputs.js';
import type { AnyTemplate } from './types.js';

/**
 * A zod schema as a JSON schema; an input or output must be an object. An input is listed as it is
 * given here; an output given here is the tool's whole answer schema, which `tools/list` outlines
 * (`outline`). Every client reads these lists into a model's context on every session, so the
 * generator's noise is left out (see `compact`).
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
 * An answer's listed schema: its own top-level fields, each typed; an object or a list of objects
 * below them typed by its kind (`object`, or `array` of `object` with its `maxItems`), not field by
 * field. No `required` list: it named every field a second time (787 bytes of the sales pack's
 * listing), which a model does not need to read an answer, and the whole schema keeps it. The fields every answer shares (its range, data_as_of and the
 * rest) the instructions name once and no tool repeats. A client validating an answer against it
 * accepts every answer the server sends, since the server parses each answer with its whole zod
 * schema before sending it. That whole schema, as `jsonSchema` gives it, is the tool's answer schema,
 * which the public contract (contract/tools.json) carries.
 */
export function outline(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const listed = Object.entries(properties).filter(([name]) => !SHARED_ANSWER_FIELDS.has(name));
  const { required: _required, ...rest } = schema;
  return { ...rest, properties: Object.fromEntries(listed.map(([name, field]) => [name, byKind(field)])) };
}

/** A field's schema with what lies below it left out: an object's fields, a list's objects' fields. */
function byKind(field: Record<string, unknown>): Record<string, unknown> {
  const { properties: _p, required: _r, additionalProperties: _a, items, ...kind } = field;
  if (isObjectSchema(items)) return { ...kind, items: { type: 'object' } };
  return items === undefined ? kind : { ...kind, items };
}

const isObjectSchema = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && [(value as { type?: unknown }).type].flat().includes('object');

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
