/** Admission control: the token bucket, per-caller concurrency and the bounded queue. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createCallLimits, createTokenBuckets, type Admission } from '../src/limits.js';
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

describe('item 9: admission', () => {
  const base = {
    callsPerMinute: 1000,
    maxConcurrentPerCaller: 10,
    maxActive: 1,
    maxQueued: 20,
    maxQueueWaitMs: 60_000,
  };

  it('item 9: a call refused as busy (over its concurrency, a full queue, the queue timeout, cancelled while waiting) costs no rate token', async () => {
    const rate = 3;
    const limits = createCallLimits({
      callsPerMinute: rate,
      maxConcurrentPerCaller: 2,
      maxActive: 1,
      maxQueued: 1,
      maxQueueWaitMs: 50,
      now: () => 0, // the clock stands still: no token comes back by refilling
    });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    // Waits, then is refused when the queue timeout passes.
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'busy' });
    // Over its concurrency (one running, one waiting), then over the full queue (another caller waits).
    const waiting = limits.admit('a');
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'busy' });
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'busy' });
    expect(await waiting).toMatchObject({ ok: false, code: 'busy' });
    // Cancelled while waiting.
    const abort = new AbortController();
    const cancelled = limits.admit('a', abort.signal);
    abort.abort();
    expect(await cancelled).toMatchObject({ ok: false, code: 'busy' });
    if (first.ok) first.release();
    // The clock has not moved: only the admitted call spent a token, so `rate - 1` calls are left.
    for (let i = 1; i < rate; i++) {
      const call = await limits.admit('a');
      expect(call.ok, `call ${i + 1}`).toBe(true);
      if (call.ok) call.release();
    }
    expect(await limits.admit('a')).toMatchObject({ ok: false, code: 'rate_limited' });
  });

  it('item 9: a freed slot goes to the waiting caller with the fewest calls running, then the one served least recently', async () => {
    const limits = createCallLimits(base);
    const served: string[] = [];
    const running: Array<() => void> = [];
    const call = (caller: string): Promise<void> =>
      limits.admit(caller).then((admission) => {
        if (!admission.ok) throw new Error(`${caller} refused: ${admission.code}`);
        served.push(caller);
        running.push(() => admission.release());
      });
    // a holds the only slot and queues two more; then b queues two, c and d one each.
    const calls = ['a', 'a', 'a', 'b', 'b', 'c', 'd'].map(call);
    for (let i = 1; i < calls.length; i++) {
      await Promise.resolve();
      running.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(calls);
    // First-come-first-served would give a a a b b c d: a's backlog would hold everyone up.
    expect(served).toEqual(['a', 'b', 'c', 'd', 'a', 'b', 'a']);
    running.shift()!();
    expect(limits.active).toBe(0);
  });

  it('item 9: with the queue full, a caller with fewer waiting calls takes the place of the newest call of the one with most', async () => {
    const limits = createCallLimits({ ...base, maxQueued: 3 });
    const first = await limits.admit('a');
    expect(first.ok).toBe(true);
    const a = [limits.admit('a'), limits.admit('a'), limits.admit('a')];
    const b = limits.admit('b'); // takes the place of a's newest
    expect(await a[2]).toMatchObject({ ok: false, code: 'busy' });
    const c = limits.admit('c'); // a still has two waiting: its newest gives way again
    expect(await a[1]).toMatchObject({ ok: false, code: 'busy' });
    // a, b and c each have one waiting now: d has no better claim and is refused.
    expect(await limits.admit('d')).toMatchObject({ ok: false, code: 'busy' });
    const order: string[] = [];
    const settle = async (name: string, admission: Promise<Admission>): Promise<void> => {
      const got = await admission;
      expect(got.ok, name).toBe(true);
      order.push(name);
      if (got.ok) got.release();
    };
    const rest = Promise.all([settle('a', a[0]!), settle('b', b), settle('c', c)]);
    if (first.ok) first.release();
    await rest;
    expect(order).toEqual(['b', 'c', 'a']);
    expect(limits.active).toBe(0);
  });

  it('item 9: QUERYGATE_QUEUE_TIMEOUT_MS is its own setting, 2000 ms by default, and a bad value names the variable', () => {
    expect(loadConfig({}).queueTimeoutMs).toBe(2000);
    expect(loadConfig({ QUERYGATE_QUEUE_TIMEOUT_MS: '750', QUERYGATE_STATEMENT_TIMEOUT_MS: '9000' })).toMatchObject({
      queueTimeoutMs: 750,
      statementTimeoutMs: 9000,
    });
    expect(() => loadConfig({ QUERYGATE_QUEUE_TIMEOUT_MS: '0' })).toThrow(
      /QUERYGATE_QUEUE_TIMEOUT_MS: "0" is not a positive integer/,
    );
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
