import type { IncomingMessage, ServerResponse } from 'node:http';
import { refuseUnlessGet, type Edge } from './edge.js';

/**
 * The Protected Resource Metadata, when OAuth serves one; true when the request was for it. Before
 * the Origin check: it is public, and read by browser-based clients from other origins.
 */
export function answeredResourceMetadata(
  { options }: Edge,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): boolean {
  const resource = options.auth?.protectedResource;
  if (!resource?.paths.includes(path)) return false;
  if (refuseUnlessGet(req.method, res, 'metadata takes')) return true;
  const json = JSON.stringify(resource.document());
  res.writeHead(200, {
    'content-type': 'application/json',
    'access-control-allow-origin': '*',
    'cache-control': 'max-age=300',
  });
  res.end(json);
  return true;
}
