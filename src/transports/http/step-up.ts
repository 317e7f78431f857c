import type { ServerResponse } from 'node:http';
import { isObject, requestIdOf } from '../../protocol/json-rpc.js';
import type { Authenticated } from './authenticate.js';
import { sendError, type Edge } from './edge.js';

/**
 * A tool the token's scopes do not grant, but another scope would: refused with 403 and a challenge
 * naming those scopes, so that the client may step up; true when it was.
 */
export function refusedForScope(
  { deps, options }: Edge,
  { caller, scoped, source }: Authenticated,
  message: unknown,
  res: ServerResponse,
): boolean {
  const wanted =
    scoped && isObject(message) && message.method === 'tools/call' && isObject(message.params)
      ? message.params.name
      : undefined;
  if (typeof wanted !== 'string' || !caller.tools || caller.tools.has(wanted)) return false;
  // Only a served tool: a name the server does not know stays an unknown tool, and is never echoed.
  const served = deps.registry.tools.some((tool) => tool.name === wanted);
  const visible = deps.registry.toolsFor(caller).some((tool) => tool.name === wanted);
  const scopes = served && !visible ? options.auth!.scopesGranting(wanted) : [];
  if (scopes.length === 0) return false;
  const refusal = {
    ok: false,
    reason: 'insufficient_scope',
    status: 403,
    description: `the tool ${wanted} needs one of the scopes ${scopes.join(', ')}`,
    scope: scopes,
  } as const;
  options.onAuthFailure?.({
    reason: 'insufficient_scope',
    status: 403,
    source,
  });
  res.setHeader('www-authenticate', options.auth!.challenge(refusal));
  sendError(res, 403, -32001, `Forbidden: ${refusal.description}`, requestIdOf(message));
  return true;
}
