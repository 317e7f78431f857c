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
import {
  createFailureThrottle,
  type AuthFailureReason,
  type Authenticator,
  type FailureThrottle,
} from '../auth/index.js';
import { HTTP_CALLER_ID } from '../caller-ids.js';
import { ConfigError } from '../errors.js';
import type { TokenBucket } from '../limits.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Caller } from '../caller.js';
import { createDispatcher, type DispatchDeps } from '../protocol/dispatcher.js';
import {
  encodeMessage,
  errorResponse,
  isObject,
  parseJson,
  requestIdOf,
  type OutgoingMessage,
  type RequestId,
} from '../protocol/json-rpc.js';
import { MODERN_VERSIONS } from '../protocol/revisions.js';
import { createSessionIds } from './session-ids.js';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  /** Host header values accepted besides the loopback names of the bound port. */
  readonly allowedHosts: readonly string[];
  /** Origin header values accepted; requests without Origin (non-browser clients) pass. */
  readonly allowedOrigins: readonly string[];
  /** Static bearer tokens and/or OAuth access tokens; required when binding a non-loopback address. */
  readonly auth: Authenticator | undefined;
  /** Failed authentication per source address: past its rate, an address gets 429 before its token is looked at. */
  readonly failedAuth?: FailureThrottle;
  /** Told of every refused authentication, for the audit log and metrics: never the token. */
  readonly onAuthFailure?: (event: AuthFailureEvent) => void;
  /**
   * Proxies in front of the server whose X-Forwarded-For entries are believed: the source address is
   * the entry this many from the right. 0 (the default): the connection's own address.
   */
  readonly trustProxyHops?: number;
  /** HTTP requests per caller, refused with 429 before they reach MCP when the bucket is empty. */
  readonly requestBuckets: TokenBucket;
  readonly maxBodyBytes: number;
  /** Whether the reader role was checked and the database answers: /readyz. */
  readonly isReady: () => Promise<boolean>;
  /** Told beside /readyz's status: whether the job store answers (absent without one). */
  readonly jobStore?: () => Promise<'ok' | 'unavailable' | undefined>;
  /** Told beside /readyz's status: a hot standby's replay lag in seconds (absent on a primary). */
  readonly replicaLag?: () => Promise<number | undefined>;
  /** Served at /metrics, and told of the refusals and failed authentications here; no /metrics without. */
  readonly metrics?: Metrics;
  /**
   * Key of the legacy session ids; replicas that share it accept each other's. A random one when
   * absent: ids then last as long as the process.
   */
  readonly sessionKey?: Uint8Array;
}

export interface AuthFailureEvent {
  readonly reason: AuthFailureReason | 'throttled' | 'missing_or_invalid_metrics_token';
  readonly status: number;
  /** The source address, as throttled. */
  readonly source: string;
  /** A refusal of an address already told it is throttled: counted, but not worth another audit line. */
  readonly repeated?: boolean;
}

export interface RunningHttp {
  readonly url: string;
  readonly server: HttpServer;
  /** Stops accepting connections; resolves when the open ones are done, each closed after its answer. */
  close(): Promise<void>;
}

const KEEP_ALIVE_MS = 15_000;
/** The most of a body over the limit that is read (and thrown away) so that its client can read the 413. */
const DISCARD_BYTES = 16 << 20;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
/** Without tokens (loopback only), every HTTP client is this one caller. */
const ANONYMOUS: Caller = { id: HTTP_CALLER_ID };

