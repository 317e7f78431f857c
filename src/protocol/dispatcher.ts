/**
 * The stateless MCP endpoint behind every transport: one JSON-RPC message in, at most one answer out,
 * plus the log notifications the request asked for. Each MCP feature is a module that declares its
 * capability and its methods (features/); the dispatcher routes a request to its method, and
 * revisions.ts reads the request's envelope and dresses the answer for its era.
 */
import { ProtocolError } from '../lib/errors.js';
import type { Caller } from '../lib/caller.js';
import type { ClientLogLevel } from '../registry/interface.js';
import type { DispatchDeps, Feature, HandlerContext, Method, ServerDescription, Session } from './feature.js';
import { completionsFeature } from './features/completions.js';
import { lifecycleFeature } from './features/lifecycle.js';
import { loggingFeature } from './features/logging.js';
import { promptsFeature } from './features/prompts.js';
import { resourcesFeature } from './features/resources.js';
import { subscriptionsFeature } from './features/subscriptions.js';
import { tasksFeature } from './features/tasks.js';
import { toolsFeature } from './features/tools.js';
import { ENGINE_IDENTITY } from './identity.js';
import {
  errorResponse,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  isObject,
  isRequestId,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type RequestId,
} from './json-rpc.js';
import {
  checkMirroredHeaders,
  dressResult,
  EdgeError,
  errorCode,
  errorStatus,
  handshakeCapabilities,
  LOG_LEVELS,
  readEnvelope,
  type Envelope,
  validTraceparent,
} from './revisions.js';

// The transports build a dispatcher from its deps and sessions: they take those types from the module they call.
export type { DispatchDeps, Session } from './feature.js';

export interface Request {
  readonly caller: Caller;
  /** Aborted when the client cancels or goes away. */
  readonly signal: AbortSignal;
  /** Aborted when the transport stops serving. */
  readonly closing?: AbortSignal;
  readonly session: Session;
  /** Sends a notification about this request ahead of its answer; absent where none can be sent. */
  readonly notify?: (notification: JsonRpcNotification) => void;
  /** HTTP only: a request header by its lower-case name. Stdio has no headers to check. */
  readonly header?: (name: string) => string | undefined;
}

export interface Dispatched {
  /** Undefined for notifications and responses, which get no answer. */
  readonly response: JsonRpcResponse | undefined;
  /** The HTTP status the answer goes with. */
  readonly status: number;
}

export interface Dispatcher {
  readonly server: ServerDescription;
  handle(message: unknown, request: Request): Promise<Dispatched>;
}

const NO_ANSWER: Dispatched = { response: undefined, status: 202 };

/** The features every querygate serves, in the order their capabilities are listed. */
const FEATURES: readonly Feature[] = [
  lifecycleFeature,
  toolsFeature,
  completionsFeature,
  loggingFeature,
  resourcesFeature,
  promptsFeature,
  subscriptionsFeature,
];

export interface DispatcherOptions {
  readonly features?: readonly Feature[];
  /**
   * Whether the transport can send a notification outside any request (stdio can; stateless HTTP,
   * without a GET stream, cannot). Default true.
   */
  readonly unsolicited?: boolean;
}

