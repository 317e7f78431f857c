/** Declared rollups: what a pack declares, the migration that makes them, and their check. */
export { checkRollupDeclaration } from './declaration.js';
export type { DerivedFact, RollupDeclaration, RollupKey, RollupMeasure, RollupParent } from './declaration.js';
export { rollupDrift } from './drift.js';
export { readRollupCatalog, rollupGrantsMigration, rollupMigration } from './migration.js';
export { rollupNames } from './base-rows.js';
