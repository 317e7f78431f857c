import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Caller } from '../../lib/caller.js';
import { encodeMessage, isObject, type OutgoingMessage } from '../../protocol/json-rpc.js';
import type { Edge } from './edge.js';

const KEEP_ALIVE_MS = 15_000;

/**
 * Dispatches the message and writes its answer: one JSON response, or an SSE stream of the log
 * messages the request asked for ending with the answer; an initialize is given a legacy session id.
 */
export async function answer(
  { dispatcher, closing, sessions }: Edge,
  caller: Caller,
  message: unknown,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The client going away mid-call aborts it, which cancels its query on the server.
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  // Log messages the request asked for go ahead of the answer on an SSE stream, opened by the first.
  const streams = /text\/event-stream/i.test(req.headers.accept ?? '');
  let keepAlive: NodeJS.Timeout | undefined;
  const event = (outgoing: OutgoingMessage): void => {
    if (!res.headersSent) {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'x-accel-buffering': 'no',
      });
      // A comment now and then, so that proxies and clients keep a quiet stream (subscriptions/listen) open.
      keepAlive = setInterval(() => res.write(':\n\n'), KEEP_ALIVE_MS);
      res.once('close', () => clearInterval(keepAlive));
    }
    res.write(`event: message\ndata: ${encodeMessage(outgoing)}\n\n`);
  };
  const { response, status } = await dispatcher.handle(message, {
    caller,
    signal: abort.signal,
    closing,
    session: {},
    notify: streams ? (notification) => !abort.signal.aborted && event(notification) : undefined,
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
  });
  if (res.headersSent) {
    clearInterval(keepAlive);
    if (response && !abort.signal.aborted) event(response);
    res.end();
    return;
  }
  if (response === undefined) {
    res.writeHead(202).end();
    return;
  }
  const json = encodeMessage(response);
  if (isObject(message) && message.method === 'initialize' && 'result' in response) {
    res.setHeader('mcp-session-id', sessions.mint(caller.id));
  }
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
}
