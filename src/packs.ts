/**
 * Finds the packs a server serves. The engine imports no pack: each is loaded by its location, the
 * sales pack shipped with querygate by its name, any other by the path of its compiled module.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from './config.js';
import { readConfigFile, type ConfigFile } from './config-file/index.js';
import { ConfigError } from './lib/errors.js';
import type { Pack } from './pack.js';

/** Packs that ship with querygate, by name: where their module lies from this file. */
const SHIPPED: Readonly<Record<string, string>> = { sales: '../pack/index.js' };

/** Where a pack spec points: a shipped pack's name, or a path (from `base`) to a module that exports a pack. */
export function packLocation(spec: string, base: string = process.cwd()): URL {
  const shipped = SHIPPED[spec];
  if (shipped !== undefined) return new URL(shipped, import.meta.url);
  if (!/[/\\]|\.[cm]?js$/.test(spec)) {
    throw new ConfigError(
      `pack "${spec}": not a pack shipped with querygate (${Object.keys(SHIPPED).join(', ')}) nor a path to a pack module`,
    );
  }
  return pathToFileURL(isAbsolute(spec) ? spec : resolve(base, spec));
}

export async function loadPack(spec: string, base?: string): Promise<Pack> {
  const location = packLocation(spec, base);
  let module: Record<string, unknown>;
  try {
    module = (await import(location.href)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`pack "${spec}": cannot load ${location.pathname}: ${(err as Error).message}`);
  }
  const pack = module.default ?? module.pack;
  if (!isPack(pack)) {
    throw new ConfigError(`pack "${spec}": ${location.pathname} must export a pack made with definePack (as default)`);
  }
  return pack;
}

/** Loads each pack once; two packs of one name are refused. */
export async function loadPacks(specs: readonly string[], base?: string): Promise<Pack[]> {
  const packs: Pack[] = [];
  for (const spec of specs) {
    const pack = await loadPack(spec, base);
    if (packs.some((p) => p.name === pack.name)) throw new ConfigError(`pack "${pack.name}" is named twice`);
    packs.push(pack);
  }
  return packs;
}

function isPack(value: unknown): value is Pack {
  if (typeof value !== 'object' || value === null) return false;
  const pack = value as Partial<Pack>;
  return (
    typeof pack.name === 'string' &&
    /^[a-z][a-z0-9_]{0,40}$/.test(pack.name) &&
    Array.isArray(pack.templates) &&
    typeof pack.migrations === 'function' &&
    Array.isArray(pack.readerSchemas) &&
    typeof pack.personalColumns === 'object'
  );
}

export interface ServedPacks {
  readonly packs: readonly Pack[];
  /** For each pack the configuration file names by `path`: that path as written there, by pack name. */
  readonly paths: ReadonlyMap<string, string>;
  /** The configuration file as read, when there is one. */
  readonly file?: ConfigFile;
}

/**
 * The packs a server loads: those the configuration file names (a `path` is read from the file's
 * folder), else QUERYGATE_PACKS, else the sales pack. A reload may serve fewer of their templates,
 * but a pack the server did not load at start-up needs a restart.
 */
export async function packsToServe(config: Config): Promise<ServedPacks> {
  const file =
    config.configFile === undefined
      ? undefined
      : readConfigFile(config.configFile, { statementTimeoutMs: config.statementTimeoutMs });
  if (file?.packs === undefined) {
    return { packs: await loadPacks(config.packs), paths: new Map(), ...(file ? { file } : {}) };
  }
  const base = dirname(resolve(config.configFile!));
  const packs: Pack[] = [];
  const paths = new Map<string, string>();
  for (const entry of file.packs) {
    const pack = await loadPack('name' in entry ? entry.name : entry.path, base);
    if (packs.some((p) => p.name === pack.name)) throw new ConfigError(`pack "${pack.name}" is named twice`);
    packs.push(pack);
    if ('path' in entry) paths.set(pack.name, entry.path);
  }
  return { packs, paths, file };
}
