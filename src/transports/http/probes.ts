import type { IncomingMessage, ServerResponse } from 'node:http';
import { refuseUnlessGet, type Edge } from './edge.js';

/**
 * /healthz and /readyz; true when the request was one. They come before the Host and Origin checks:
 * a kubelet or load balancer sends the pod's address or a Service name as Host. They carry no data
 * and run no tool, so DNS rebinding gains nothing from them; /readyz is cached for a second, so it
 * is no way to load the database either.
 */
export async function answeredProbe(
  { options }: Edge,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<boolean> {
  if (path !== '/healthz' && path !== '/readyz') return false;
  if (refuseUnlessGet(req.method, res, 'probes take')) return true;
  const ready = path === '/healthz' || (await options.isReady());
  const jobs = path === '/readyz' ? await options.jobStore?.() : undefined;
  const lag = path === '/readyz' ? await options.replicaLag?.() : undefined;
  res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      status: ready ? 'ok' : 'not ready',
      ...(jobs === undefined ? {} : { jobs }),
      // Infinity (a standby that replayed nothing yet) is JSON's null.
      ...(lag === undefined ? {} : { replica_lag_seconds: lag }),
    }),
  );
  return true;
}
