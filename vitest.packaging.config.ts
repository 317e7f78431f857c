import { defineConfig } from 'vitest/config';

/**
 * The install checks (`npm run check:packaging`): each installs querygate in a scratch folder the way a
 * user would and starts it on an embedded database of its own. Slow, so not part of `npm test`; one
 * file at a time, since each builds and installs from the registry.
 */
export default defineConfig({
  test: {
    include: ['test/packaging/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
  },
});
