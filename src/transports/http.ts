/**
 * MCP over Streamable HTTP at /mcp, stateless: every POST gets a fresh transport and server, so any
 * replica can answer any request. Bound to loopback by default, with Host and Origin checks against
 * DNS rebinding, a body size limit, and a bearer token required off loopback.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ConfigError } from '../errors.js';
import type { Logger } from '../logger.js';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  /** Host header values accepted besides the loopback names of the bound port. */
  readonly allowedHosts: readonly string[];
  /** Origin header values accepted; requests without Origin (non-browser clients) pass. */
  readonly allowedOrigins: readonly string[];
  /** Bearer token clients must present; required when binding a non-loopback address. */
  readonly bearerToken: string | undefined;
  readonly maxBodyBytes: number;
}

export interface RunningHttp {
  readonly url: string;
  readonly server: HttpServer;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export async function serveHttp(buildServer: () => Server, options: HttpOptions, logger: Logger): Promise<RunningHttp> {
  if (!LOOPBACK.has(options.host) && !options.bearerToken) {
    throw new ConfigError(
      `refusing to serve on ${options.host} without authentication; set QUERYGATE_HTTP_TOKEN, or bind 127.0.0.1`,
    );
  }
  const tokenHash = options.bearerToken ? sha256(options.bearerToken) : undefined;

  const http = createHttpServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error('http request failed', { message: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) sendJsonRpcError(res, 500, -32603, 'Internal error');
      else res.end();
    });
  });

  let allowedHosts = new Set<string>();
  let allowedOrigins = new Set<string>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      return sendJsonRpcError(res, 403, -32000, 'Forbidden: Host not allowed');
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins.has(origin.toLowerCase())) {
      return sendJsonRpcError(res, 403, -32000, 'Forbidden: Origin not allowed');
    }
    if (path === '/healthz' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    if (path !== '/mcp') return sendJsonRpcError(res, 404, -32000, 'Not found: the MCP endpoint is /mcp');
    if (tokenHash && !bearerMatches(req.headers.authorization, tokenHash)) {
      res.setHeader('www-authenticate', 'Bearer realm="querygate"');
      return sendJsonRpcError(res, 401, -32001, 'Unauthorized: a valid bearer token is required');
    }
    if (req.method !== 'POST') {
      // Stateless server: no standalone SSE stream (GET) and no session to delete (DELETE).
      res.setHeader('allow', 'POST');
      return sendJsonRpcError(res, 405, -32000, 'Method not allowed: this stateless server only takes POST');
    }
    const body = await readBody(req, options.maxBodyBytes);
    if (body === 'too_large') {
      return sendJsonRpcError(res, 413, -32600, `Request body larger than ${options.maxBodyBytes} bytes`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return sendJsonRpcError(res, 400, -32700, 'Parse error: the body is not valid JSON');
    }
    const server = buildServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, parsed);
  }

  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
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
  const url = `http://${hostPart}:${port}/mcp`;
  return {
    url,
    server: http,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
      }),
  };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** Compares hashes, so the comparison takes the same time whatever the token's length. */
function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer (.+)$/i.exec(header ?? '');
  return match !== null && timingSafeEqual(sha256(match[1]!), expected);
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return 'too_large';
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      return 'too_large';
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function sendJsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
