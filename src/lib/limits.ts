/**
 * Admission control for tool calls: a token bucket per caller, a cap on each caller's calls, and
 * one bounded queue in front of the connection pool, shared fairly between callers. A call that
 * cannot be admitted is refused with how long to wait, instead of piling up, and a refused call
 * costs its caller no rate token.
 */
import { createTokenBuckets } from './token-bucket.js';

// Transports and the app build their buckets through this module, as they always have.
export { createTokenBuckets, type TokenBucket } from './token-bucket.js';

export interface LimitsOptions {
  /** Calls each caller may make per minute; also the bucket's size, so a burst of that many passes. */
  readonly callsPerMinute: number;
  /** Calls one caller may have running or waiting at once; one more is refused as busy. */
  readonly maxConcurrentPerCaller: number;
  /** Calls running at once over all callers: the pool size. */
  readonly maxActive: number;
  /** Calls waiting for a slot over all callers; beyond it a call is refused as busy. */
  readonly maxQueued: number;
  /** Longest wait in the queue before a call is refused as busy. */
  readonly maxQueueWaitMs: number;
  readonly now?: () => number;
  /** Where the per-caller rate is counted: shared by replicas, or (by default) this process's own buckets. */
  readonly rates?: RateLimiter;
}

/**
 * A per-key rate, counted wherever it is kept. Counted in this process, it answers at once, so that
 * calls reach the queue in the order they came; counted elsewhere, it answers when it has asked.
 */
export interface RateLimiter {
  /** Takes one call's worth: 0, or the seconds until one is available. */
  take(key: string): number | Promise<number>;
  /** Gives back a call's worth taken for a call that was then refused. */
  refund(key: string): void | Promise<void>;
}

export type Refusal =
  | { readonly code: 'rate_limited'; readonly retryAfterSeconds: number }
  | { readonly code: 'busy'; readonly retryAfterSeconds: number };

export type Admission = { readonly ok: true; release(): void } | ({ readonly ok: false } & Refusal);

export interface CallLimits {
  /**
   * Admits one call of a caller, waiting in the bounded queue if every slot is taken. A call whose
   * signal aborts while it waits leaves the queue.
   */
  admit(callerId: string, signal?: AbortSignal): Promise<Admission>;
  /** Calls admitted and not yet released. */
  readonly active: number;
  /**
   * Calls one caller can have running at once without waiting: the smaller of its concurrency and
   * the pool. A transport that paces one caller's requests to this is never refused as busy by them.
   */
  readonly callerCapacity: number;
  /** Resolves when no call is running (or the timeout passes), for a graceful stop. */
  drain(timeoutMs: number): Promise<boolean>;
}

const BUSY: Refusal = { code: 'busy', retryAfterSeconds: 1 };

/** A call waiting for a slot. */
interface Waiter {
  readonly caller: CallerState;
  /** Order of arrival over all callers: the oldest head of queue wins a tie. */
  readonly seq: number;
  /** Hands it a slot (true) or refuses it as busy (false); removes it from the queue either way. */
  settle(admitted: boolean): void;
}

/** One caller's place in admission; forgotten when it has nothing running or waiting. */
interface CallerState {
  readonly id: string;
  running: number;
  /** Its waiting calls, oldest first. */
  readonly queue: Waiter[];
  /** When it was last given a slot (a sequence number), so that slots go round between callers. */
  lastAdmitted: number;
}

/**
 * Fair admission: each caller has its own FIFO queue, and a freed slot goes to the waiting caller
 * with the fewest calls running, then to the one served least recently. One caller that fills the
 * pool and the queue therefore cannot make another wait behind all of its calls.
 */
