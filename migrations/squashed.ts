/**
 * The migrations squashed into 0022: 0005, 0007 to 0010, 0013 to 0016 and 0018 to 0021 made the
 * rollups, first with triggers written by hand, then with the engine's. They keep their names, so
 * that a database that ran some of them migrates on, and do nothing: 0022 takes out whatever rollup
 * design a database holds, of any of them, and makes every rollup from its declaration.
 */
import type { Migration } from 'kysely';

export const squashed: Migration = {
  async up(): Promise<void> {},
  async down(): Promise<void> {},
};

/** The names of the squashed migrations, in order. */
export const SQUASHED = [
  '0005-order-hours',
  '0007-product-days',
  '0008-region-days',
  '0009-rollup-isolation',
  '0010-rollup-currency',
  '0013-category-days',
  '0014-region-hours',
  '0015-region-rollups',
  '0016-rollup-grants',
  '0018-category-lock',
  '0019-rollup-range-rebuild',
  '0020-order-rollups',
  '0021-product-days',
] as const;
