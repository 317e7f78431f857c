import type { CompiledQuery } from 'kysely';
import { createCompiler } from '../../db/connect.js';
import { ConfigError } from '../../lib/errors.js';
import { checkedCombinations } from '../../lib/argument-combinations.js';
import type { DataScope } from '../../lib/data-scope.js';
import { resolvePeriods } from '../periods.js';
import { builderContext, type AnyTemplate, type QueryContext } from '../types.js';
import { CHECK_NOW, CHECK_SCOPE_VALUES, CHECK_ZONES } from './constants.js';

/** A call the start-up checks compile: validated arguments, and the context the builder gets. */
export interface CheckedCall {
  readonly args: Record<string, unknown>;
  readonly ctx: QueryContext;
  /** Where the call is, for a refusal's message. */
  readonly branch: string;
}

/**
 * Every call the start-up checks compile: each combination of the template's enumerable and optional
 * arguments (argument-combinations.ts), in each kind of zone, for a caller who sees every row and,
 * when the template applies a data scope, for one scoped on each of its dimensions: a scoped caller's
 * statement is another statement, held to the same rules.
 */
export function* checkedCalls(template: AnyTemplate): Generator<CheckedCall> {
  const scopes: (DataScope | undefined)[] = [undefined];
  if ((template.dataScope ?? []).length > 0) {
    scopes.push(Object.fromEntries(template.dataScope!.map((dimension) => [dimension, CHECK_SCOPE_VALUES])));
  }
  for (const combination of checkedCombinations(template)) {
    const parsed = template.input.safeParse(combination);
    if (!parsed.success) continue; // a combination the schema refuses is never compiled for a caller either
    for (const timeZone of CHECK_ZONES) {
      const args = resolvePeriods(parsed.data, timeZone, CHECK_NOW) as Record<string, unknown>;
      for (const dataScope of scopes) {
        yield {
          args,
          ctx: builderContext(template, { timeZone, ...(dataScope ? { dataScope } : {}) }),
          branch: `(arguments ${JSON.stringify(parsed.data)}, time zone ${timeZone}${dataScope ? ', data scope of each dimension' : ''})`,
        };
      }
    }
  }
}

/**
 * A start-up check's call of a template's builder: what the builder throws (a TypeError of a helper
 * called with arguments its schema let through, say) becomes a one-line refusal naming the call.
 */
export function startupQuery<T>(template: AnyTemplate, build: () => T, branch: string): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    throw new ConfigError(
      `template ${template.name}: query() throws ${JSON.stringify(reason.slice(0, 200))} ${branch}; ` +
        'every call its input schema accepts must build: refuse the others in the schema (dates through dateRangeFields with .superRefine(checkDateRange, DATE_RANGE_ALWAYS))',
    );
  }
}

/** A checked call compiled: its statement, and the same call compiled with other arguments. */
export interface CompiledCall extends CheckedCall {
  readonly statement: CompiledQuery;
  readonly compile: (args: unknown) => CompiledQuery;
}

/** Every checked call, compiled (capped at one row) for the checks that read its statement. */
export function* compiledCalls(template: AnyTemplate): Generator<CompiledCall> {
  const compiler = createCompiler();
  for (const call of checkedCalls(template)) {
    const compile = (values: unknown): CompiledQuery =>
      startupQuery(template, () => template.query(compiler, values, call.ctx).limit(1).compile(), call.branch);
    yield { ...call, statement: compile(call.args), compile };
  }
}
