/**
 * Finds the packs a server serves. The engine imports no pack: each is loaded by its location, the
 * sales pack shipped with querygate by its name, any other by the path of its compiled module.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from './errors.js';
import type { Pack } from './pack.js';

/** Packs that ship with querygate, by name: where their module lies from this file. */
const SHIPPED: Readonly<Record<string, string>> = { sales: '../pack/index.js' };

export const DEFAULT_PACKS: readonly string[] = ['sales'];

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
