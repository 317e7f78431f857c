import type { Config } from '../config.js';
import type { ConfigFile } from '../config-file/index.js';
import { openLiveConfig, type LiveConfig } from './live-config.js';
import type { Logger } from '../lib/logger.js';
import type { Pack } from '../pack.js';
import { VERSION } from '../protocol/identity.js';
import { hiddenByDataScope } from '../registry/access.js';
import type { Registry } from '../registry/interface.js';
import { protectedButListed } from '../registry/protected-lists.js';
import type { Tracing } from '../observability/tracing.js';

/** The registry served: the configuration file's, live (reloaded on change), traced when tracing is on. */
export interface ServedRegistry {
  readonly live: LiveConfig;
  readonly tracing: Tracing | undefined;
  readonly registry: Registry;
}

export async function servedRegistryOf(
  config: Config,
  packs: readonly Pack[],
  file: { readonly packPaths?: ReadonlyMap<string, string>; readonly configFile?: ConfigFile },
  logger: Logger,
): Promise<ServedRegistry> {
  const live = openLiveConfig(
    config,
    packs.map((pack) => ({
      pack: pack.name,
      ...(file.packPaths?.has(pack.name) ? { path: file.packPaths.get(pack.name) } : {}),
      ...(pack.smallGroupThreshold === undefined ? {} : { smallGroupThreshold: pack.smallGroupThreshold }),
      templates: pack.templates,
      ...(pack.reports ? { reports: pack.reports } : {}),
    })),
    logger,
    file.configFile,
    // The embedded database always has its job store; a database of your own, when its URL is known.
    { jobs: config.databaseUrl === undefined || config.jobsUrl !== undefined },
  );
  // Off by default; with QUERYGATE_TRACING=otlp, each call and each statement it runs is a span.
  // The OpenTelemetry SDK is loaded only then: a server without tracing does not hold its ~10 MB.
  const tracing =
    config.tracing === 'otlp'
      ? (await import('../observability/tracing.js')).createTracing(process.env, logger, VERSION)
      : undefined;
  const registry = tracing ? tracing.registry(live.registry) : live.registry;
  // Said once: a scoped caller is shown fewer tools, and nothing else would tell the operator which.
  for (const [dimension, tools] of hiddenByDataScope(live.registry)) {
    if (tools.length > 0) {
      logger.warn(`data scope ${dimension}: hidden from callers scoped on it, since they do not apply it`, { tools });
    }
  }
  // A pack that protects a count of people and lists those people's records: one line naming both.
  for (const pack of packs) for (const line of protectedButListed(pack.templates)) logger.warn(line);
  return { live, tracing, registry };
}
