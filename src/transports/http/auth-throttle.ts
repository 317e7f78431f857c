import type { ServerResponse } from 'node:http';
import { sendError, type Edge } from './edge.js';

/** Refuses with 429 an address past its failed authentications; true when it did. */
export function throttledAuth({ options, failedAuth }: Edge, res: ServerResponse, source: string): boolean {
  const throttled = failedAuth.wait(source);
  if (throttled === 0) return false;
  options.onAuthFailure?.({ reason: 'throttled', status: 429, source, repeated: !failedAuth.firstRefusal(source) });
  res.setHeader('retry-after', String(throttled));
  sendError(res, 429, -32000, `Too many failed authentications from your address: retry in ${throttled} seconds`);
  return true;
}
