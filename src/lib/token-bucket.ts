/**
 * Token buckets kept per key and refilled continuously, up to a size that is also the rate per
 * minute (so a burst of that many passes). The rate of tool calls per caller (src/lib/limits.ts) and of
 * failed sign-ins per address (src/auth/throttle.ts) are both counted in one.
 */

export interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date (ms, on the table's clock). */
  at: number;
}

export interface BucketTableOptions {
  /** Tokens a key gains per minute; also the most it holds. */
  readonly perMinute: number;
  readonly now?: (() => number) | undefined;
  /** Most keys remembered at once: past it, `use` forgets the one least recently used. */
  readonly maxKeys?: number | undefined;
}

export interface BucketTable<B extends Bucket> {
  /** Keys remembered now. */
  readonly size: number;
  /** The key's bucket brought up to now, or undefined when the key has none. */
  find(key: string): B | undefined;
  /** The key's bucket as it stands, not brought up to now (for its other fields). */
  peek(key: string): B | undefined;
  /** The key's bucket brought up to now; a full one is kept for a key that had none. */
  open(key: string): B;
  /** Marks the key the most recently used, forgetting the least recently used past `maxKeys`. */
  use(key: string, bucket: B): void;
  /** A token back, never past the bucket's size. */
  giveBack(bucket: B): void;
  /** The seconds, at least 1, until an empty bucket holds a whole token again. */
  secondsUntilToken(bucket: B): number;
}

/**
 * A table of buckets. B may add only optional fields to Bucket (a new bucket is made with none),
 * which lets a user keep its own per-key state in the bucket and have it forgotten with it.
 */
export function createBucketTable<B extends Bucket = Bucket>(options: BucketTableOptions): BucketTable<B> {
  const now = options.now ?? Date.now;
  const perMs = options.perMinute / 60_000;
  /** In order of last `use`: the first is the one forgotten when the table is full. */
  const buckets = new Map<string, B>();
  const refill = (bucket: B): B => {
    const t = now();
    bucket.tokens = Math.min(options.perMinute, bucket.tokens + (t - bucket.at) * perMs);
    bucket.at = t;
    return bucket;
  };
  return {
    get size() {
      return buckets.size;
    },
    find: (key) => {
      const bucket = buckets.get(key);
      return bucket && refill(bucket);
    },
    peek: (key) => buckets.get(key),
    open: (key) => {
      const found = buckets.get(key);
      if (found) return refill(found);
      const bucket = { tokens: options.perMinute, at: now() } as B;
      buckets.set(key, bucket);
      return bucket;
    },
    use: (key, bucket) => {
      buckets.delete(key);
      buckets.set(key, bucket);
      if (options.maxKeys !== undefined && buckets.size > options.maxKeys) buckets.delete(buckets.keys().next().value!);
    },
    giveBack: (bucket) => {
      bucket.tokens = Math.min(options.perMinute, bucket.tokens + 1);
    },
    secondsUntilToken: (bucket) => Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)),
  };
}

export interface TokenBucket {
  /** Takes a token; returns 0, or the seconds until one is available. */
  take(key: string): number;
  /** Gives back a token taken for something that was then refused. */
  refund(key: string): void;
}

/** A token bucket per key, refilled continuously. Keys are callers, so the table stays small. */
export function createTokenBuckets(perMinute: number, now: () => number = Date.now): TokenBucket {
  const table = createBucketTable({ perMinute, now });
  return {
    take: (key) => {
      const bucket = table.open(key);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return table.secondsUntilToken(bucket);
    },
    refund: (key) => table.giveBack(table.open(key)),
  };
}
