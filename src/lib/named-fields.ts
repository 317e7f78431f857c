/**
 * Personal fields a row list returns only when a call names them: each is masked, but together they
 * can single a person out and link them across calls, so none comes by default. A template takes the
 * list as an argument (namedFields), selects each field not named as a NULL under its row key
 * (unnamedColumn: the registry holds every statement to the template's declared columns, so the key is
 * there, but the personal column is never read), and leaves those keys out of its rows
 * (withoutUnnamed).
 */
import type { AliasedExpression, ExpressionBuilder } from 'kysely';
import { z } from 'zod';
import { oneOf } from './arguments.js';

/** The optional argument listing which of `names` to return; the description says what `ref` is for. */
export function namedFields<const T extends readonly [string, ...string[]]>(
  names: T,
  person: string,
): z.ZodOptional<z.ZodArray<z.ZodEnum<{ [K in T[number]]: K }>>> {
  return z
    .array(oneOf(names))
    .min(1, { error: 'name at least one field, or leave it out for none' })
    .max(names.length)
    .optional()
    .describe(`${person[0]!.toUpperCase()}${person.slice(1)} fields to add, masked (none by default)`);
}

/** A field not named, selected as NULL under its row key: no column is read for it. */
export function unnamedColumn<DB, TB extends keyof DB, K extends string>(
  eb: ExpressionBuilder<DB, TB>,
  key: K,
): AliasedExpression<null, K> {
  return eb.lit(null).as(key);
}

/** The rows without the keys of the fields (field → row key) that `named` does not list. */
export function withoutUnnamed<F extends string, Row>(
  rows: readonly Record<string, unknown>[],
  keys: Readonly<Record<F, string>>,
  named: readonly F[] | undefined,
): Row[] {
  const left = (Object.keys(keys) as F[]).filter((field) => !named?.includes(field)).map((field) => keys[field]);
  return rows.map((row) => {
    const out = { ...row };
    for (const key of left) delete out[key];
    return out as Row;
  });
}
