import type { ServerResponse } from 'node:http';
import type { Caller } from '../../lib/caller.js';
import { sendError, type Edge } from './edge.js';

/** HTTP requests per caller: refused with 429 when its bucket is empty, before anything is read. */
export function rateLimited({ options }: Edge, caller: Caller, res: ServerResponse): boolean {
  const wait = options.requestBuckets.take(caller.id);
  if (wait <= 0) return false;
  options.metrics?.refusal('http_rate_limited');
  res.setHeader('retry-after', String(wait));
  sendError(res, 429, -32000, `Too many requests: retry in ${wait} seconds`);
  return true;
}
