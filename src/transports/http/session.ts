import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../../lib/caller.js';
import { requestIdOf } from '../../protocol/json-rpc.js';
import { MODERN_VERSIONS } from '../../protocol/revisions.js';
import { sendError, type Edge } from './edge.js';

/**
 * A legacy client's session id must be one this server (or a replica with its key) issued;
 * 2026-07-28 has no sessions, and its requests ignore the header. True when it was refused.
 */
export function refusedSession(
  { sessions }: Edge,
  caller: Caller,
  message: unknown,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  const sessionId = req.headers['mcp-session-id'];
  const modernHeader = MODERN_VERSIONS.includes(String(req.headers['mcp-protocol-version']));
  if (typeof sessionId !== 'string' || modernHeader || sessions.valid(sessionId, caller.id)) return false;
  sendError(res, 404, -32001, 'Session not found: initialize again', requestIdOf(message));
  return true;
}