export function createCallLimits(options: LimitsOptions): CallLimits {
  const rates: RateLimiter = options.rates ?? createTokenBuckets(options.callsPerMinute, options.now);
  const callers = new Map<string, CallerState>();
  /** Callers with at least one waiting call. */
  const waitingCallers = new Set<CallerState>();
  let queued = 0;
  let active = 0;
  let sequence = 0;
  let drained: Array<() => void> = [];

  const stateOf = (callerId: string): CallerState => {
    let state = callers.get(callerId);
    if (!state) {
      state = { id: callerId, running: 0, queue: [], lastAdmitted: 0 };
      callers.set(callerId, state);
    }
    return state;
  };
  const forgetIfIdle = (state: CallerState): void => {
    if (state.running === 0 && state.queue.length === 0) callers.delete(state.id);
  };

  /** Gives a caller a slot; done at once when a slot is handed over, so no other call can slip in between. */
  const grant = (state: CallerState): void => {
    state.running++;
    state.lastAdmitted = ++sequence;
  };

  const admitted = (state: CallerState): Admission => {
    return {
      ok: true,
      release: once(() => {
        state.running--;
        forgetIfIdle(state);
        const next = nextWaiter();
        if (next) {
          // The slot is handed over, so `active` does not change.
          grant(next.caller);
          next.settle(true);
        } else {
          active--;
          if (active === 0) {
            for (const done of drained) done();
            drained = [];
          }
        }
      }),
    };
  };

  /** The waiting call that gets the next free slot. */
  const nextWaiter = (): Waiter | undefined => {
    let best: Waiter | undefined;
    for (const state of waitingCallers) {
      const head = state.queue[0]!;
      if (
        !best ||
        state.running < best.caller.running ||
        (state.running === best.caller.running &&
          (state.lastAdmitted < best.caller.lastAdmitted ||
            (state.lastAdmitted === best.caller.lastAdmitted && head.seq < best.seq)))
      ) {
        best = head;
      }
    }
    return best;
  };

  /**
   * With the queue full, a caller holding fewer waiting calls than another takes the place of that
   * caller's newest one, which is refused as busy; otherwise the newcomer is refused.
   */
  const makeRoomFor = (state: CallerState): boolean => {
    let fullest: CallerState | undefined;
    for (const other of waitingCallers) {
      if (!fullest || other.queue.length > fullest.queue.length) fullest = other;
    }
    if (!fullest || fullest.queue.length <= state.queue.length + 1) return false;
    fullest.queue.at(-1)!.settle(false);
    return true;
  };

  const wait = (state: CallerState, signal: AbortSignal | undefined): Promise<boolean> =>
    new Promise<boolean>((resolve) => {
      const waiter: Waiter = {
        caller: state,
        seq: ++sequence,
        settle: (gotSlot) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
          state.queue.splice(state.queue.indexOf(waiter), 1);
          if (state.queue.length === 0) waitingCallers.delete(state);
          queued--;
          resolve(gotSlot);
        },
      };
      const giveUp = (): void => waiter.settle(false);
      const timer = setTimeout(giveUp, options.maxQueueWaitMs);
      signal?.addEventListener('abort', giveUp, { once: true });
      state.queue.push(waiter);
      waitingCallers.add(state);
      queued++;
    });

  return {
    get active() {
      return active;
    },
    callerCapacity: Math.max(1, Math.min(options.maxConcurrentPerCaller, options.maxActive)),
    admit: async (callerId, signal) => {
      const taken = rates.take(callerId);
      const rateWait = typeof taken === 'number' ? taken : await taken;
      if (rateWait > 0) return { ok: false, code: 'rate_limited', retryAfterSeconds: rateWait };
      const state = stateOf(callerId);
      const refuse = (): Admission => {
        // A refused call did not run: its token goes back, so a client that retries as told keeps its rate.
        void rates.refund(callerId);
        forgetIfIdle(state);
        return { ok: false, ...BUSY };
      };
      if (state.running + state.queue.length >= options.maxConcurrentPerCaller) return refuse();
      if (active < options.maxActive) {
        // A free slot means nobody waits: release() hands a slot to a waiting call before freeing it.
        active++;
        grant(state);
        return admitted(state);
      }
      if (signal?.aborted) return refuse();
      if (queued >= options.maxQueued && !makeRoomFor(state)) return refuse();
      if (!(await wait(state, signal))) return refuse();
      return admitted(state);
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

export interface SubscriptionLimitsOptions {
  /** Streams (subscriptions/listen) one caller may hold open at once. */
  readonly perCaller: number;
  /** Streams open at once over all callers. */
  readonly total: number;
  /** Longest a stream stays open: then it ends with its answer, and the client listens again. */
  readonly maxLifetimeMs: number;
}

export interface SubscriptionLimits {
  /** Takes a place for one stream, to be released when it ends; or says which cap refused it. */
  open(callerId: string): { readonly ok: true; release(): void } | { readonly ok: false; readonly reason: string };
  readonly maxLifetimeMs: number;
}

/** Caps on subscription streams: each holds a connection, a timer and a listener for as long as it lasts. */
export function createSubscriptionLimits(options: SubscriptionLimitsOptions): SubscriptionLimits {
  const byCaller = new Map<string, number>();
  let total = 0;
  return {
    maxLifetimeMs: options.maxLifetimeMs,
    open: (callerId) => {
      const mine = byCaller.get(callerId) ?? 0;
      if (mine >= options.perCaller) {
        return { ok: false, reason: `this caller already holds ${options.perCaller} open streams` };
      }
      if (total >= options.total) return { ok: false, reason: `the server holds ${options.total} open streams` };
      byCaller.set(callerId, mine + 1);
      total++;
      return {
        ok: true,
        release: once(() => {
          total--;
          const left = (byCaller.get(callerId) ?? 1) - 1;
          if (left === 0) byCaller.delete(callerId);
          else byCaller.set(callerId, left);
        }),
      };
    },
  };
}

/** A release that does its work the first time it is called, and nothing after: a slot is given back once. */
function once(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}
