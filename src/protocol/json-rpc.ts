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
/** Longest id kept while scanning, in bytes of its JSON: a longer one is not looked for. */
const MAX_ID_BYTES = 1024;

/**
 * Finds the top-level `id` of a JSON object fed to it in pieces, without keeping the text: what a
 * message too long to parse is answered under, wherever its id stands (the SDK writes it after
 * params). Tracks strings and nesting, so an "id" inside params, or standing as a value, does not
 * count. The bytes of a multi-byte character never look like a quote, a bracket or a comma.
 */
export interface IdScanner {
  feed(bytes: Uint8Array): void;
  /** The id once it has been read whole; undefined until then, or when there is none to read. */
  readonly id: RequestId | undefined;
  /** Whether the scan is over: the id was read, or it cannot be (not an object, a bad id, one too long). */
  readonly done: boolean;
  /** The text ended: a number id standing at its very end is whole. */
  end(): void;
}

export function createIdScanner(): IdScanner {
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** At depth 1, the next string is a key. */
  let expectingKey = false;
  /** The bytes of the key being read, while it can still be "id". */
  let key: number[] | undefined;
  /** After the key "id": waiting for its colon, then its value. */
  let phase: 'scan' | 'colon' | 'value' | 'string' | 'number' = 'scan';
  let value: number[] = [];
  let id: RequestId | undefined;
  let done = false;

  const finish = (found: RequestId | undefined): void => {
    id = found;
    done = true;
  };
  const finishString = (): void => {
    try {
      finish(JSON.parse(`"${Buffer.from(value).toString('utf8')}"`) as string);
    } catch {
      finish(undefined);
    }
  };
  const finishNumber = (): void => {
    const text = Buffer.from(value).toString('latin1');
    finish(/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text) ? Number(text) : undefined);
  };
  const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

  const step = (c: number): void => {
    if (phase === 'string') {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) return finishString();
      value.push(c);
      if (value.length > MAX_ID_BYTES) finish(undefined);
      return;
    }
    if (phase === 'number') {
      if ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45) {
        value.push(c);
        if (value.length > 64) finish(undefined);
        return;
      }
      return finishNumber();
    }
    if (phase === 'colon' || phase === 'value') {
      if (isSpace(c)) return;
      if (phase === 'colon') {
        if (c === 0x3a /* : */) phase = 'value';
        else finish(undefined);
        return;
      }
      value = [];
      if (c === QUOTE) phase = 'string';
      else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
        phase = 'number';
        value.push(c);
      } else finish(undefined); // null, an object, a list: not an id
      return;
    }
    if (inString) {
      if (escaped) escaped = false;
      else if (c === BACKSLASH) escaped = true;
      else if (c === QUOTE) {
        inString = false;
        if (key !== undefined) {
          if (key.length === 2 && key[0] === 0x69 && key[1] === 0x64) phase = 'colon';
          key = undefined;
        }
        return;
      }
      if (key !== undefined) {
        key.push(c);
        if (key.length > 2) key = undefined;
      }
      return;
    }
    if (c === QUOTE) {
      inString = true;
      if (depth === 1 && expectingKey) key = [];
      expectingKey = false;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth === 0 && c === 0x5b) return finish(undefined); // a batch, or not an object
      depth++;
      expectingKey = c === 0x7b && depth === 1;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
      if (depth <= 0) finish(undefined);
    } else if (c === 0x2c /* , */ && depth === 1) {
      expectingKey = true;
    }
  };

  return {
    feed: (bytes) => {
      for (let i = 0; i < bytes.length && !done; i++) step(bytes[i]!);
    },
    end: () => {
      if (!done && phase === 'number') finishNumber();
      done = true;
    },
    get id() {
      return id;
    },
    get done() {
      return done;
    },
  };
}

/**
 * The top-level `id` of a JSON object, read from the start of its text alone. Undefined unless the
 * beginning holds a complete string or number id at the top level (an "id" inside params does not count).
 */
export function idFromPrefix(prefix: Uint8Array): RequestId | undefined {
  const scanner = createIdScanner();
  scanner.feed(prefix);
  return scanner.id;
}
