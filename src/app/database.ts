import type { Config } from '../config.js';
import { yesterdayUtc } from '../lib/date-range.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';

export interface OpenDatabase {
  readonly readerUrl: string;
  /** The job store's connection string (the job role); undefined when none is configured. */
  readonly jobsUrl: string | undefined;
  /** The embedded database's own token key, made with its data folder. */
  readonly tokenKey: string | undefined;
  stop(): Promise<void>;
}

/**
 * The reader's database: DATABASE_URL, or the embedded default, created with the packs' migrations
 * and seeded with their demo data on first start. An abort (a signal during start-up) stops the
 * embedded database between its steps and gives up.
 */
export async function openDatabase(
  config: Config,
  packs: readonly Pack[],
  logger: Logger,
  signal?: AbortSignal,
): Promise<OpenDatabase> {
  if (config.databaseUrl !== undefined) {
    return {
      readerUrl: config.databaseUrl,
      jobsUrl: config.jobsUrl,
      tokenKey: undefined,
      stop: async () => undefined,
    };
  }
  const { embeddedOptionsOf, startEmbedded } = await import('../db/embedded.js');
  const embedded = await startEmbedded(
    {
      ...embeddedOptionsOf(config, packs),
      seedIfEmpty: { until: yesterdayUtc() },
      signal,
    },
    logger,
  );
  return {
    readerUrl: embedded.readerUrl,
    jobsUrl: config.jobsUrl ?? embedded.jobsUrl,
    tokenKey: embedded.tokenKey,
    stop: () => embedded.stop(),
  };
}
