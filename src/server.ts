/**
 * The MCP server for stdio and in-process transports: every message goes through the same stateless
 * handler as HTTP (transports/json-rpc.ts), so one code path answers every client.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { CallDeps, Caller, Registry } from './registry.js';
import {
  cancelledRequestId,
  handleMessage,
  isCancellation,
  requestIdOf,
  type RequestId,
} from './transports/json-rpc.js';

/** Kept equal to package.json's version; a test checks it. */
export const VERSION = '0.1.0';

export const SERVER_INFO = { name: 'querygate', title: 'querygate: read-only sales queries', version: VERSION };
export const CAPABILITIES = { tools: { listChanged: false } };
/**
 * The MCP versions this server speaks, newest first: the specification it follows (2025-11-25) and
 * the earlier ones the SDK's clients still send. Its own list, so that serving does not load the SDK's
 * schemas (about 15 MB); a test keeps it equal to the SDK's.
 */
export const PROTOCOL_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];
export const INSTRUCTIONS = [
  'querygate answers questions about sales data through fixed, read-only query tools.',
  'Every tool takes start_date and end_date (YYYY-MM-DD, inclusive, at most 90 days counted inclusively); split longer periods into several calls.',
  'Revenue figures are net: cancelled and refunded orders are left out. Customer data comes back desensitized.',
].join(' ');

export interface ServerDeps extends CallDeps {
  readonly registry: Registry;
}

/**
 * A transport that wants to know when a request ends without an answer (the client cancelled it):
 * stdio paces requests by the ones still running, and a cancelled call runs on until its query is
 * cancelled and its connection released.
 */
export interface PacedTransport extends Transport {
  unanswered?(id: RequestId): void;
}

export interface McpServer {
  /** Starts serving messages from the transport. */
  connect(transport: PacedTransport): Promise<void>;
  /** Resolves when the transport closes (the client went away). */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/** An MCP server for one caller over one transport: it lists and runs only the caller's tools. */
export function createServer(deps: ServerDeps, caller: Caller): McpServer {
  let transport: PacedTransport | undefined;
  const inFlight = new Map<RequestId, AbortController>();
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));

  const receive = (message: JSONRPCMessage): void => {
    // Anything may arrive (a stdio line is any JSON): the handler answers what is not a request.
    if (isCancellation(message)) {
      // The client gave up: abort the call, which cancels its query; no answer is sent for it.
      const requestId = cancelledRequestId(message);
      if (requestId !== undefined) inFlight.get(requestId)?.abort();
      return;
    }
    const abort = new AbortController();
    const id = requestIdOf(message);
    if (id !== undefined) inFlight.set(id, abort);
    void handleMessage(message, deps, caller, abort.signal)
      .then(async (response) => {
        if (response && !abort.signal.aborted) await transport?.send(response as JSONRPCMessage);
        else if (id !== undefined) transport?.unanswered?.(id);
      })
      .catch((err: unknown) => deps.logger.warn('could not answer a message', { message: String(err) }))
      .finally(() => {
        if (id !== undefined && inFlight.get(id) === abort) inFlight.delete(id);
      });
  };

  return {
    closed,
    connect: async (next) => {
      transport = next;
      next.onmessage = receive;
      next.onerror = (err) => deps.logger.warn('transport error', { message: err.message });
      next.onclose = () => {
        for (const abort of inFlight.values()) abort.abort();
        inFlight.clear();
        markClosed();
      };
      await next.start();
    },
    close: async () => {
      await transport?.close();
    },
  };
}
