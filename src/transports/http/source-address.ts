import type { IncomingMessage } from 'node:http';

/** The address a request came from: the connection's, or a trusted proxy's X-Forwarded-For entry. */
export function sourceAddress(req: IncomingMessage, trustedHops: number): string {
  const own = req.socket.remoteAddress ?? 'unknown';
  if (trustedHops === 0) return own;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  // The last hop is the nearest proxy's view of its client; anything further left the client could forge.
  return hops[hops.length - trustedHops] ?? own;
}
