import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import { NOT_SUITES, SLOW_SUITES, SUITE_GLOBS } from './test/support/suites.js';

export default defineConfig({
  test: {
    // One embedded cluster for every project of a run: the global setup is the root's, not a project's.
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // The suites mostly wait on PostgreSQL and child processes, so more forks than cores pays: vitest's
    // default (cores - 1) ran them one at a time here. Each file has its own databases (test/support/scratch.ts).
    maxWorkers: Math.max(3, availableParallelism()),
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: [...SUITE_GLOBS],
          exclude: [...configDefaults.exclude, ...NOT_SUITES, ...SLOW_SUITES],
        },
      },
      {
        extends: true,
        test: {
          name: 'slow',
          include: [...SLOW_SUITES],
          exclude: [...configDefaults.exclude, ...NOT_SUITES],
        },
      },
    ],
  },
});
