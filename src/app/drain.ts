import type { JobService } from '../jobs/service.js';
import type { CallLimits } from '../lib/limits.js';
import type { Logger } from '../lib/logger.js';

/** After the shutdown timeout: how long cancelled calls get to end, and the pool to close. */
export const STOP_GRACE_MS = 1000;

/**
 * Waits for the calls in flight, up to the shutdown timeout; then cancels those still running (by
 * aborting `stopping`), and gives them STOP_GRACE_MS. Once only: later calls share the first drain.
 */
export function createDrain(
  parts: {
    readonly limits: CallLimits;
    readonly jobs: JobService | undefined;
    readonly stopping: AbortController;
    readonly shutdownTimeoutMs: number;
    /** Stops what must not start again once draining (the role gate's retry). */
    readonly beforeDrain: () => void | Promise<void>;
  },
  logger: Logger,
): () => Promise<void> {
  const { limits, jobs, stopping } = parts;
  let draining: Promise<void> | undefined;
  return () =>
    (draining ??= (async () => {
      await parts.beforeDrain();
      // Jobs running here are let go at once, for another replica to take over, rather than drained.
      await jobs?.close();
      if (await limits.drain(parts.shutdownTimeoutMs)) return;
      logger.warn('stopping: cancelling the calls still running', { active: limits.active });
      stopping.abort();
      if (!(await limits.drain(STOP_GRACE_MS))) {
        logger.warn('stopping with calls still running', { active: limits.active });
      }
    })());
}
