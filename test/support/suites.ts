/**
 * Which suites `npm test` runs (the `fast` project) and which only `npm run test:all` runs (`slow`).
 * Slow is what drives browsers (Chromium), starts clusters of its own or several processes, or walks
 * an isolation matrix: minutes of wall time, and most of the machine while it runs. Every other
 * `test/**` suite is fast; test/suite-split.test.ts holds every file to exactly one project.
 */
import { packTestGlobs } from './pack-suites.js';

/** The slow suites, as paths from the repository's root. */
export const SLOW_SUITES: readonly string[] = [
  'test/db/embedded.test.ts',
  'test/jobs/job-replicas.test.ts',
  'test/jobs/job-retry.test.ts',
  'test/live-config.test.ts',
  'test/auth/oauth.test.ts',
  'test/pack-suite.test.ts',
  'test/db/pgbouncer.test.ts',
  'test/db/reader-reach.test.ts',
  'test/transports/replicas.test.ts',
  'test/reports/report-cli.test.ts',
  'test/reports/report-schedules.test.ts',
  'test/reports/report-html.test.ts',
  'test/resilience.test.ts',
  'test/migrations/rollup-isolation.test.ts',
  'test/db/standby.test.ts',
  'test/transports/stdio-callers.test.ts',
  'test/transports/stdio.test.ts',
];

/**
 * Where suites live: test/, and the test/ folder of every pack the suite serves (the shipped ones and
 * those named in QUERYGATE_PACKS or the configuration file). The install checks under test/packaging/
 * run apart (`npm run check:packaging`).
 */
export const SUITE_GLOBS: readonly string[] = ['test/**/*.test.ts', ...packTestGlobs()];
export const NOT_SUITES: readonly string[] = ['test/packaging/**'];
