/**
 * What the HTTP edge's steps share: the server's options and the state serveHttp builds once, below
 * every step and below serveHttp, so that each step imports this and nothing imports a step back.
 */
import type { ServerResponse } from 'node:http';
import type { AuthFailureReason, Authenticator, FailureThrottle } from '../../auth/index.js';
import type { TokenBucket } from '../../lib/limits.js';
import type { Metrics } from '../../observability/prometheus.js';
import type { DispatchDeps, Dispatcher } from '../../protocol/dispatcher.js';
import { errorResponse, type RequestId } from '../../protocol/json-rpc.js';
import type { SessionIds } from '../session-ids.js';

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

/** What serveHttp builds once and every request's steps read. */
export interface Edge {
  readonly deps: DispatchDeps;
  readonly options: HttpOptions;
  readonly dispatcher: Dispatcher;
  /** Aborted by close(): subscriptions/listen streams then end with their answer. */
  readonly closing: AbortSignal;
  readonly sessions: SessionIds;
  readonly failedAuth: FailureThrottle;
  /** Known once the port is bound: the loopback names of that port, and the configured ones, lower-cased. */
  readonly allowedHosts: () => ReadonlySet<string>;
  readonly allowedOrigins: () => ReadonlySet<string>;
}

/** An error refused before the dispatcher: without an id, unless the body was read and had one. */
export function sendError(res: ServerResponse, status: number, code: number, message: string, id?: RequestId): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(errorResponse(id, code, message)));
}

/** Refuses a method other than GET on a GET-only path. */
export function refuseUnlessGet(method: string | undefined, res: ServerResponse, what: string): boolean {
  if (method === 'GET') return false;
  res.setHeader('allow', 'GET');
  sendError(res, 405, -32000, `Method not allowed: ${what} GET only`);
  return true;
}
