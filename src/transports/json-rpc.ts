/**
 * The stateless MCP endpoint behind HTTP: one JSON-RPC message in, at most one out, no session and
 * no SDK Server per request. It speaks exactly what this server offers (initialize, ping,
 * tools/list, tools/call) and answers everything else as the specification says.
 */
import { INVALID_PARAMS, ProtocolError } from '../errors.js';
import { serializedResult, type Caller } from '../registry.js';
import { CAPABILITIES, INSTRUCTIONS, PROTOCOL_VERSIONS, SERVER_INFO, type ServerDeps } from '../server.js';

/** The id of a request: what its answer carries. */
export type RequestId = string | number;
type Id = RequestId | null;
export type JsonRpcResponse =
  { jsonrpc: '2.0'; id: Id; result: unknown } | { jsonrpc: '2.0'; id: Id; error: { code: number; message: string } };

const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INTERNAL_ERROR = -32603;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const fail = (id: Id, code: number, message: string): JsonRpcResponse => ({
  jsonrpc: '2.0',
  id,
  error: { code, message },
});

/**
 * A message as one line of JSON. A tool result the registry made carries its JSON already: it is
 * spliced in rather than serialized again, which halves the work for a page of rows.
 */
export function encodeMessage(message: JsonRpcResponse): string {
  const result = 'result' in message ? serializedResult(message.result) : undefined;
  if (result === undefined) return JSON.stringify(message);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${result}}`;
}

const isRequestId = (value: unknown): value is RequestId => typeof value === 'string' || typeof value === 'number';
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Bytes read as one JSON value; undefined when they are not valid UTF-8 JSON (a parse error, -32700). */
export function parseJson(bytes: Uint8Array): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(utf8.decode(bytes)) };
  } catch {
    return undefined;
  }
}

/**
 * The id handleMessage answers a message under, so that a transport can tell which messages will get
 * an answer carrying their id: a JSON-RPC 2.0 message with a string or number id that has a method, or
 * that is neither a result nor an error. Undefined for notifications, responses and anything answered
 * with id null.
 */
export function requestIdOf(message: unknown): RequestId | undefined {
  if (!isObject(message) || message.jsonrpc !== '2.0' || !isRequestId(message.id)) return undefined;
  return typeof message.method === 'string' || !('result' in message || 'error' in message) ? message.id : undefined;
}

/** Whether a message is the notification that a client gave up on one of its requests. */
export function isCancellation(message: unknown): boolean {
  return isObject(message) && message.method === 'notifications/cancelled';
}

/** The id of the request a cancellation names; undefined for anything else. */
export function cancelledRequestId(message: unknown): RequestId | undefined {
  if (!isCancellation(message)) return undefined;
  const params = (message as { params?: unknown }).params;
  return isObject(params) && isRequestId(params.requestId) ? params.requestId : undefined;
}

/** Handles one message; undefined for notifications and responses, which get no answer. */
export async function handleMessage(
  message: unknown,
  deps: ServerDeps,
  caller: Caller,
  signal: AbortSignal,
): Promise<JsonRpcResponse | undefined> {
  if (!isObject(message) || message.jsonrpc !== '2.0') {
    return fail(null, INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message');
  }
  const hasId = 'id' in message;
  const id = message.id;
  if (hasId && typeof id !== 'string' && typeof id !== 'number') {
    return fail(null, INVALID_REQUEST, 'Invalid Request: id must be a string or a number');
  }
  if (typeof message.method !== 'string') {
    // A response to something we never asked, or garbage: nothing to answer if it carries no method.
    return hasId && !('result' in message) && !('error' in message)
      ? fail(id as Id, INVALID_REQUEST, 'Invalid Request: method must be a string')
      : undefined;
  }
  if (!hasId) return undefined; // a notification (initialized, cancelled, ...): nothing to do statelessly
  const params = message.params;
  if (params !== undefined && !isObject(params))
    return fail(id as Id, INVALID_PARAMS, 'Invalid params: must be an object');

  try {
    switch (message.method) {
      case 'initialize': {
        const requested = params?.protocolVersion;
        const protocolVersion =
          typeof requested === 'string' && PROTOCOL_VERSIONS.includes(requested) ? requested : PROTOCOL_VERSIONS[0];
        return {
          jsonrpc: '2.0',
          id: id as Id,
          result: { protocolVersion, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS },
        };
      }
      case 'ping':
        return { jsonrpc: '2.0', id: id as Id, result: {} };
      case 'tools/list':
        return { jsonrpc: '2.0', id: id as Id, result: { tools: deps.registry.toolsFor(caller) } };
      case 'tools/call': {
        const name = params?.name;
        const args = params?.arguments;
        if (typeof name !== 'string') return fail(id as Id, INVALID_PARAMS, 'Invalid params: name must be a string');
        if (args !== undefined && !isObject(args)) {
          return fail(id as Id, INVALID_PARAMS, 'Invalid params: arguments must be an object');
        }
        const result = await deps.registry.call(name, args, deps, { caller, signal });
        return { jsonrpc: '2.0', id: id as Id, result };
      }
      default:
        return fail(id as Id, METHOD_NOT_FOUND, `Method not found: ${JSON.stringify(message.method.slice(0, 100))}`);
    }
  } catch (err) {
    if (err instanceof ProtocolError) return fail(id as Id, err.code, err.message);
    deps.logger.error('request failed', { message: err instanceof Error ? err.message : String(err) });
    return fail(id as Id, INTERNAL_ERROR, 'Internal error');
  }
}
