import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ArgumentError } from '../../errors.js';
import { unequalElapsed, type Comparison } from '../../lib/comparison.js';
import { outsideScope, scopeOf } from '../../lib/data-scope.js';
import type { Entry } from '../entries.js';
import type { CallDeps, CallOptions } from '../interface.js';
import { resolvePeriods } from '../periods.js';
import type { TemplateLimits } from '../types.js';
import { admitted } from './admission.js';
import { answer } from './answer.js';
import { describeIssues, OUTSIDE_DATA_SCOPE } from './issues.js';
import { callRecord } from './record.js';

/**
 * A call of a template: its arguments validated and its period resolved, refused when they name data
 * outside the caller's scope or compare a running range unequally, then admitted and answered.
 */
export async function runTemplate(
  entry: Entry,
  rawArgs: unknown,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
): Promise<CallToolResult> {
  const record = callRecord(entry.template.name, deps, options);
  const parsed = entry.template.input.safeParse(rawArgs ?? {});
  if (!parsed.success) return record.reject(new ArgumentError(describeIssues(parsed.error, rawArgs, entry.knownArgs)));
  // A period becomes its days now, in the reporting time zone: the statement, its cache key and the
  // audit line all see the days the call covered.
  const args = resolvePeriods(parsed.data, deps.ctx.timeZone, (deps.now ?? Date.now)()) as Record<string, unknown>;
  record.args = args;
  const scope = scopeOf(options.caller);
  const outside = outsideScope(args, scope);
  if (outside.length > 0) return record.reject(new ArgumentError(outside, OUTSIDE_DATA_SCOPE));
  const unequal = unequalComparison(args, deps.ctx.timeZone);
  if (unequal) return record.reject(new ArgumentError([{ field: 'compare_to', rule: unequal }]));
  return admitted(record, deps, options, limit, (signal) => answer(entry, args, deps, signal, limit, scope));
}

/** Why a call's running range cannot be compared on equal elapsed time (src/lib/comparison.ts), if it cannot. */
function unequalComparison(args: Record<string, unknown>, timeZone: string): string | undefined {
  const compareTo = args.compare_to as Comparison | undefined;
  if (compareTo === undefined || typeof args.until !== 'string') return undefined;
  return unequalElapsed(
    args.start_date as string,
    args.end_date as string,
    compareTo,
    Date.parse(args.until),
    timeZone,
  );
}
