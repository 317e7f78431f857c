/**
 * Imported first by the CLI, before pg. On Node 20, which has no `navigator`, pg sniffs for Cloudflare
 * Workers by constructing a fetch `Response`, and that loads Node's whole fetch implementation (undici,
 * about 12 MB of memory) into a process that never fetches. Node 21 and later define
 * `navigator.userAgent` as "Node.js/<major>"; this defines the same on Node 20, so the sniff reads it
 * and stops there. Nothing else that querygate loads reads `navigator` except to look for Cloudflare.
 */
if ((globalThis as { navigator?: unknown }).navigator === undefined) {
  Object.defineProperty(globalThis, 'navigator', {
    value: Object.freeze({ userAgent: `Node.js/${process.versions.node.split('.')[0]}` }),
    configurable: true,
    enumerable: false,
    writable: false,
  });
}
