import { configDefaults, defineConfig } from 'vitest/config';
import { packTestGlobs } from './test/support/pack-suites.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', ...packTestGlobs()], // and every served pack's <folder>/test/
    exclude: [...configDefaults.exclude, 'test/packaging/**'], // `npm run check:packaging`
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
  },
});