export function createDispatcher(
  deps: DispatchDeps,
  // Tasks are served where jobs are: the job store keeps them.
  { features = deps.jobs ? [...FEATURES, tasksFeature] : FEATURES, unsolicited = true }: DispatcherOptions = {},
): Dispatcher {
  const methods = new Map<string, Method>();
  const capabilities: Record<string, unknown> = {};
  for (const feature of features) {
    Object.assign(capabilities, feature.capabilities);
    for (const [name, method] of Object.entries(feature.methods)) {
      if (methods.has(name)) throw new Error(`two features serve ${name}`);
      methods.set(name, method);
    }
  }
  const identity = deps.identity ?? ENGINE_IDENTITY;
  const server: ServerDescription = {
    info: identity.info,
    capabilities,
    handshakeCapabilities: handshakeCapabilities(capabilities, unsolicited),
    instructions: identity.instructions,
  };

  async function handle(message: unknown, request: Request): Promise<Dispatched> {
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      return edge(undefined, undefined, INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message');
    }
    const hasId = 'id' in message;
    const id = message.id;
    if (hasId && !isRequestId(id)) {
      return edge(undefined, undefined, INVALID_REQUEST, 'Invalid Request: id must be a string or a number');
    }
    if (typeof message.method !== 'string') {
      // A response to something we never asked, or garbage: nothing to answer if it carries no method.
      return hasId && !('result' in message) && !('error' in message)
        ? edge(id as RequestId, undefined, INVALID_REQUEST, 'Invalid Request: method must be a string')
        : NO_ANSWER;
    }
    // A notification (initialized, cancelled): the transport acts on cancellations; nothing else to do.
    if (!hasId) return NO_ANSWER;
    const requestId = id as RequestId;
    const method = message.method;
    const params = message.params;
    const headerVersion = request.header?.('mcp-protocol-version');
    if (params !== undefined && !isObject(params)) {
      const status = headerVersion === undefined ? 200 : 400;
      return { response: errorResponse(requestId, -32602, 'Invalid params: params must be an object'), status };
    }

    let envelope: Envelope | undefined;
    try {
      envelope = readEnvelope(params, headerVersion);
      const spec = methods.get(method);
      if (envelope.era === 'modern' && request.header) {
        checkMirroredHeaders(method, params, spec?.nameParam, request.header);
      }
      if (!spec || !spec.eras.includes(envelope.era)) {
        const removed = spec !== undefined && envelope.era === 'modern' ? ' (not part of 2026-07-28)' : '';
        throw new EdgeError(-32601, `Method not found: ${JSON.stringify(method.slice(0, 100))}${removed}`, 404);
      }
      const context = handlerContext(requestId, envelope, request);
      const result = await spec.handle(params ?? {}, context);
      return {
        response: { jsonrpc: '2.0', id: requestId, result: dressResult(envelope, result, server.info, spec.cache) },
        status: 200,
      };
    } catch (err) {
      if (err instanceof EdgeError) {
        return {
          response: errorResponse(requestId, err.code, err.message, err.data),
          status: err.code === -32601 ? errorStatus(envelope, err.code, true) : err.status,
        };
      }
      if (err instanceof ProtocolError) {
        const code = errorCode(envelope, err);
        return {
          response: errorResponse(requestId, code, err.message, err.data),
          status: errorStatus(envelope, code, false),
        };
      }
      deps.logger.error('request failed', {
        method: method.slice(0, 100),
        ...(envelope?.traceparent === undefined ? {} : { traceparent: envelope.traceparent }),
        message: err instanceof Error ? err.message : String(err),
      });
      return { response: errorResponse(requestId, INTERNAL_ERROR, 'Internal error'), status: 200 };
    }
  }

  function handlerContext(requestId: RequestId, envelope: Envelope, request: Request): HandlerContext {
    // A modern request asks for log messages itself; a legacy client asked once for its connection.
    const wanted = envelope.era === 'modern' ? envelope.logLevel : request.session.logLevel;
    const notify = request.notify;
    const log =
      wanted === undefined || notify === undefined
        ? () => undefined
        : (level: ClientLogLevel, data: Record<string, unknown>) => {
            if (LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(wanted)) return;
            notify({ jsonrpc: '2.0', method: 'notifications/message', params: { level, logger: 'querygate', data } });
          };
    return {
      deps,
      caller: request.caller,
      requestId,
      signal: request.signal,
      closing: request.closing,
      session: request.session,
      // MCP's own `_meta.traceparent` first; else the HTTP header an instrumented client sends.
      traceparent: envelope.traceparent ?? validTraceparent(request.header?.('traceparent')),
      clientExtensions: envelope.extensions,
      log,
      notify,
      server,
    };
  }

  return { server, handle };
}

function edge(id: RequestId | undefined, envelope: Envelope | undefined, code: number, message: string): Dispatched {
  return { response: errorResponse(id, code, message), status: errorStatus(envelope, code, true) };
}
