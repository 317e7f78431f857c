/** Argument types shared by several tools, built once so every tool words its rules the same way. */
import { z } from 'zod';
import { quote } from './date-range.js';

export const MAX_ROWS = 100;

/** A closed set of strings; the error lists every allowed value (the listed schema's enum already does). */
export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  what?: string,
): z.ZodEnum<{ [K in T[number]]: K }> {
  const schema = z.enum(values, {
    error: (iss) => `${quote(iss.input)} is not allowed; use one of ${values.join(', ')}`,
  });
  return what === undefined ? schema : schema.describe(what);
}

/** A whole number of rows between 1 and MAX_ROWS. */
export function rowLimit(fallback: number): z.ZodDefault<z.ZodNumber> {
  return z
    .number()
    .min(1, { error: 'must be at least 1', abort: true })
    .max(MAX_ROWS, { error: `must be at most ${MAX_ROWS}`, abort: true })
    .int()
    .default(fallback);
}

/**
 * A label read from the data (a region's or a team's name), as a filter takes it: bound, never spliced.
 * No control characters: PostgreSQL's text holds no NUL, and a label with one would fail in the
 * database instead of being refused here.
 */
export const label = z
  .string()
  .min(1, { error: 'must not be empty' })
  .max(100, { error: 'must be at most 100 characters' })
  // A refinement, not a pattern: the rule is said here, and costs the tools' listing nothing.
  // eslint-disable-next-line no-control-regex
  .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), { error: 'must hold no control characters' });

/** A filter's values (`filters: { region: [...] }`): one or more, at most `max`, each as `value` checks it. */
export function filterValues<T extends z.ZodType>(value: T, max: number, what?: string): z.ZodOptional<z.ZodArray<T>> {
  const values = z.array(value).min(1, { error: 'give at least one value, or leave it out' }).max(max).optional();
  return what === undefined ? values : values.describe(what);
}
