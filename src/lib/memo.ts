/**
 * A bounded cache for pure functions of one string: calls repeat the same dates, tokens and
 * queries over and over. When full it starts again, which keeps memory flat without an LRU's cost.
 */
export function memoize<R>(fn: (key: string) => R, max = 4096): (key: string) => R {
  const cache = new Map<string, R>();
  return (key) => {
    const hit = cache.get(key);
    if (hit !== undefined) return hit;
    const value = fn(key);
    if (cache.size >= max) cache.clear();
    cache.set(key, value);
    return value;
  };
}
