import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, type Edge } from './edge.js';

/** Against DNS rebinding: a Host header that is not one of this server's names is refused. */
export function refusedHost({ options, allowedHosts }: Edge, req: IncomingMessage, res: ServerResponse): boolean {
  if (allowedHosts().has((req.headers.host ?? '').toLowerCase())) return false;
  options.metrics?.refusal('http_host_not_allowed');
  sendError(res, 403, -32000, 'Forbidden: Host not allowed');
  return true;
}

/** A browser's page from another origin is refused; requests without Origin (non-browser clients) pass. */
export function refusedOrigin({ options, allowedOrigins }: Edge, req: IncomingMessage, res: ServerResponse): boolean {
  const origin = req.headers.origin;
  if (origin === undefined || allowedOrigins().has(origin.toLowerCase())) return false;
  options.metrics?.refusal('http_origin_not_allowed');
  sendError(res, 403, -32000, 'Forbidden: Origin not allowed');
  return true;
}
