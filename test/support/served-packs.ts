/**
 * The packs the test suite serves, as Pack objects: the shipped ones, then those QUERYGATE_PACKS or the
 * configuration file names (pack-suites.ts), loaded as `serve` loads them. Free of vitest's worker API,
 * so the global setup can use it too.
 */
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';
import { loadPacks } from '../../src/packs.js';
import { EXAMPLE_PACK_SPECS, servedPackSpecs } from './pack-suites.js';

/** The packs querygate ships, each with its test data in the test database. */
export const SHIPPED_PACKS: readonly Pack[] = [salesPack, supportDeskPack];

/**
 * The shipped packs, every other pack under examples/, and every pack named in QUERYGATE_PACKS or the
 * configuration file: each name once (a pack named by its compiled path is the one under examples/).
 */
export async function servedPacks(): Promise<Pack[]> {
  const seen = new Set(SHIPPED_PACKS.map((pack) => pack.name));
  const others: Pack[] = [];
  for (const spec of [...EXAMPLE_PACK_SPECS, ...servedPackSpecs()]) {
    if (spec === 'sales') continue;
    const [pack] = await loadPacks([spec]);
    if (pack === undefined || seen.has(pack.name)) continue;
    seen.add(pack.name);
    others.push(pack);
  }
  return [...SHIPPED_PACKS, ...others];
}
