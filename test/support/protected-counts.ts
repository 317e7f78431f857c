/**
 * The cell-key rule of protected counts, written again here from docs/security.md for the tests'
 * expected figures (never the server's code): the seed the harness's token key gives, each person's
 * key as SQL for the admin connection, and a cell's released figure from its true count and key sum.
 */
import { createHmac } from 'node:crypto';

/** The harness's token key (test/support/harness.ts) and the seed the server derives from it. */
export const TEST_SEED = seedOf('test-token-key');

/** The seed of the person keys: the token of entity "cell_key", id "seed", under the token key. */
export function seedOf(tokenKey: string): string {
  return 'cel_' + createHmac('sha256', tokenKey).update('cell_key:seed').digest('base64url').slice(0, 16);
}

/** A person's key as admin SQL over a column `person` (the seed bound as $1). */
export const personKeySql = (person: string): string =>
  `(hashtextextended($1::text || ':' || (${person})::text, 0) & 4294967295)`;

/** The released figure of a cell of `count` distinct people whose keys add up to `keySum`. */
export function releasedOf(count: number, keySum: bigint, threshold: number): number {
  if (count === 0) return 0;
  const u = Number(keySum % 4294967296n) / 4294967296;
  if (count < threshold) return u * threshold < count ? threshold : 0;
  return Math.max(threshold, count + Math.floor(u * 5) - 2);
}
