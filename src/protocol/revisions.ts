/**
 * The one place that knows how the two eras of MCP differ: the legacy revisions (2025-11-25 and
 * before: an `initialize` handshake, bare results) and the modern one (2026-07-28: every request
 * carries its version, capabilities and identity in `_meta`, and results say what they are and how
 * long they may be cached). Method handlers never ask which revision a request speaks: the
 * dispatcher reads the envelope here and dresses the result here.
 */
import { INVALID_PARAMS, ProtocolError, ResourceNotFoundError } from '../lib/errors.js';
import type { ClientLogLevel } from '../registry/interface.js';
import { isObject, withFields } from './json-rpc.js';

/** The revisions that carry their envelope in every request, newest first. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];
/**
 * The revisions an `initialize` handshake can agree on, newest first: the last one before the
 * stateless revision and the earlier ones the SDK's clients still send.
 */
export const LEGACY_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];

export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
  traceparent: 'traceparent',
} as const;

/** 2026-07-28's error codes. */
export const HEADER_MISMATCH = -32020;
export const MISSING_CLIENT_CAPABILITY = -32021;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/** 2025-11-25 and before: a resource that does not exist. 2026-07-28 answers it with -32602 (SEP-2164). */
export const LEGACY_RESOURCE_NOT_FOUND = -32002;

export const LOG_LEVELS: readonly ClientLogLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

export type Era = 'legacy' | 'modern';

/** What a request says about itself, whichever revision it speaks. */
export interface Envelope {
  readonly era: Era;
  /** The revision named by the request (modern) or its HTTP header (legacy); undefined when neither says. */
  readonly version: string | undefined;
  /** Modern only: the level of log messages the client asked for with this request; none when absent. */
  readonly logLevel?: ClientLogLevel;
  /** A valid W3C trace context from `_meta.traceparent`, in either era. */
  readonly traceparent?: string;
  /**
   * The extensions the client declares with this request (`clientCapabilities.extensions`). Only a
   * modern request declares any: a legacy client's handshake offers none that this server serves.
   */
  readonly extensions: ReadonlySet<string>;
}

