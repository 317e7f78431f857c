/**
 * MCP over Streamable HTTP at /mcp, stateless: every POST is one JSON-RPC message answered with one
 * JSON response (or, when the request asked for log messages and accepts a stream, an SSE stream of
 * them ending with the answer), with no session, so any replica can answer any request. Both
 * revisions share the endpoint: the dispatcher tells them apart by the body. Bound to loopback by
 * default, with Host and Origin checks on /mcp against DNS rebinding, bearer tokens (required off
 * loopback), a request rate limit and a body size limit.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createFailureThrottle } from '../../auth/index.js';
import { ConfigError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { createDispatcher, type DispatchDeps } from '../../protocol/dispatcher.js';
import { answer } from './answer.js';
import { authenticate } from './authenticate.js';
import { sendError, type Edge, type HttpOptions } from './edge.js';
import { refusedHost, refusedOrigin } from './host-origin.js';
import { answeredMetrics } from './metrics-endpoint.js';
import { answeredProbe } from './probes.js';
import { rateLimited } from './rate-limit.js';
import { readMessage } from './read-message.js';
import { answeredResourceMetadata } from './resource-metadata.js';
import { refusedSession } from './session.js';
import { refusedForScope } from './step-up.js';
import { createSessionIds } from '../session-ids.js';

export type { AuthFailureEvent, HttpOptions } from './edge.js';

export interface RunningHttp {
  readonly url: string;
  readonly server: HttpServer;
  /** Stops accepting connections; resolves when the open ones are done, each closed after its answer. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/**
 * One request through the edge's steps, in order; each step that answers ends it. The probes and
 * /metrics come before the Host check, the resource metadata before the Origin check (each step says why).
 */
async function handle(edge: Edge, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  if (await answeredProbe(edge, path, req, res)) return;
  if (await answeredMetrics(edge, path, req, res)) return;
  if (refusedHost(edge, req, res)) return;
  if (answeredResourceMetadata(edge, path, req, res)) return;
  if (refusedOrigin(edge, req, res)) return;
  if (path !== '/mcp') return sendError(res, 404, -32000, 'Not found: the MCP endpoint is /mcp');
  const who = await authenticate(edge, req, res);
  if (!who) return;
  if (rateLimited(edge, who.caller, res)) return;
  const message = await readMessage(edge, req, res);
  if (!message) return;
  if (refusedForScope(edge, who, message.value, res)) return;
  if (refusedSession(edge, who.caller, message.value, req, res)) return;
  await answer(edge, who.caller, message.value, req, res);
}

export async function serveHttp(deps: DispatchDeps, options: HttpOptions, logger: Logger): Promise<RunningHttp> {
  if (!LOOPBACK.has(options.host) && !options.auth) {
    throw new ConfigError(
      `refusing to serve on ${options.host} without authentication; set QUERYGATE_HTTP_TOKEN or QUERYGATE_HTTP_TOKENS_FILE, or bind 127.0.0.1`,
    );
  }
  /** Aborted by close(): subscriptions/listen streams then end with their answer. */
  const closing = new AbortController();
  let allowedHosts = new Set<string>();
  let allowedOrigins = new Set<string>();
  const edge: Edge = {
    deps,
    options,
    // No GET stream: a legacy client cannot be told of anything outside its own requests.
    dispatcher: createDispatcher(deps, { unsolicited: false }),
    closing: closing.signal,
    sessions: createSessionIds(options.sessionKey ?? randomBytes(32)),
    failedAuth: options.failedAuth ?? createFailureThrottle({ failuresPerMinute: 10, maxAddresses: 10_000 }),
    allowedHosts: () => allowedHosts,
    allowedOrigins: () => allowedOrigins,
  };

  let stopping = false;
  const http = createHttpServer((req, res) => {
    // Once stopping, a connection is closed after its answer rather than kept alive for the client's
    // next request: close() would otherwise wait for the client to drop it (about 4 s for Node's).
    res.once('finish', () => {
      if (stopping) setImmediate(() => http.closeIdleConnections());
    });
    handle(edge, req, res).catch((err: unknown) => {
      logger.error('http request failed', { message: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) sendError(res, 500, -32603, 'Internal error');
      else res.end();
    });
  });
  http.requestTimeout = 60_000;
  http.headersTimeout = 10_000;

  await new Promise<void>((resolve, reject) => {
    http.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new ConfigError(`port ${options.port} on ${options.host} is in use`) : err),
    );
    http.listen(options.port, options.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const hostPart = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  allowedHosts = new Set(
    [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${hostPart}:${port}`, ...options.allowedHosts].map(
      (h) => h.toLowerCase(),
    ),
  );
  allowedOrigins = new Set(
    [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`, ...options.allowedOrigins].map(
      (o) => o.toLowerCase(),
    ),
  );
  return {
    url: `http://${hostPart}:${port}/mcp`,
    server: http,
    close: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        closing.abort();
        http.close(() => resolve());
        http.closeIdleConnections();
      }),
  };
}
