/**
 * Every pack the tests know, for suites that hold each pack to the same contract, and the reader that
 * reads each one in the shared test database.
 */
import { inject } from 'vitest';
import { supportDeskPack } from '../../examples/support-desk/pack/index.js';
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';

export const ALL_PACKS: readonly Pack[] = [salesPack, supportDeskPack];

/**
 * The URL of the role that reads `pack` in the shared test database: each pack has its own there
 * (see database.ts), so pass it as `startHarness({ readerUrl: readerUrlFor(pack), templates: pack.templates })`.
 */
export function readerUrlFor(pack: Pack): string {
  const url = inject('packReaderUrls')[pack.name];
  if (url === undefined) throw new Error(`the test database holds no pack named ${pack.name}`);
  return url;
}
