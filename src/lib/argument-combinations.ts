/**
 * Every branch a template's arguments can select, derived from its zod input schema alone: each
 * argument with a few possible values (an enum, literals, a boolean) takes each of them, and each optional
 * argument is both present and absent. Other arguments (dates, numbers, free text) keep the value an
 * example gives them. The registry compiles every combination at start-up, so a branch that no example
 * reaches is checked too.
 */
import { z } from 'zod';
import { ConfigError } from './errors.js';

/** More combinations than this is a schema to split, not one to compile at every start-up. */
export const MAX_COMBINATIONS = 10_000;

const ABSENT = Symbol('absent');
const UNKNOWN = Symbol('unknown');

interface Def {
  readonly type: string;
  readonly innerType?: z.ZodType;
  readonly in?: z.ZodType;
  readonly element?: z.ZodType;
  readonly options?: readonly z.ZodType[];
  readonly values?: readonly unknown[];
}

/** The few values a schema accepts, or undefined when they are not few. */
function choicesOf(schema: z.ZodType): unknown[] | undefined {
  const def = schema.def as unknown as Def;
  switch (def.type) {
    case 'enum':
      return [...(schema as z.ZodEnum).options];
    case 'literal':
      return [...def.values!];
    case 'boolean':
      return [true, false];
    case 'union': {
      const each = def.options!.map(choicesOf);
      return each.every((c) => c !== undefined) ? each.flat() : undefined;
    }
    case 'readonly':
    case 'catch':
      return choicesOf(def.innerType!);
    case 'pipe':
      return choicesOf(def.in!);
    default:
      return undefined;
  }
}

/** The values worth trying for one argument, ABSENT standing for leaving it out. */
function variantsOf(schema: z.ZodType, example: unknown): unknown[] {
  const def = schema.def as unknown as Def;
  switch (def.type) {
    case 'optional':
    case 'default':
    case 'prefault':
      return [...variantsOf(def.innerType!, example), ABSENT];
    case 'nullable':
      return [...variantsOf(def.innerType!, example), null];
    case 'array': {
      // A list of a few values: each one alone, and whatever the example gives.
      const element = choicesOf(def.element!);
      if (element) return [...element.map((v) => [v]), ...(example === UNKNOWN ? [] : [example])];
      break;
    }
  }
  return choicesOf(schema) ?? (example === UNKNOWN ? [] : [example]);
}

/**
 * Argument sets covering every combination of the input's enumerable and optional arguments, one
 * series per example (the examples give the other arguments their values). Not yet validated: a
 * combination the schema refuses cannot be called, and the caller skips it.
 */
export function argumentCombinations(
  where: string,
  input: z.ZodType,
  examples: readonly Record<string, unknown>[],
): Record<string, unknown>[] {
  if (!(input instanceof z.ZodObject)) throw new ConfigError(`${where}: input must be an object schema`);
  const shape = input.shape as Record<string, z.ZodType>;
  const seen = new Set<string>();
  const combinations: Record<string, unknown>[] = [];
  for (const example of examples) {
    const fields = Object.entries(shape).map(([name, schema]) => {
      const given = Object.hasOwn(example, name)
        ? example[name]
        : (examples.find((e) => Object.hasOwn(e, name))?.[name] ?? UNKNOWN);
      // A period is resolved to days before a template sees it (the registry's resolvePeriods): one
      // period stands for them all, and the days it gives are checked like any others.
      const values = name === 'period' ? ['last_week', ABSENT] : dedupe(variantsOf(schema, given));
      if (values.length === 0 || values.every((v) => v === ABSENT)) {
        // An optional argument whose present branch no example can give a value to.
        throw new ConfigError(
          `${where}: no example gives optional argument ${name} a value; add one, so the branch where it is given is checked`,
        );
      }
      return { name, values };
    });
    const count = fields.reduce((n, f) => n * f.values.length, 1);
    if (count > MAX_COMBINATIONS) {
      throw new ConfigError(
        `${where}: its arguments select ${count} combinations, more than the ${MAX_COMBINATIONS} checked at start-up; split the tool`,
      );
    }
    for (let i = 0; i < count; i++) {
      const args: Record<string, unknown> = {};
      let rest = i;
      for (const { name, values } of fields) {
        const value = values[rest % values.length];
        rest = Math.floor(rest / values.length);
        if (value !== ABSENT) args[name] = value;
      }
      const key = JSON.stringify(args);
      if (!seen.has(key)) {
        seen.add(key);
        combinations.push(args);
      }
    }
  }
  return combinations;
}

function dedupe(values: unknown[]): unknown[] {
  const keys = new Set<string>();
  return values.filter((v) => {
    const key = v === ABSENT ? '\u0000absent' : JSON.stringify(v);
    if (keys.has(key)) return false;
    keys.add(key);
    return true;
  });
}

/** What the checked calls are read from: any template has these (src/lib/ names no registry type). */
export interface CheckedDeclaration {
  readonly name: string;
  readonly input: z.ZodType;
  readonly examples: readonly Record<string, unknown>[];
  /** A tool's own list of calls that cover every statement it builds (query_metrics: each fragment and pair). */
  readonly checkedArguments?: readonly Record<string, unknown>[];
}

/**
 * The argument sets every check compiles or calls: a template's own checkedArguments after its
 * examples when it gives them, every combination otherwise. The start-up checks, `doctor` and the
 * contract suite all read them here, so they check the same calls.
 */
export function checkedCombinations(template: CheckedDeclaration): Record<string, unknown>[] {
  if (template.checkedArguments) return [...template.examples, ...template.checkedArguments];
  return argumentCombinations(`template ${template.name}`, template.input, template.examples);
}
