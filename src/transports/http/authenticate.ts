import type { IncomingMessage, ServerResponse } from 'node:http';
import { HTTP_CALLER_ID } from '../../lib/caller-ids.js';
import type { Caller } from '../../lib/caller.js';
import { throttledAuth } from './auth-throttle.js';
import { sendError, type Edge } from './edge.js';
import { sourceAddress } from './source-address.js';

/** Without tokens (loopback only), every HTTP client is this one caller. */
const ANONYMOUS: Caller = { id: HTTP_CALLER_ID };

/** Who calls: the caller, whether its token carries scopes, and the address it came from. */
export interface Authenticated {
  readonly caller: Caller;
  readonly scoped: boolean;
  readonly source: string;
}

/** The caller of a request to /mcp, or undefined when it was refused (throttled, or its token not good). */
export async function authenticate(
  edge: Edge,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Authenticated | undefined> {
  const { options, failedAuth } = edge;
  const source = sourceAddress(req, options.trustProxyHops ?? 0);
  if (!options.auth) return { caller: ANONYMOUS, scoped: false, source };
  if (throttledAuth(edge, res, source)) return undefined;
  let result = options.auth.known(req.headers.authorization);
  if (result === undefined) {
    // A token that must be verified costs a signature check, perhaps a request to the issuer: it
    // is charged to its address before, and the charge given back if it proves good, so that
    // attempts made in parallel meet the throttle as well as attempts made one after another.
    // A 503 is not given back: an authorization server that cannot answer must not make guessing free.
    failedAuth.failed(source);
    result = await options.auth.authenticate(req.headers.authorization);
    if (result.ok || result.status === 403) failedAuth.refund(source);
  } else if (!result.ok && result.status === 401 && result.reason !== 'missing_token') {
    // A missing token is how every client starts (it learns where to authenticate from the 401).
    failedAuth.failed(source);
  }
  if (!result.ok) {
    options.onAuthFailure?.({ reason: result.reason, status: result.status, source });
    if (result.status === 503) res.setHeader('retry-after', String(result.retryAfterSeconds ?? 5));
    else res.setHeader('www-authenticate', options.auth.challenge(result));
    const title = { 401: 'Unauthorized', 403: 'Forbidden', 503: 'Service Unavailable' }[result.status];
    sendError(res, result.status, -32001, `${title}: ${result.description}`);
    return undefined;
  }
  return { caller: result.caller, scoped: result.scopes !== undefined, source };
}
