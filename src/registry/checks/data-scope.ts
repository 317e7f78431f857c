import { ConfigError } from '../../lib/errors.js';
import { unboundScopeValues } from '../../lib/data-scope.js';
import type { AnyTemplate } from '../types.js';
import type { CompiledCall } from './checked-calls.js';

/**
 * A template that applies a data scope binds, scoped on each of its dimensions to two values no data
 * holds, every one of them: a branch that forgot the scope, or kept one value, is refused.
 */
export function assertScopeBound(template: AnyTemplate, call: CompiledCall): void {
  const { ctx, branch, statement } = call;
  const where = `template ${template.name}`;
  const unbound = ctx.dataScope ? unboundScopeValues(statement.parameters, ctx.dataScope) : [];
  if (unbound.length > 0) {
    throw new ConfigError(
      `${where}: applies a data scope but binds no ${unbound.join(', ')} ${branch}; bind every value of ctx.dataScope in every branch, e.g. where(column, 'in', values)`,
    );
  }
}
