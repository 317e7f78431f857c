/**
 * The configuration file while serving: read once at start-up (a bad file stops the server), then
 * reloaded when it changes and on SIGHUP. A reload that fails (unreadable, invalid, naming a tool
 * that does not exist) is refused with the reason in the log, and the configuration in force stays;
 * one that passes is in force for the next request.
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { ScopeGrants, Toolsets } from '../auth/index.js';
import type { Config } from '../config.js';
import {
  parseConfigFile,
  readConfigFile,
  resolveConfigFile,
  type AvailablePack,
  type ConfigFile,
  type ConfigFileOptions,
  type ResolvedConfig,
} from '../config-file/index.js';
import { ConfigError } from '../lib/errors.js';
import { createLiveRegistry, type LiveRegistry } from '../registry/live.js';
import type { Logger } from '../lib/logger.js';
import { createRegistry } from '../registry/index.js';
import { DEFAULT_SMALL_GROUP_THRESHOLD, type AnyTemplate, type QueryContext } from '../registry/types.js';
import type { AnyReport } from '../reports.js';

/** Editors save by writing a new file and renaming it over the old one: several events, one reload. */
const DEBOUNCE_MS = 200;
/**
 * A file is applied only when it reads the same twice this far apart: a tool that writes it in two
 * steps must not have its first half (where a key left out means every tool) served in between.
 */
const SETTLE_MS = 500;

export interface ConfigWatcher {
  close(): void;
}

/**
 * Reloads the file at `path` when it changes (its folder is watched, so a file replaced by a rename
 * is seen) and on SIGHUP, and hands each valid one to `target.apply`. A file that does not read or
 * validate, or that `apply` throws on, is refused with a logged reason naming the field.
 */
export function watchConfig(
  path: string,
  target: { apply(config: ConfigFile): void | Promise<void> },
  logger: Logger,
  options: ConfigFileOptions & { readonly debounceMs?: number; readonly settleMs?: number },
): ConfigWatcher {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  /** One reload at a time; a change during one asks for one more after it. */
  let running: Promise<void> | undefined;
  let again = false;

  const reload = async (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          const first = readText(path);
          await new Promise((settled) => setTimeout(settled, options.settleMs ?? SETTLE_MS).unref());
          if (closed) return;
          if (readText(path) !== first) {
            // Read again, and wait again, until two reads agree.
            logger.info('configuration file still changing; reloading once it settles', { file: path });
            again = true;
            continue;
          }
          const config = readConfigFile(path, options);
          if (closed) return;
          await target.apply(config);
          logger.info('configuration file reloaded', { file: path });
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          logger.error('configuration file refused; the configuration in force stays', { file: path, reason });
        }
      } while (again && !closed);
    })().finally(() => (running = undefined));
    return running;
  };
  const schedule = (delayMs: number): void => {
    clearTimeout(timer);
    timer = setTimeout(() => void reload(), delayMs);
    timer.unref();
  };

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(resolve(path)), (_event, changed) => {
      if (changed === null || changed === name) schedule(options.debounceMs ?? DEBOUNCE_MS);
    });
    watcher.unref();
    watcher.on('error', (err) =>
      logger.warn('stopped watching the configuration file', { file: path, reason: err.message }),
    );
  } catch (err) {
    logger.warn('cannot watch the configuration file; SIGHUP still reloads it', {
      file: path,
      reason: (err as Error).message,
    });
  }
  const onHangUp = (): void => {
    logger.info('SIGHUP: reloading the configuration file', { file: path });
    schedule(0);
  };
  process.on('SIGHUP', onHangUp);

  return {
    close: () => {
      closed = true;
      clearTimeout(timer);
      watcher?.close();
      process.off('SIGHUP', onHangUp);
    },
  };
}

/** The file's text, or undefined when it cannot be read (the reload then reports why). */
function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** A pack's templates as the server can serve them. */
export interface ServablePack extends AvailablePack {
  readonly templates: readonly AnyTemplate[];
  readonly reports?: readonly AnyReport[];
}

export interface LiveConfig {
  /** The tools in force; it tells its listeners when a reload changes them. */
  readonly registry: LiveRegistry;
  /** The query context in force: its time zone is the file's, or QUERYGATE_TIME_ZONE. */
  readonly ctx: QueryContext;
  /** The toolsets in force, for bearer tokens that name one. */
  readonly toolsets: Toolsets;
  /** The scopes in force: the toolsets each grants. */
  readonly scopes: ScopeGrants;
  /** The masking key the file sets, if any; it changes only with a restart. */
  readonly tokenKey: string | undefined;
  /** The configuration in force. */
  current(): ResolvedConfig;
  /** Starts reloading the file (when there is one) on changes and SIGHUP. */
  watch(): void;
  close(): void;
}

