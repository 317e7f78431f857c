/**
 * JSON-RPC 2.0 as MCP uses it: what a message is, its id, and how an answer is written. Knows no
 * MCP method and no revision; transports and the dispatcher share it.
 */

/** The id of a request: what its answer carries. MCP forbids null. */
export type RequestId = string | number;

export interface JsonRpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** An answer. `id` is left out when the request's id could not be told (MCP forbids `"id": null`). */
export type JsonRpcResponse =
  { jsonrpc: '2.0'; id: RequestId; result: unknown } | { jsonrpc: '2.0'; id?: RequestId; error: JsonRpcError };

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export type OutgoingMessage = JsonRpcResponse | JsonRpcNotification;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INTERNAL_ERROR = -32603;

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const isRequestId = (value: unknown): value is RequestId =>
  typeof value === 'string' || typeof value === 'number';

/** An error answer; without an id when none could be told. */
export function errorResponse(
  id: RequestId | undefined,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcResponse {
  const error: JsonRpcError = data === undefined ? { code, message } : { code, message, data };
  return id === undefined ? { jsonrpc: '2.0', error } : { jsonrpc: '2.0', id, error };
}

/** Where a result keeps its own JSON; a symbol key, so JSON.stringify and clients never see it. */
const SERIALIZED = Symbol('querygate.serialized');

/**
 * Marks a result as already written: `json` must equal JSON.stringify(result). A transport then
 * splices it into the answer instead of serializing a page of rows a second time.
 */
export function preSerialized<T extends object>(result: T, json: string): T {
  (result as { [SERIALIZED]?: string })[SERIALIZED] = json;
  return result;
}

/** The JSON of a pre-serialized result; undefined for any other value. */
export function serializedResult(result: unknown): string | undefined {
  return typeof result === 'object' && result !== null ? (result as { [SERIALIZED]?: string })[SERIALIZED] : undefined;
}

/**
 * A result with fields added in front of its own (its own win), keeping a pre-serialized result
 * pre-serialized: the fields' JSON is joined to the JSON already written, so rows are not written
 * again. Where a field is the result's own too, the result is serialized afresh.
 */
export function withFields(result: Record<string, unknown>, fields: Record<string, unknown>): Record<string, unknown> {
  const json = serializedResult(result);
  // Copied by entries, which leave the symbol behind: a merged result's old JSON would be wrong.
  const own = Object.fromEntries(Object.entries(result));
  const merged = { ...fields, ...own };
  if (json === undefined || Object.keys(fields).some((key) => key in own)) return merged;
  const head = JSON.stringify(fields);
  const joined = head === '{}' ? json : json === '{}' ? head : `${head.slice(0, -1)},${json.slice(1)}`;
  return preSerialized(merged, joined);
}

/** A message as one line of JSON, splicing in a result's JSON when it was written already. */
export function encodeMessage(message: OutgoingMessage): string {
  if (!('result' in message)) return JSON.stringify(message);
  const result = serializedResult(message.result);
  if (result === undefined) return JSON.stringify(message);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${result}}`;
}

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
 * The id a message is answered under: a JSON-RPC 2.0 message with a string or number id that has a
 * method, or that is neither a result nor an error. Undefined for notifications, responses and
 * anything answered without an id.
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The top-level `id` of a JSON object, read from the start of its text alone: what a message too long
 * to parse is answered under. Undefined unless the beginning holds a complete string or number id at
 * the top level (an "id" inside params does not count).
 */
export function idFromPrefix(prefix: Uint8Array): RequestId | undefined {
  const text = new TextDecoder('utf-8').decode(prefix);
  let depth = 0;
  let at = 0;
  /** The last string that ended at depth 1 and was followed by a colon: a top-level key. */
  let expectingKey = false;
  while (at < text.length) {
    const c = text.charCodeAt(at);
    if (c === QUOTE) {
      const end = stringEnd(text, at);
      if (end === -1) return undefined;
      if (depth === 1 && expectingKey) {
        const key = text.slice(at, end + 1);
        let next = skipSpace(text, end + 1);
        if (text[next] !== ':') return undefined;
        next = skipSpace(text, next + 1);
        if (key === '"id"') return readId(text, next);
        at = next;
        expectingKey = false;
        continue;
      }
      at = end + 1;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      depth++;
      expectingKey = c === 0x7b && depth === 1;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectingKey = true;
    }
    at++;
  }
  return undefined;
}

function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return -1;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && /\s/.test(text[i]!)) i++;
  return i;
}

function readId(text: string, from: number): RequestId | undefined {
  if (text[from] === '"') {
    const end = stringEnd(text, from);
    if (end === -1) return undefined;
    try {
      return JSON.parse(text.slice(from, end + 1)) as string;
    } catch {
      return undefined;
    }
  }
  const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(from, from + 40));
  // A number cut off by the end of the prefix is not known to be whole.
  if (!number || from + number[0].length >= text.length) return undefined;
  return Number(number[0]);
}