/** An error the edge answers before any handler runs, with the HTTP status the revision gives it. */
export class EdgeError extends ProtocolError {
  constructor(
    code: number,
    message: string,
    readonly status: number,
    data?: Record<string, unknown>,
  ) {
    super(code, message, data);
    this.name = 'EdgeError';
  }
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A W3C trace context worth continuing: well formed, and not of the forbidden version ff. */
export function validTraceparent(value: unknown): string | undefined {
  return typeof value === 'string' && TRACEPARENT.test(value) && !value.startsWith('ff') ? value : undefined;
}

/**
 * Reads a request's envelope. The body decides the era: `_meta` with any `io.modelcontextprotocol/`
 * envelope key makes a modern request, whose version the HTTP header (when given) must repeat; a
 * request without one is legacy, unless its header names a modern revision, which then needs the
 * envelope it lacks.
 */
export function readEnvelope(params: Record<string, unknown> | undefined, headerVersion?: string): Envelope {
  const meta = isObject(params?._meta) ? params._meta : undefined;
  const traceparent = validTraceparent(meta?.traceparent);
  const trace = traceparent === undefined ? {} : { traceparent };
  const claimed =
    meta !== undefined && (META.protocolVersion in meta || META.clientCapabilities in meta || META.clientInfo in meta);
  if (!claimed) {
    if (headerVersion !== undefined && MODERN_VERSIONS.includes(headerVersion)) {
      throw new EdgeError(
        INVALID_PARAMS,
        `Invalid params: a ${headerVersion} request must carry _meta with "${META.protocolVersion}" and "${META.clientCapabilities}"`,
        400,
      );
    }
    if (headerVersion !== undefined && !SUPPORTED_VERSIONS.includes(headerVersion)) throw unsupported(headerVersion);
    return { era: 'legacy', version: headerVersion, extensions: NO_EXTENSIONS, ...trace };
  }
  const version = meta[META.protocolVersion];
  if (headerVersion !== undefined && version !== undefined && version !== headerVersion) {
    throw new EdgeError(
      HEADER_MISMATCH,
      `Header mismatch: MCP-Protocol-Version header ${JSON.stringify(headerVersion.slice(0, 40))} does not match _meta "${META.protocolVersion}" ${JSON.stringify(String(version).slice(0, 40))}`,
      400,
    );
  }
  if (typeof version !== 'string') {
    throw new EdgeError(INVALID_PARAMS, `Invalid params: _meta "${META.protocolVersion}" must be a string`, 400);
  }
  if (!MODERN_VERSIONS.includes(version)) throw unsupported(version);
  if (!isObject(meta[META.clientCapabilities])) {
    throw new EdgeError(INVALID_PARAMS, `Invalid params: _meta "${META.clientCapabilities}" must be an object`, 400);
  }
  const info = meta[META.clientInfo];
  if (info !== undefined && !(isObject(info) && typeof info.name === 'string' && typeof info.version === 'string')) {
    throw new EdgeError(
      INVALID_PARAMS,
      `Invalid params: _meta "${META.clientInfo}" must be an object with a string name and version`,
      400,
    );
  }
  const level = meta[META.logLevel];
  if (level !== undefined && !LOG_LEVELS.includes(level as ClientLogLevel)) {
    throw new EdgeError(
      INVALID_PARAMS,
      `Invalid params: _meta "${META.logLevel}" must be one of ${LOG_LEVELS.join(', ')}`,
      400,
    );
  }
  const declared = (meta[META.clientCapabilities] as Record<string, unknown>).extensions;
  return {
    era: 'modern',
    version,
    extensions: isObject(declared) ? new Set(Object.keys(declared)) : NO_EXTENSIONS,
    ...(level === undefined ? {} : { logLevel: level as ClientLogLevel }),
    ...trace,
  };
}

const NO_EXTENSIONS: ReadonlySet<string> = new Set();

/**
 * The error a request gets when it needs an extension its client did not declare (2026-07-28's
 * Missing Required Client Capability, answered with HTTP 400), naming the extension.
 */
export function missingExtension(extension: string, what: string): ProtocolError {
  return new ProtocolError(
    MISSING_CLIENT_CAPABILITY,
    `Missing required client capability: ${what} needs ${extension}`,
    {
      requiredCapabilities: { extensions: { [extension]: {} } },
    },
  );
}

function unsupported(requested: string): EdgeError {
  return new EdgeError(
    UNSUPPORTED_PROTOCOL_VERSION,
    `Unsupported protocol version ${JSON.stringify(requested.slice(0, 40))}: this server speaks ${SUPPORTED_VERSIONS.join(', ')}`,
    400,
    { supported: [...SUPPORTED_VERSIONS], requested: requested.slice(0, 100) },
  );
}

/**
 * The capabilities a legacy `initialize` is answered with. A legacy client hears of list changes and
 * resource updates only outside its requests, which a transport without a standing stream (stateless
 * HTTP offers no GET stream) cannot do: there, no list is said to announce its changes, and no
 * resource to be subscribable. A modern client asks for them with subscriptions/listen on any
 * transport, so `server/discover` keeps them.
 */
export function handshakeCapabilities(
  capabilities: Record<string, unknown>,
  unsolicited: boolean,
): Record<string, unknown> {
  // The extensions served (tasks) are 2026-07-28's: a legacy request cannot declare them.
  const { extensions: _modernOnly, ...legacy } = capabilities;
  capabilities = legacy;
  if (unsolicited) return capabilities;
  const silenced = (value: Record<string, unknown>): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(value).map(([flag, on]) => [flag, flag === 'listChanged' || flag === 'subscribe' ? false : on]),
    );
  return Object.fromEntries(
    Object.entries(capabilities).map(([name, value]) => [name, isObject(value) ? silenced(value) : value]),
  );
}

/** How long, and for whom, a modern client may keep a result (2026-07-28's CacheableResult). */
export interface CacheHint {
  readonly ttlMs: number;
  readonly cacheScope: 'public' | 'private';
}

/**
 * A handler's result dressed for the request's era. Modern results say they are complete (unless the
 * handler says what else it is: a task handle, `resultType: "task"`), name the server in `_meta`,
 * and carry their cache hint; legacy results go as they are.
 */
