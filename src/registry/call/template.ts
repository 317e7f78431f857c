import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ArgumentError } from '../../lib/errors.js';
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
 * outside the caller's scope, then admitted and answered.
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
  return admitted(record, deps, options, limit, (signal) => answer(entry, args, deps, signal, limit, scope));
}
