import type { ReaderDatabase, Statement } from '../../db/connect.js';
import { ConfigError } from '../../lib/errors.js';
import { unboundScopeValues } from '../../lib/data-scope.js';
import type { Entry } from '../entries.js';
import type { QueryContext } from '../types.js';

const MAX_CACHED_STATEMENTS = 1000;

/**
 * A call's statement: the template's query for these arguments and context, capped one row past the
 * cap (to tell a truncated answer), compiled once and kept in the entry's bounded cache.
 */
export function statementFor(
  entry: Entry,
  args: unknown,
  cap: number,
  db: ReaderDatabase,
  ctx: QueryContext,
): Statement {
  const key = `${ctx.timeZone}|${cap}|${JSON.stringify(ctx.dataScope ?? null)}|${JSON.stringify(args)}`;
  let statement = entry.statements.get(key);
  if (!statement) {
    const { sql, parameters } = entry.template
      .query(db.compiler, args, ctx)
      .limit(cap + 1)
      .compile();
    // Belt and braces: the start-up check saw every branch bind the scope; this sees this statement do it.
    const unbound = ctx.dataScope ? unboundScopeValues(parameters, ctx.dataScope) : [];
    if (unbound.length > 0) {
      throw new ConfigError(
        `template ${entry.template.name}: its statement binds no ${unbound.join(', ')} of the caller's data scope`,
      );
    }
    statement = { sql, parameters };
    if (entry.statements.size >= MAX_CACHED_STATEMENTS) entry.statements.clear();
    entry.statements.set(key, statement);
  }
  return statement;
}
