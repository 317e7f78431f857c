/**
 * A pack's high-water mark, read for a call: how far its data reach (`data_through`), and a range
 * still running cut there when the data stop before now (src/lib/running.ts, cutAtDataThrough).
 */
import type { ReaderDatabase } from '../../db/connect.js';
import { ConfigError } from '../../lib/errors.js';
import { unboundScopeValues } from '../../lib/data-scope.js';
import { isoTimestamp } from '../shaping/values.js';
import type { HighWaterMark, QueryContext } from '../types.js';
import { StatementFailed } from './admission.js';

/**
 * Reads the mark through the reader, as every statement runs (read-only, under the timeout, cancelled
 * with the call): ISO 8601 in UTC, or null when the pack holds no data yet.
 */
export async function readDataThrough(
  mark: HighWaterMark,
  db: ReaderDatabase,
  signal: AbortSignal,
  ctx: QueryContext,
): Promise<string | null> {
  const { sql, parameters } = mark(db.compiler, ctx).limit(1).compile();
  const unbound = ctx.dataScope ? unboundScopeValues(parameters, ctx.dataScope) : [];
  if (unbound.length > 0) {
    throw new ConfigError(`the high-water mark binds no ${unbound.join(', ')} of the caller's data scope`);
  }
  let result;
  try {
    result = await db.execute({ sql, parameters }, signal);
  } catch (err) {
    throw new StatementFailed(err);
  }
  const column = result.columns.indexOf('data_through');
  if (column < 0 || result.columns.length !== 1) {
    throw new ConfigError('the high-water mark must select one column, data_through');
  }
  const text = result.rows[0]?.[column] ?? null;
  return text === null ? null : isoTimestamp(text);
}