/**
 * The server's configuration from QUERYGATE_CONFIG, or, without it, every available template with
 * the environment's settings. Throws a ConfigError when the file is bad: the server must not start.
 */
export function openLiveConfig(
  config: Config,
  available: readonly ServablePack[],
  logger: Logger,
  /** The file as read when the packs were loaded, so that both come from the same version of it. */
  initial?: ConfigFile,
  /** Whether a job store is there, so that the reports that declare `job` are served as jobs too. */
  served: { readonly jobs?: boolean } = {},
): LiveConfig {
  const options: ConfigFileOptions = { statementTimeoutMs: config.statementTimeoutMs };
  const build = (file: ConfigFile) => {
    const resolved = resolveConfigFile(file, available);
    const chosen = <T extends { name: string }>(pack: ServablePack, all: readonly T[]): T[] =>
      all.filter((t) => (resolved.selection.get(pack.pack) ?? []).includes(t.name));
    const templates = available.flatMap((pack) => chosen(pack, pack.templates));
    const reports = available.flatMap((pack) => chosen(pack, pack.reports ?? []));
    const smallGroupThresholds: Record<string, number> = Object.fromEntries(
      available.flatMap((pack) =>
        pack.templates.map((t) => [
          t.name,
          resolved.smallGroupThreshold ?? pack.smallGroupThreshold ?? DEFAULT_SMALL_GROUP_THRESHOLD,
        ]),
      ),
    );
    return {
      resolved,
      smallGroupThresholds,
      registry: createRegistry(templates, {
        reports,
        jobs: served.jobs ?? false,
        limits: resolved.limits,
        smallGroupThresholds,
      }),
      toolsets: new Map(Object.entries(resolved.toolsets).map(([name, tools]) => [name, new Set(tools)])),
      scopes: new Map(Object.entries(resolved.scopes)),
    };
  };
  const path = config.configFile;
  let state = build(initial ?? (path === undefined ? parseConfigFile({}, options) : readConfigFile(path, options)));
  const registry = createLiveRegistry(state.registry);
  const tokenKey = state.resolved.tokenKey;
  let watcher: ConfigWatcher | undefined;

  const apply = (file: ConfigFile): void => {
    if (file.tokenKey !== tokenKey) {
      throw new ConfigError('QUERYGATE_CONFIG token_key: changes only with a restart, since every token would change');
    }
    if (JSON.stringify(file.oauth) !== JSON.stringify(state.resolved.oauth)) {
      throw new ConfigError('QUERYGATE_CONFIG oauth: changes only with a restart');
    }
    const before = state;
    state = build(file);
    registry.replace(state.registry);
    const widened = widenings(before, state);
    if (widened.length > 0) logger.warn('configuration reload widens access', { file: path, widened });
  };
  return {
    registry,
    ctx: {
      get timeZone() {
        return state.resolved.timeZone ?? config.timeZone;
      },
    },
    toolsets: () => state.toolsets,
    scopes: () => state.scopes,
    tokenKey,
    current: () => state.resolved,
    watch: () => {
      if (path !== undefined && watcher === undefined) watcher = watchConfig(path, { apply }, logger, options);
    },
    close: () => watcher?.close(),
  };
}

interface AccessState {
  readonly resolved: ResolvedConfig;
  readonly smallGroupThresholds: Readonly<Record<string, number>>;
}

/**
 * What a reload opens that was closed before, one phrase each: tools served, tools a toolset gains,
 * toolsets a scope gains, protected counts released at a lower threshold. Narrowing is not news worth a warning.
 */
function widenings(before: AccessState, after: AccessState): string[] {
  const added = (was: readonly string[] | undefined, now: readonly string[]): string[] =>
    now.filter((item) => !(was ?? []).includes(item));
  const found: string[] = [];
  const tools = added(before.resolved.tools, after.resolved.tools);
  if (tools.length > 0) found.push(`tools served: ${tools.join(', ')}`);
  for (const [name, list] of Object.entries(after.resolved.toolsets)) {
    const more = added(before.resolved.toolsets[name], list);
    if (more.length > 0) found.push(`toolset ${name}: ${more.join(', ')}`);
  }
  for (const [name, list] of Object.entries(after.resolved.scopes)) {
    const more = added(before.resolved.scopes[name], list);
    if (more.length > 0) found.push(`scope ${name}: ${more.join(', ')}`);
  }
  for (const [tool, threshold] of Object.entries(after.smallGroupThresholds)) {
    const was = before.smallGroupThresholds[tool];
    if (was !== undefined && threshold < was && after.resolved.tools.includes(tool)) {
      found.push(`small_group_threshold of ${tool}: ${was} to ${threshold}`);
    }
  }
  return found;
}
