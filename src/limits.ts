/**
 * Admission control for tool calls: a token bucket per caller, a cap on each caller's concurrent
 * calls, and one bounded queue in front of the connection pool. A call that cannot be admitted is
 * refused at once with how long to wait, instead of piling up.
 */
export interface LimitsOptions {
  /** Calls each caller may make per minute; also the bucket's size, so a burst of that many passes. */
  readonly callsPerMinute: number;
  /** Calls one caller may have running at once. */
  readonly maxConcurrentPerCaller: number;
  /** Calls running at once over all callers: the pool size. */
  readonly maxActive: number;
  /** Calls waiting for a slot over all callers; one more is refused as busy. */
  readonly maxQueued: number;
  /** Longest wait in the queue before a call is refused as busy. */
  readonly maxQueueWaitMs: number;
  readonly now?: () => number;
}

export type Refusal =
  | { readonly code: 'rate_limited'; readonly retryAfterSeconds: number }
  | { readonly code: 'busy'; readonly retryAfterSeconds: number };

export type Admission = { readonly ok: true; release(): void } | ({ readonly ok: false } & Refusal);

export interface CallLimits {
  /** Admits one call of a caller, waiting in the bounded queue if every slot is taken. */
  admit(callerId: string): Promise<Admission>;
  /** Calls admitted and not yet released. */
  readonly active: number;
  /** Resolves when no call is running (or the timeout passes), for a graceful stop. */
  drain(timeoutMs: number): Promise<boolean>;
}

export interface TokenBucket {
  /** Takes a token; returns 0, or the seconds until one is available. */
  take(key: string): number;
}

/** A token bucket per key, refilled continuously. Keys are callers, so the map stays small. */
export function createTokenBuckets(perMinute: number, now: () => number = Date.now): TokenBucket {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const perMs = perMinute / 60_000;
  return {
    take: (key) => {
      const t = now();
      const bucket = buckets.get(key) ?? { tokens: perMinute, at: t };
      bucket.tokens = Math.min(perMinute, bucket.tokens + (t - bucket.at) * perMs);
      bucket.at = t;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
    },
  };
}

export function createCallLimits(options: LimitsOptions): CallLimits {
  const buckets = createTokenBuckets(options.callsPerMinute, options.now);
  const perCaller = new Map<string, number>();
  const waiting: Array<() => void> = [];
  let active = 0;
  let drained: Array<() => void> = [];

  const release = (callerId: string): void => {
    active--;
    const mine = (perCaller.get(callerId) ?? 1) - 1;
    if (mine === 0) perCaller.delete(callerId);
    else perCaller.set(callerId, mine);
    const next = waiting.shift();
    if (next) next();
    else if (active === 0) {
      for (const done of drained) done();
      drained = [];
    }
  };

  const admitted = (callerId: string): Admission => {
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        release(callerId);
      },
    };
  };

  return {
    get active() {
      return active;
    },
    admit: async (callerId) => {
      const wait = buckets.take(callerId);
      if (wait > 0) return { ok: false, code: 'rate_limited', retryAfterSeconds: wait };
      const mine = perCaller.get(callerId) ?? 0;
      if (mine >= options.maxConcurrentPerCaller) return { ok: false, code: 'busy', retryAfterSeconds: 1 };
      perCaller.set(callerId, mine + 1);
      if (active < options.maxActive) {
        active++;
        return admitted(callerId);
      }
      if (waiting.length >= options.maxQueued) {
        perCaller.set(callerId, mine);
        if (mine === 0) perCaller.delete(callerId);
        return { ok: false, code: 'busy', retryAfterSeconds: 1 };
      }
      // Wait for a slot; the slot is handed over by release(), so `active` does not change here.
      const gotSlot = await new Promise<boolean>((resolve) => {
        const take = (): void => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(take), 1);
          resolve(false);
        }, options.maxQueueWaitMs);
        waiting.push(take);
      });
      if (!gotSlot) {
        const left = (perCaller.get(callerId) ?? 1) - 1;
        if (left === 0) perCaller.delete(callerId);
        else perCaller.set(callerId, left);
        return { ok: false, code: 'busy', retryAfterSeconds: 1 };
      }
      active++;
      return admitted(callerId);
    },
    drain: (timeoutMs) =>
      active === 0
        ? Promise.resolve(true)
        : new Promise((resolve) => {
            const timer = setTimeout(() => resolve(false), timeoutMs);
            drained.push(() => {
              clearTimeout(timer);
              resolve(true);
            });
          }),
  };
}
