import type { Config } from '../config.js';
import { startJobService, type JobService } from '../jobs/service.js';
import type { JobStore } from '../jobs/store.js';
import type { Logger } from '../lib/logger.js';
import { runThrough } from '../registry/jobs.js';
import type { ServerDeps } from '../server.js';

/** Runs a job may have: a job whose replicas stopped this many times before it ended is failed. */
export const MAX_JOB_ATTEMPTS = 3;

/** The job service over the job store, or undefined without one: its reports are then served synchronously only. */
export function jobServiceOf(
  config: Config,
  store: { readonly jobStore: JobStore | undefined; readonly jobsUrl: string | undefined },
  deps: ServerDeps,
  ready: () => boolean,
  logger: Logger,
): JobService | undefined {
  const jobs =
    store.jobsUrl === undefined || store.jobStore === undefined
      ? undefined
      : startJobService({
          store: store.jobStore,
          url: store.jobsUrl,
          settings: {
            ttlSeconds: config.jobTtlSeconds,
            maxPerCaller: config.maxJobsPerCaller,
            leaseSeconds: config.jobLeaseSeconds,
            maxAttempts: MAX_JOB_ATTEMPTS,
            maxRunning: config.poolMax,
          },
          run: runThrough(deps.registry, deps),
          logger,
          ready,
        });
  if (jobs === undefined) {
    logger.info(
      'no job store: the reports that run as jobs are served synchronously only; set QUERYGATE_JOBS_URL, or QUERYGATE_JOBS_PASSWORD beside DATABASE_URL',
    );
  }
  return jobs;
}
