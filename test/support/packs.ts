/** Every pack the test database holds: the contract suite and the public-contract snapshot cover each. */
import { salesPack } from '../../pack/index.js';
import type { Pack } from '../../src/pack.js';

export const ALL_PACKS: readonly Pack[] = [salesPack];
