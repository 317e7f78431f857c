/**
 * Failed authentication, throttled per source address: each address has a small bucket of failures
 * that refills over a minute, and an address whose bucket is empty is refused with 429 before its
 * token is even looked at. The table of addresses is bounded: past its size the address least
 * recently seen is forgotten, so a flood from many addresses costs a fixed amount of memory.
 */
import { isIPv6 } from 'node:net';
import { createBucketTable, type Bucket } from '../lib/token-bucket.js';

export interface FailureThrottle {
  /** 0 when the address may try, or the seconds until it may. */
  wait(address: string): number;
  /** Records a failed attempt from the address (or charges one before it is known to be good). */
  failed(address: string): void;
  /** Gives back an attempt charged before it proved good. */
  refund(address: string): void;
  /**
   * Whether this is the first refusal of the address since it was last let through: the audit log
   * gets one line per episode, not one per refused request.
   */
  firstRefusal(address: string): boolean;
  /** Addresses tracked now, for tests and metrics. */
  readonly size: number;
}

export interface ThrottleOptions {
  /** Failed attempts an address may make per minute; also the burst. */
  readonly failuresPerMinute: number;
  /** Most addresses remembered at once. */
  readonly maxAddresses: number;
  readonly now?: () => number;
}

/**
 * The key an address is throttled under: an IPv6 address by its /64, the block one host is usually
 * given (so that one host cannot walk through its 2^64 addresses); IPv4, and IPv4 mapped into IPv6, whole.
 */
export function throttleKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export function createFailureThrottle(options: ThrottleOptions): FailureThrottle {
  // A refused address is announced once per episode; the mark is forgotten with its bucket.
  const buckets = createBucketTable<Bucket & { announced?: boolean }>({
    perMinute: options.failuresPerMinute,
    now: options.now,
    maxKeys: options.maxAddresses,
  });
  return {
    get size() {
      return buckets.size;
    },
    wait: (address) => {
      const bucket = buckets.find(throttleKey(address));
      if (!bucket || bucket.tokens >= 1) {
        if (bucket) bucket.announced = false;
        return 0;
      }
      return buckets.secondsUntilToken(bucket);
    },
    refund: (address) => {
      const bucket = buckets.find(throttleKey(address));
      if (bucket) buckets.giveBack(bucket);
    },
    firstRefusal: (address) => {
      const bucket = buckets.peek(throttleKey(address));
      if (!bucket || bucket.announced) return false;
      bucket.announced = true;
      return true;
    },
    failed: (address) => {
      const key = throttleKey(address);
      const bucket = buckets.open(key);
      bucket.tokens = Math.max(0, bucket.tokens - 1);
      buckets.use(key, bucket);
    },
  };
}
