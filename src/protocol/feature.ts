/**
 * A feature's contract: what a feature module (features/) declares, and what its handlers are given.
 * Below the dispatcher that routes to the features and the features themselves, so a feature imports
 * no dispatcher and the dispatcher's import of each feature is the only arrow between them.
 */
import type { Caller } from '../lib/caller.js';
import type { ServerContent } from '../content/index.js';
import type { SubscriptionLimits } from '../lib/limits.js';
import type { CallDeps, ClientLogLevel, Registry } from '../registry/interface.js';
import type { Identity } from './identity.js';
import type { JsonRpcNotification, RequestId } from './json-rpc.js';
import type { CacheHint, Era, NameParam } from './revisions.js';

export interface DispatchDeps extends CallDeps {
  readonly registry: Registry;
  /** The server's name, title and instructions, from the packs it serves; the engine's own when omitted. */
  readonly identity?: Identity;
  /** The resources, resource templates and prompts of the packs it serves; the engine's own when omitted. */
  readonly content?: ServerContent;
  /** Caps on subscriptions/listen streams, per caller and overall, and their lifetime. */
  readonly subscriptions: SubscriptionLimits;
}

/** What lasts between requests on one connection: what a legacy client set up for it. */
export interface Session {
  /** Set by logging/setLevel. */
  logLevel?: ClientLogLevel;
  /** Set by initialize: the client declared itself, and may be told of changes between its requests. */
  initialized?: boolean;
  /** The resources a legacy client subscribed to (resources/subscribe), by URI. */
  resourceSubscriptions?: Set<string>;
}

/** What a method handler gets besides its params. */
export interface HandlerContext {
  readonly deps: DispatchDeps;
  readonly caller: Caller;
  readonly requestId: RequestId;
  readonly signal: AbortSignal;
  /** Aborted when the server stops serving: a long-lived request ends then, with its answer. */
  readonly closing: AbortSignal | undefined;
  readonly session: Session;
  readonly traceparent: string | undefined;
  /** The extensions the client declares with this request (2026-07-28's per-request capabilities). */
  readonly clientExtensions: ReadonlySet<string>;
  /** Sends the client a log message, if it asked for messages of this level (and drops it otherwise). */
  readonly log: (level: ClientLogLevel, data: Record<string, unknown>) => void;
  /** Sends a notification about this request ahead of its answer; absent where none can be sent. */
  readonly notify: ((notification: JsonRpcNotification) => void) | undefined;
  /** The server as `initialize` and `server/discover` describe it. */
  readonly server: ServerDescription;
}

export interface ServerDescription {
  readonly info: Record<string, unknown>;
  readonly capabilities: Record<string, unknown>;
  /** The capabilities as a legacy `initialize` tells them, on this transport. */
  readonly handshakeCapabilities: Record<string, unknown>;
  readonly instructions: string;
}

export interface Method {
  /** The eras that have this method; a request of another era gets "Method not found". */
  readonly eras: readonly Era[];
  /** How long a modern client may cache the result, for the methods whose results are cacheable. */
  readonly cache?: CacheHint;
  /** The param that 2026-07-28's `Mcp-Name` header mirrors. */
  readonly nameParam?: NameParam;
  handle(
    params: Record<string, unknown>,
    ctx: HandlerContext,
  ): Promise<Record<string, unknown>> | Record<string, unknown>;
}

/** One MCP feature: the capability it adds to the server's and the methods that serve it. */
export interface Feature {
  readonly capabilities: Record<string, unknown>;
  readonly methods: Readonly<Record<string, Method>>;
}
