/**
 * The packs the test suite serves, as Pack objects: the shipped ones, then those QUERYGATE_PACKS or the
 * configuration file names (pack-suites.ts), loaded as `serve` loads them. Free of vitest's worker API,
 * so the global setup can use it too.
 */
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';
import { loadPacks } from '../../src/packs.js';
import { servedPackSpecs } from './pack-suites.js';

/** The packs querygate ships, each with its test data in the test database. */
export const SHIPPED_PACKS: readonly Pack[] = [salesPack, supportDeskPack];

/** The shipped packs and every other pack named in QUERYGATE_PACKS or the configuration file. */
export async function servedPacks(): Promise<Pack[]> {
  const named = await loadPacks(servedPackSpecs());
  const shipped = new Set(SHIPPED_PACKS.map((pack) => pack.name));
  return [...SHIPPED_PACKS, ...named.filter((pack) => !shipped.has(pack.name))];
}
