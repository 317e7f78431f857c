import type { Config } from '../config.js';
import { adminKysely } from '../db/connect.js';
import { REMAKE_FIX } from '../db/doctor/declared-sources.js';
import { rollupDrift, rollupNames } from '../db/rollups/index.js';
import { embeddedOptionsOf, startEmbedded } from '../db/embedded.js';
import { prepareDatabase, type PrepareOptions } from '../db/prepare.js';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';

/** Runs an admin task against ADMIN_DATABASE_URL, or against the embedded database when it is unset. */
async function withAdmin(
  config: Config,
  packs: readonly Pack[],
  logger: Logger,
  task: (adminUrl: string) => Promise<void>,
): Promise<void> {
  if (config.adminDatabaseUrl) return task(config.adminDatabaseUrl);
  const embedded = await startEmbedded(embeddedOptionsOf(config, packs), logger);
  try {
    await task(embedded.adminUrl);
  } finally {
    await embedded.stop();
  }
}

/** `querygate migrate`: the packs' migrations and the roles, as an admin. */
export async function migrate(config: Config, packs: readonly Pack[], logger: Logger): Promise<void> {
  await withAdmin(config, packs, logger, (adminUrl) => prepareDatabase(adminUrl, { ...roles(config), packs }, logger));
}

/** The roles `migrate` and `seed` make, with the passwords the environment gives them. */
function roles(config: Config): Pick<PrepareOptions, 'readerRole' | 'readerPassword' | 'jobsRole' | 'jobsPassword'> {
  return {
    readerRole: config.readerRole,
    jobsRole: config.jobsRole,
    ...(config.readerPassword === undefined ? {} : { readerPassword: config.readerPassword }),
    ...(config.jobsPassword === undefined ? {} : { jobsPassword: config.jobsPassword }),
  };
}

/** `querygate seed`: the packs' demo data, as an admin. */
export async function seed(
  config: Config,
  packs: readonly Pack[],
  logger: Logger,
  options: { pack: string | undefined; count: number | undefined; until: string; replace: boolean; ifEmpty: boolean },
): Promise<void> {
  if (options.replace && options.ifEmpty) throw new ConfigError('--replace and --if-empty exclude each other');
  const seeded = packs.filter((p) => p.seed && (options.pack === undefined || p.name === options.pack));
  if (seeded.length === 0) {
    throw new ConfigError(
      options.pack === undefined
        ? 'no pack served here has demo data'
        : `--pack: "${options.pack}" is not a served pack with demo data; served: ${packs.map((p) => p.name).join(', ')}`,
    );
  }
  const counts = Object.fromEntries(seeded.map((p) => [p.name, options.count ?? p.seed!.defaultCount]));
  await withAdmin(config, packs, logger, async (adminUrl) => {
    await prepareDatabase(
      adminUrl,
      {
        ...roles(config),
        packs,
        ...(options.ifEmpty ? { seedIfEmpty: { until: options.until, counts } } : {}),
      },
      logger,
    );
    if (options.ifEmpty) return;
    for (const pack of seeded) {
      await pack.seed!.run(
        adminUrl,
        { count: counts[pack.name], until: options.until, replace: options.replace },
        logger,
      );
    }
  });
}

/**
 * `querygate check-rollups`: each declared rollup of the served packs against its base rows, as an
 * admin (the reader cannot read the base tables). Prints one line a rollup; exit code 1 when one drifted.
 */
export async function checkRollups(config: Config, packs: readonly Pack[], logger: Logger): Promise<void> {
  await withAdmin(config, packs, logger, async (adminUrl) => {
    const db = adminKysely(adminUrl);
    try {
      const lines: string[] = [];
      for (const pack of packs) {
        for (const rollup of pack.rollups ?? []) {
          const name = `${rollup.schema}.${rollup.name}`;
          // A declaration changed without its migration reads columns its table lacks: one line, not a stack.
          const drift = await rollupDrift(db, rollup).catch((err: unknown) => {
            if (typeof (err as { code?: unknown }).code !== 'string') throw err;
            return `its declaration does not match its table (${(err as Error).message}); fix: ${REMAKE_FIX}`;
          });
          if (typeof drift === 'string') {
            process.exitCode = 1;
            lines.push(`FAIL  ${name}: ${drift}`);
            continue;
          }
          if (drift > 0) process.exitCode = 1;
          lines.push(
            drift === 0
              ? `OK    ${name}: equal to its base rows`
              : `FAIL  ${name}: ${drift} rows differ from its base rows; fix: select ${rollupNames(rollup).rebuild}(), and find the write that went round its triggers`,
          );
        }
      }
      process.stdout.write(`${lines.length === 0 ? 'no declared rollups in the served packs' : lines.join('\n')}\n`);
    } finally {
      await db.destroy();
    }
  });
}
