/**
 * The packs querygate ships, for suites that hold each pack to the same contract, and the reader that
 * reads each pack in the shared test database. The contract suite also serves the packs named in
 * QUERYGATE_PACKS or the configuration file (target.ts, served-packs.ts).
 */
import { inject } from 'vitest';
import type { Pack } from '../../src/pack.js';
import { SHIPPED_PACKS } from './served-packs.js';

export const ALL_PACKS: readonly Pack[] = SHIPPED_PACKS;

/**
 * The URL of the role that reads `pack` in the shared test database: each pack has its own there
 * (see database.ts), so pass it as `startHarness({ readerUrl: readerUrlFor(pack), templates: pack.templates })`.
 */
export function readerUrlFor(pack: Pack): string {
  const url = inject('packReaderUrls')[pack.name];
  if (url === undefined) throw new Error(`the test database holds no pack named ${pack.name}`);
  return url;
}
