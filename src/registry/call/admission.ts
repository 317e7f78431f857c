import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ArgumentError, InfraError, classifyDatabaseError } from '../../lib/errors.js';
import type { CallDeps, CallOptions } from '../interface.js';
import type { TemplateLimits } from '../types.js';
import { successResult, type CallRecord } from './record.js';

/** A template's statement failed to run: the database's error, or the call's cancellation. */
export class StatementFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('statement failed');
  }
}

/**
 * Admits a validated call, runs `work` with a signal that the client cancelling, the server stopping
 * and the configured timeout all abort (cancelling the running statement), and turns what went wrong
 * into the call's error result.
 */
export async function admitted(
  record: CallRecord,
  deps: CallDeps,
  options: CallOptions,
  limit: TemplateLimits | undefined,
  work: (signal: AbortSignal) => Promise<{ data: Record<string, unknown>; rowCount: number }>,
): Promise<CallToolResult> {
  const admission = await deps.limits.admit(options.caller.id, options.signal);
  if (!admission.ok) {
    if (options.signal?.aborted) return record.cancelled();
    return record.fail(new InfraError(admission.code, undefined, admission.retryAfterSeconds));
  }
  const abort = new AbortController();
  const cancel = (): void => abort.abort();
  options.signal?.addEventListener('abort', cancel, { once: true });
  deps.shutdown?.addEventListener('abort', cancel, { once: true });
  if (options.signal?.aborted || deps.shutdown?.aborted) cancel();
  // A configured timeout cancels the query on the server, as the client going away does.
  let timedOut = false;
  const timer =
    limit?.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), cancel()), limit.timeoutMs);
  try {
    if (!deps.isReady()) return record.fail(deps.unready?.() ?? new InfraError('database_unavailable'));
    const { data, rowCount } = await work(abort.signal);
    record.audit('ok', { row_count: rowCount });
    return successResult(data);
  } catch (err) {
    if (err instanceof ArgumentError) return record.reject(err);
    if (err instanceof StatementFailed) {
      if (options.signal?.aborted) return record.cancelled();
      if (deps.shutdown?.aborted) return record.fail(new InfraError('shutting_down'));
      return record.fail(timedOut ? new InfraError('timeout', err.cause) : classifyDatabaseError(err.cause), err.cause);
    }
    // A template broke its own contract: a programmer error, reported to the client as a safe failure.
    return record.fail(new InfraError('query_failed'), err);
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', cancel);
    deps.shutdown?.removeEventListener('abort', cancel);
    admission.release();
  }
}
