import type { Config } from '../config.js';
import { createSharedRates } from '../jobs/rates.js';
import type { JobStore } from '../jobs/store.js';
import { createCallLimits, createTokenBuckets, type CallLimits } from '../lib/limits.js';
import type { Logger } from '../lib/logger.js';

/**
 * Admission: the call rate, the concurrency per caller, the queue. The job store also keeps the call
 * rates, so that replicas share them: N replicas allow the rate once, not N times.
 */
export function callLimitsOf(config: Config, jobStore: JobStore | undefined, logger: Logger): CallLimits {
  return createCallLimits({
    ...(jobStore
      ? {
          rates: createSharedRates(jobStore, {
            perMinute: config.rateLimitPerMinute,
            fallback: createTokenBuckets(config.rateLimitPerMinute),
            logger,
          }),
        }
      : {}),
    callsPerMinute: config.rateLimitPerMinute,
    maxConcurrentPerCaller: config.maxConcurrentPerCaller,
    maxActive: config.poolMax,
    maxQueued: config.maxQueued,
    maxQueueWaitMs: config.queueTimeoutMs,
  });
}
