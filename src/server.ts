/**
 * The MCP server for stdio and in-process transports: one session, one caller. Every message goes
 * through the same dispatcher as HTTP (protocol/dispatcher.ts), so one code path answers every
 * client; the session keeps only what a legacy client set up (initialize, logging/setLevel,
 * resources/subscribe). A legacy client that initialized is sent notifications/tools/list_changed
 * when the tools it sees change, and notifications/resources/updated for the resources it subscribed
 * to that follow them (the catalog); a 2026-07-28 client asks for both with subscriptions/listen.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Caller } from './lib/caller.js';
import { followingTools } from './protocol/content-context.js';
import { createDispatcher, type DispatchDeps, type Session } from './protocol/dispatcher.js';
import { cancelledRequestId, isCancellation, requestIdOf, type RequestId } from './protocol/json-rpc.js';
import { watchVisibleTools } from './registry/live.js';

export { VERSION, describeServer } from './protocol/identity.js';
export { LEGACY_VERSIONS as PROTOCOL_VERSIONS, SUPPORTED_VERSIONS } from './protocol/revisions.js';

export type ServerDeps = DispatchDeps;

/**
 * A transport that wants to know when a request ends without an answer (the client cancelled it):
 * stdio paces requests by the ones still running, and a cancelled call runs on until its query is
 * cancelled and its connection released.
 */
export interface PacedTransport extends Transport {
  unanswered?(id: RequestId): void;
  /** Aborted when the server starts to stop: a subscription then ends with its answer. */
  readonly stopping?: AbortSignal;
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
  const dispatcher = createDispatcher(deps);
  const session: Session = {};
  let transport: PacedTransport | undefined;
  const inFlight = new Map<RequestId, AbortController>();
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));

  const receive = (message: JSONRPCMessage): void => {
    // Anything may arrive (a stdio line is any JSON): the dispatcher answers what is not a request.
    if (isCancellation(message)) {
      // The client gave up: abort the call, which cancels its query; no answer is sent for it.
      const requestId = cancelledRequestId(message);
      if (requestId !== undefined) inFlight.get(requestId)?.abort();
      return;
    }
    const abort = new AbortController();
    const id = requestIdOf(message);
    if (id !== undefined) inFlight.set(id, abort);
    const notify = (notification: object): void => {
      if (!abort.signal.aborted) void transport?.send(notification as JSONRPCMessage);
    };
    void dispatcher
      .handle(message, { caller, signal: abort.signal, closing: transport?.stopping, session, notify })
      .then(async ({ response }) => {
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
      const unwatch = watchVisibleTools(deps.registry, caller, () => {
        if (!session.initialized) return;
        void next.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
        for (const uri of followingTools(deps, session.resourceSubscriptions ?? [])) {
          void next.send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } });
        }
      });
      next.onclose = () => {
        unwatch();
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
