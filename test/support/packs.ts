/**
 * Every pack the tests know, for suites that hold each pack to the same contract, and the reader that
 * reads each one in the shared test database.
 */
import { inject } from 'vitest';
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';

export const ALL_PACKS: readonly Pack[] = [salesPack];

/** The URL of the role that reads `pack` in the shared test database. */
export function readerUrlFor(_pack: Pack): string {
  return inject('readerUrl');
}