export async function serveHttp(deps: DispatchDeps, options: HttpOptions, logger: Logger): Promise<RunningHttp> {
  if (!LOOPBACK.has(options.host) && !options.auth) {
    throw new ConfigError(
      `refusing to serve on ${options.host} without authentication; set QUERYGATE_HTTP_TOKEN or QUERYGATE_HTTP_TOKENS_FILE, or bind 127.0.0.1`,
    );
  }
  // No GET stream: a legacy client cannot be told of anything outside its own requests.
  const dispatcher = createDispatcher(deps, { unsolicited: false });
  /** Aborted by close(): subscriptions/listen streams then end with their answer. */
  const closing = new AbortController();
  const sessions = createSessionIds(options.sessionKey ?? randomBytes(32));
  const failedAuth = options.failedAuth ?? createFailureThrottle({ failuresPerMinute: 10, maxAddresses: 10_000 });
  let allowedHosts = new Set<string>();
  let allowedOrigins = new Set<string>();

  /** Refuses with 429 an address past its failed authentications; true when it did. */
  function throttledAuth(res: ServerResponse, source: string): boolean {
    const throttled = failedAuth.wait(source);
    if (throttled === 0) return false;
    options.onAuthFailure?.({ reason: 'throttled', status: 429, source, repeated: !failedAuth.firstRefusal(source) });
    res.setHeader('retry-after', String(throttled));
    sendError(res, 429, -32000, `Too many failed authentications from your address: retry in ${throttled} seconds`);
    return true;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    // Probes come before the Host and Origin checks: a kubelet or load balancer sends the pod's
    // address or a Service name as Host. They carry no data and run no tool, so DNS rebinding gains
    // nothing from them; /readyz is cached for a second, so it is no way to load the database either.
    if (path === '/healthz' || path === '/readyz') {
      if (req.method !== 'GET') {
        res.setHeader('allow', 'GET');
        return sendError(res, 405, -32000, 'Method not allowed: probes take GET only');
      }
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
      return;
    }
    // A scraper, too, reaches the pod's address; /metrics runs no tool and tells no data, only counts.
    if (path === '/metrics' && options.metrics) {
      if (req.method !== 'GET') {
        res.setHeader('allow', 'GET');
        return sendError(res, 405, -32000, 'Method not allowed: /metrics takes GET only');
      }
      // A guess at the metrics token meets the failed-login throttle and the audit, as one at /mcp's does;
      // a throttled address is refused before its token is compared, so that a right guess tells nothing.
      const source = options.metrics.tokenRequired ? sourceAddress(req, options.trustProxyHops ?? 0) : '';
      if (options.metrics.tokenRequired && throttledAuth(res, source)) return;
      if (!options.metrics.authorizes(req.headers.authorization)) {
        failedAuth.failed(source);
        options.onAuthFailure?.({ reason: 'missing_or_invalid_metrics_token', status: 401, source });
        res.setHeader('www-authenticate', 'Bearer realm="querygate metrics"');
        return sendError(res, 401, -32001, 'Unauthorized: /metrics needs the metrics token');
      }
      const { contentType, text } = await options.metrics.scrape();
      res.writeHead(200, { 'content-type': contentType }).end(text);
      return;
    }
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      options.metrics?.refusal('http_host_not_allowed');
      return sendError(res, 403, -32000, 'Forbidden: Host not allowed');
    }
    // Protected Resource Metadata is public, and read by browser-based clients from other origins.
    const resource = options.auth?.protectedResource;
    if (resource?.paths.includes(path!)) {
      if (req.method !== 'GET') {
        res.setHeader('allow', 'GET');
        return sendError(res, 405, -32000, 'Method not allowed: metadata takes GET only');
      }
      const json = JSON.stringify(resource.document());
      res.writeHead(200, {
        'content-type': 'application/json',
        'access-control-allow-origin': '*',
        'cache-control': 'max-age=300',
      });
      res.end(json);
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins.has(origin.toLowerCase())) {
      options.metrics?.refusal('http_origin_not_allowed');
      return sendError(res, 403, -32000, 'Forbidden: Origin not allowed');
    }
    if (path !== '/mcp') return sendError(res, 404, -32000, 'Not found: the MCP endpoint is /mcp');

    let caller = ANONYMOUS;
    let scoped = false;
    const source = sourceAddress(req, options.trustProxyHops ?? 0);
    if (options.auth) {
      if (throttledAuth(res, source)) return;
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
        return sendError(res, result.status, -32001, `${title}: ${result.description}`);
      }
      caller = result.caller;
      scoped = result.scopes !== undefined;
    }
    const wait = options.requestBuckets.take(caller.id);
    if (wait > 0) {
      options.metrics?.refusal('http_rate_limited');
      res.setHeader('retry-after', String(wait));
      return sendError(res, 429, -32000, `Too many requests: retry in ${wait} seconds`);
    }
    if (req.method !== 'POST') {
      // Stateless server: no standalone SSE stream (GET), and sessions that end by themselves (DELETE).
      res.setHeader('allow', 'POST');
      return sendError(res, 405, -32000, 'Method not allowed: this stateless server takes POST only');
    }
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') {
      return sendError(res, 415, -32000, 'Unsupported Media Type: send application/json');
    }
    const accept = req.headers.accept ?? '';
    if (!/application\/json|\*\/\*/i.test(accept)) {
      return sendError(res, 406, -32000, 'Not Acceptable: accept application/json');
    }
    const body = await readBody(req, options.maxBodyBytes);
    if (body === 'too_large') {
      options.metrics?.refusal('http_body_too_large');
      return sendError(res, 413, -32600, `Request body larger than ${options.maxBodyBytes} bytes`);
    }
    const decoded = parseJson(body);
    if (!decoded) return sendError(res, 400, -32700, 'Parse error: the body is not valid UTF-8 JSON');
    const parsed = decoded.value;
    if (Array.isArray(parsed)) {
      // JSON-RPC batches left MCP in 2025-06-18.
      return sendError(res, 400, -32600, 'Invalid Request: JSON-RPC batches are not supported');
    }
    // A tool the token's scopes do not grant, but another scope would: the client may step up.
    const wanted =
      scoped && isObject(parsed) && parsed.method === 'tools/call' && isObject(parsed.params)
        ? parsed.params.name
        : undefined;
    if (typeof wanted === 'string' && caller.tools && !caller.tools.has(wanted)) {
      // Only a served tool: a name the server does not know stays an unknown tool, and is never echoed.
      const served = deps.registry.tools.some((tool) => tool.name === wanted);
      const visible = deps.registry.toolsFor(caller).some((tool) => tool.name === wanted);
      const scopes = served && !visible ? options.auth!.scopesGranting(wanted) : [];
      if (scopes.length > 0) {
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
        return sendError(res, 403, -32001, `Forbidden: ${refusal.description}`, requestIdOf(parsed));
      }
    }
    // A legacy client's session id must be one this server (or a replica with its key) issued;
    // 2026-07-28 has no sessions, and its requests ignore the header.
    const sessionId = req.headers['mcp-session-id'];
    const modernHeader = MODERN_VERSIONS.includes(String(req.headers['mcp-protocol-version']));
    if (typeof sessionId === 'string' && !modernHeader && !sessions.valid(sessionId, caller.id)) {
      return sendError(res, 404, -32001, 'Session not found: initialize again', requestIdOf(parsed));
    }
    // The client going away mid-call aborts it, which cancels its query on the server.
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // Log messages the request asked for go ahead of the answer on an SSE stream, opened by the first.
    const streams = /text\/event-stream/i.test(accept);
    let keepAlive: NodeJS.Timeout | undefined;
    const event = (message: OutgoingMessage): void => {
      if (!res.headersSent) {
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
        });
        // A comment now and then, so that proxies and clients keep a quiet stream (subscriptions/listen) open.
        keepAlive = setInterval(() => res.write(':\n\n'), KEEP_ALIVE_MS);
        res.once('close', () => clearInterval(keepAlive));
      }
      res.write(`event: message\ndata: ${encodeMessage(message)}\n\n`);
    };
    const { response, status } = await dispatcher.handle(parsed, {
      caller,
      signal: abort.signal,
      closing: closing.signal,
      session: {},
      notify: streams ? (notification) => !abort.signal.aborted && event(notification) : undefined,
      header: (name) => {
        const value = req.headers[name];
        return Array.isArray(value) ? value.join(', ') : value;
      },
    });
    if (res.headersSent) {
      clearInterval(keepAlive);
      if (response && !abort.signal.aborted) event(response);
      res.end();
      return;
    }
    if (response === undefined) {
      res.writeHead(202).end();
      return;
    }
    const json = encodeMessage(response);
    if (isObject(parsed) && parsed.method === 'initialize' && 'result' in response) {
      res.setHeader('mcp-session-id', sessions.mint(caller.id));
    }
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
  }

  let stopping = false;
  const http = createHttpServer((req, res) => {
    // Once stopping, a connection is closed after its answer rather than kept alive for the client's
    // next request: close() would otherwise wait for the client to drop it (about 4 s for Node's).
    res.once('finish', () => {
      if (stopping) setImmediate(() => http.closeIdleConnections());
    });
    handle(req, res).catch((err: unknown) => {
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

/** The address a request came from: the connection's, or a trusted proxy's X-Forwarded-For entry. */
function sourceAddress(req: IncomingMessage, trustedHops: number): string {
  const own = req.socket.remoteAddress ?? 'unknown';
  if (trustedHops === 0) return own;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  // The last hop is the nearest proxy's view of its client; anything further left the client could forge.
  return hops[hops.length - trustedHops] ?? own;
}

/**
 * The body, or 'too_large' as soon as it is known to pass the limit. The rest of a body too large is
 * still read, and thrown away, up to DISCARD_BYTES: the client is most likely still sending it, and
 * a connection closed under it is reset before it can read its 413 (EPIPE). Past that bound the
 * connection is cut; within it, the body is read to its end and the connection serves on.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    let chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const refuse = (): void => {
      tooLarge = true;
      chunks = [];
      resolve('too_large');
    };
    if (Number.isFinite(declared) && declared > limit) refuse();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (!tooLarge && size > limit) refuse();
      if (!tooLarge) chunks.push(chunk);
      else if (size > DISCARD_BYTES) req.socket.destroy();
    });
    req.once('end', () => {
      if (!tooLarge) resolve(Buffer.concat(chunks));
    });
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the client went away while sending its request'));
    });
  });
}

/** An error refused before the dispatcher: without an id, unless the body was read and had one. */
function sendError(res: ServerResponse, status: number, code: number, message: string, id?: RequestId): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(errorResponse(id, code, message)));
}