export function dressResult(
  envelope: Envelope,
  result: Record<string, unknown>,
  serverInfo: Record<string, unknown>,
  cache: CacheHint | undefined,
): Record<string, unknown> {
  if (envelope.era === 'legacy') return result;
  const { _meta: meta, ...own } = result;
  const fields = {
    resultType: 'complete',
    ...cache,
    _meta: { ...(isObject(meta) ? meta : {}), [META.serverInfo]: serverInfo },
  };
  // A result with a _meta of its own is written afresh, with the server's identity added to it.
  return withFields(meta === undefined ? result : own, fields);
}

/** The code a handler's error travels with in the request's era. */
export function errorCode(envelope: Envelope | undefined, err: ProtocolError): number {
  return err instanceof ResourceNotFoundError && envelope?.era !== 'modern' ? LEGACY_RESOURCE_NOT_FOUND : err.code;
}

/**
 * The HTTP status of an error answer. Errors of the edge have their own; an error a handler returns
 * travels in a 200, as a result would, except a missing client capability, which 2026-07-28 gives a
 * 400 wherever it arises. A method the request's revision lacks is a 404 in 2026-07-28 and a plain
 * answer before it.
 */
export function errorStatus(envelope: Envelope | undefined, code: number, fromEdge: boolean): number {
  if (code === MISSING_CLIENT_CAPABILITY) return 400;
  if (code === -32601) return envelope?.era === 'modern' ? 404 : 200;
  return fromEdge ? 400 : 200;
}

/** The param a request's `Mcp-Name` header mirrors: a tool's or prompt's name, a URI, a task's id. */
export type NameParam = 'name' | 'uri' | 'taskId';

/** `=?base64?…?=`: how 2026-07-28 carries a header value that is not plain visible ASCII. */
const BASE64_SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;
const PLAIN_HEADER_VALUE = /^[\x20-\x7e\t]*$/;

/**
 * 2026-07-28's check of the headers that mirror the body on HTTP: `Mcp-Method` must name the body's
 * method, and `Mcp-Name` the tool, prompt, resource or task the body names, for methods that name one.
 * (The version header was checked with the envelope.)
 */
export function checkMirroredHeaders(
  method: string,
  params: Record<string, unknown> | undefined,
  nameParam: NameParam | undefined,
  header: (name: string) => string | undefined,
): void {
  if (header('mcp-protocol-version') === undefined) {
    throw new EdgeError(HEADER_MISMATCH, 'Header mismatch: the MCP-Protocol-Version header is required', 400);
  }
  const mcpMethod = header('mcp-method');
  if (mcpMethod === undefined) {
    throw new EdgeError(HEADER_MISMATCH, 'Header mismatch: the Mcp-Method header is required', 400);
  }
  if (mcpMethod !== method) {
    throw new EdgeError(
      HEADER_MISMATCH,
      `Header mismatch: Mcp-Method header ${JSON.stringify(mcpMethod.slice(0, 100))} does not match body method ${JSON.stringify(method.slice(0, 100))}`,
      400,
    );
  }
  if (nameParam === undefined) return;
  const raw = header('mcp-name');
  if (raw === undefined) {
    throw new EdgeError(HEADER_MISMATCH, `Header mismatch: the Mcp-Name header is required for ${method}`, 400);
  }
  const decoded = decodeHeaderValue(raw);
  if (decoded === undefined) {
    throw new EdgeError(HEADER_MISMATCH, 'Header mismatch: the Mcp-Name header holds invalid characters', 400);
  }
  const bodyValue = params?.[nameParam];
  if (decoded !== bodyValue) {
    throw new EdgeError(
      HEADER_MISMATCH,
      `Header mismatch: Mcp-Name header ${JSON.stringify(decoded.slice(0, 100))} does not match body ${nameParam} ${JSON.stringify(String(bodyValue).slice(0, 100))}`,
      400,
    );
  }
}

/** A header value as sent, or decoded from its base64 sentinel; undefined when it is malformed. */
function decodeHeaderValue(raw: string): string | undefined {
  const sentinel = BASE64_SENTINEL.exec(raw);
  if (!sentinel) return PLAIN_HEADER_VALUE.test(raw) ? raw : undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(sentinel[1]!, 'base64'));
  } catch {
    return undefined;
  }
}
