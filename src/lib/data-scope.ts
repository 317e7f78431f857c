/**
 * Data scope: which rows a caller may see. A pack declares its dimensions (src/pack.ts), a template
 * which of them its query applies, and a caller may carry, for each dimension, the values it may see.
 * The registry serves a scoped caller only the templates that apply every dimension it is scoped on,
 * hands them its values to bind, and checks what they bound; these are the rules it checks with.
 */
import type { ArgumentIssue } from './errors.js';

/** Values by dimension: the caller sees only rows whose dimension value is one of these. */
export type DataScope = Readonly<Record<string, readonly string[]>>;

/** A caller's scope, or undefined when it has none (no scope, or one naming no dimension). */
export function scopeOf(caller: { readonly dataScope?: DataScope }): DataScope | undefined {
  const scope = caller.dataScope;
  return scope === undefined || Object.keys(scope).length === 0 ? undefined : scope;
}

/**
 * A scope as a key: its dimensions in order, each with its values once and in order; '' for a caller
 * who sees every row. Two scopes that allow the same rows have the same key.
 */
export function scopeKey(scope: DataScope | undefined): string {
  if (scope === undefined || Object.keys(scope).length === 0) return '';
  return JSON.stringify(
    Object.keys(scope)
      .sort()
      .map((dimension) => [dimension, [...new Set(scope[dimension])].sort()]),
  );
}

/**
 * Whether two scopes (as scopeOf gives them) allow the same rows: the same dimensions, each with the
 * same values, in any order. A job is read only under the scope it was submitted with.
 */
export function sameScope(a: DataScope | undefined, b: DataScope | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return scopeKey(a) === scopeKey(b);
}

/**
 * Whether a query that applies these dimensions can answer a caller with this scope: it must apply
 * every dimension the caller is scoped on. A dimension scoped to no value at all lets the caller see
 * nothing, so no query answers it: closed, never open.
 */
export function appliesScope(dimensions: readonly string[] | undefined, scope: DataScope | undefined): boolean {
  if (scope === undefined) return true;
  return Object.entries(scope).every(([dimension, values]) => values.length > 0 && !!dimensions?.includes(dimension));
}

/**
 * The arguments that would reach outside the scope: an argument named after a dimension the caller is
 * scoped on filters on it, and so does the entry of that name in a `filters` object (the shape the
 * row lists and query_metrics take), so its value (or each of its values) must be one the caller may see.
 */
export function outsideScope(args: unknown, scope: DataScope | undefined): ArgumentIssue[] {
  if (scope === undefined || typeof args !== 'object' || args === null) return [];
  const { filters } = args as Record<string, unknown>;
  const issues: ArgumentIssue[] = [];
  for (const [dimension, allowed] of Object.entries(scope)) {
    const places: [string, unknown][] = [[dimension, (args as Record<string, unknown>)[dimension]]];
    if (typeof filters === 'object' && filters !== null) {
      places.push([`filters.${dimension}`, (filters as Record<string, unknown>)[dimension]]);
    }
    for (const [field, given] of places) {
      if (given === undefined || given === null) continue;
      const values = Array.isArray(given) ? given : [given];
      if (values.every((value) => typeof value === 'string' && allowed.includes(value))) continue;
      issues.push({
        field,
        rule: `outside your data scope (${allowed.join(', ')}); give one of those or leave ${field} out`,
      });
    }
  }
  return issues;
}

/**
 * The scope values a compiled statement does not bind, as "dimension value": a query that applies the
 * scope binds each of them (an array parameter counts for its elements). Any is a builder that forgot
 * the scope somewhere, which the registry refuses to run.
 */
export function unboundScopeValues(parameters: readonly unknown[], scope: DataScope): string[] {
  const bound = new Set(parameters.flatMap((p) => (Array.isArray(p) ? (p as unknown[]) : [p])));
  return Object.entries(scope).flatMap(([dimension, values]) =>
    values.filter((value) => !bound.has(value)).map((value) => `${dimension} ${JSON.stringify(value)}`),
  );
}

/** A scope as one line of text, for the catalog a scoped caller reads: "region: Europe, Asia". */
export function describeScope(scope: DataScope): string {
  return Object.entries(scope)
    .map(([dimension, values]) => `${dimension}: ${values.join(', ')}`)
    .join('; ');
}
