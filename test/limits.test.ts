/** Admission control: the token bucket, per-caller concurrency and the bounded queue. */
import { describe, expect, it } from 'vitest';
import { createCallLimits, createTokenBuckets } from '../src/limits.js';
import { startHarness, textOf } from './support/harness.js';

const week = { start_date: '2025-06-01', end_date: '2025-06-07' };

describe('the token bucket', () => {
  it('lets a burst of N through, then one per 60/N seconds, per caller', () => {
    let now = 0;
    const buckets = createTokenBuckets(60, () => now);
    for (let i = 0; i < 60; i++) expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(1); // one token a second
    expect(buckets.take('b')).toBe(0); // another caller has a bucket of its own
    now += 1000;
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(1);
  });

  it('says how long to wait when the rate is slow', () => {
    let now = 0;
    const buckets = createTokenBuckets(2, () => now);
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(0);
    expect(buckets.take('a')).toBe(30);
    now += 29_000;
    expect(buckets.take('a')).toBe(1);
  });
});

describe('call limits', () => {
  const options = { callsPerMinute: 1000, maxQueueWaitMs: 60_000 };

  it("refuses a caller's call beyond its concurrency as busy, and frees the slot on release", async () => {
    const limits = createCallLimits({ ...options, maxConcurrentPerCaller: 2, maxActive: 10, maxQueued: 10 });
    const a = await limits.admit('x');
    const b = await limits.admit('x');
    expect([a.ok, b.ok]).toEqual([true, true]);
    expect(await limits.admit('x')).toMatchObject({ ok: false, code: 'busy' });
    expect((await limits.admit('y')).ok).toBe(true);
    if (a.ok) a.release();
    expect((await limits.admit('x')).ok).toBe(true);
  });

  it('queues up to maxQueued calls when every slot is taken, refuses the next, and hands slots over in order', async () => {
    const limits = createCallLimits({ ...options, maxConcurrentPerCaller: 10, maxActive: 1, maxQueued: 1 });
    const first = await limits.admit('a');
    const queued = limits.admit('b');
    expect(await limits.admit('c')).toMatchObject({ ok: false, code: 'busy' });
    expect(limits.active).toBe(1);
    if (first.ok) first.release();
    const second = await queued;
    expect(second.ok).toBe(true);
    expect(limits.active).toBe(1);
    if (second.ok) second.release();
    expect(limits.active).toBe(0);
    expect(await limits.drain(1000)).toBe(true);
  });

  it('refuses a queued call as busy when no slot frees up in time', async () => {
    const limits = createCallLimits({
      ...options,
      maxConcurrentPerCaller: 10,
      maxActive: 1,
      maxQueued: 5,
      maxQueueWaitMs: 50,
    });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    expect(await limits.admit('b')).toMatchObject({ ok: false, code: 'busy' });
    expect(limits.active).toBe(1);
  });
});

describe('a caller over its rate', () => {
  it('gets an isError result saying when to retry, and an audit line marked refused', async () => {
    let now = 1_000_000;
    const harness = await startHarness({ limits: { callsPerMinute: 2, now: () => now } });
    try {
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
      const refused = await harness.call('query_order_count', week);
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('Too many calls: the rate limit is reached. Retry in 30 seconds.');
      expect(textOf(refused)).toContain('code: rate_limited');
      expect(harness.audits.at(-1)).toMatchObject({ outcome: 'refused', error_code: 'rate_limited' });
      now += 30_000;
      expect((await harness.call('query_order_count', week)).isError).toBeFalsy();
    } finally {
      await harness.close();
    }
  });
});
