import type { IncomingMessage, ServerResponse } from 'node:http';
import { throttledAuth } from './auth-throttle.js';
import { refuseUnlessGet, sendError, type Edge } from './edge.js';
import { sourceAddress } from './source-address.js';

/**
 * /metrics, when the server has metrics; true when the request was for it. Before the Host check:
 * a scraper, too, reaches the pod's address; /metrics runs no tool and tells no data, only counts.
 */
export async function answeredMetrics(
  edge: Edge,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  const { options, failedAuth } = edge;
  if (path !== '/metrics' || !options.metrics) return false;
  if (refuseUnlessGet(req.method, res, '/metrics takes')) return true;
  // A guess at the metrics token meets the failed-login throttle and the audit, as one at /mcp's does;
  // a throttled address is refused before its token is compared, so that a right guess tells nothing.
  const source = options.metrics.tokenRequired ? sourceAddress(req, options.trustProxyHops ?? 0) : '';
  if (options.metrics.tokenRequired && throttledAuth(edge, res, source)) return true;
  if (!options.metrics.authorizes(req.headers.authorization)) {
    failedAuth.failed(source);
    options.onAuthFailure?.({ reason: 'missing_or_invalid_metrics_token', status: 401, source });
    res.setHeader('www-authenticate', 'Bearer realm="querygate metrics"');
    sendError(res, 401, -32001, 'Unauthorized: /metrics needs the metrics token');
    return true;
  }
  const { contentType, text } = await options.metrics.scrape();
  res.writeHead(200, { 'content-type': contentType }).end(text);
  return true;
}
