/**
 * MCP over stdio: the form that MCP client configurations launch. One JSON-RPC message per line in
 * each direction; stdout carries only protocol messages.
 *
 * A transport of its own rather than the SDK's: the shared handler validates every message already,
 * so a line is parsed once and not checked again by a schema; results go out serialized once
 * (see encodeMessage); and a line over the size limit is answered with an error instead of ending the
 * session.
 */
import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import {
  cancelledRequestId,
  encodeMessage,
  errorResponse,
  createIdScanner,
  isObject,
  parseJson,
  requestIdOf,
  type OutgoingMessage,
  type IdScanner,
  type RequestId as Id,
} from '../protocol/json-rpc.js';
import type { McpServer, PacedTransport } from '../server.js';

const NEWLINE = 0x0a;
/**
 * Bytes of requests read and not yet handed to the server beyond which stdin is paused: what a
 * script pipes in waits in the pipe, not in this process's memory.
 */
const MAX_WAITING_BYTES = 1 << 20;

export interface StdioOptions {
  readonly input?: Readable;
  readonly output?: Writable;
  /** Longest line accepted, in bytes; the same limit as an HTTP body. */
  readonly maxLineBytes?: number;
  /**
   * Requests handed to the server at a time; later lines wait in order. A script that pipes in many
   * calls at once is then paced instead of refused as busy: give it the calls the session can have
   * running without waiting (CallLimits.callerCapacity).
   */
  readonly maxInFlight?: number;
  /**
   * Aborted when the server starts to stop: from then on a request is answered with an error
   * carrying its id instead of being run, and so are requests read but not handed over yet.
   */
  readonly stopping?: AbortSignal;
}

/** JSON-RPC's implementation-defined server error, for requests refused while stopping. */
const SHUTTING_DOWN = -32000;

/** A line-delimited JSON-RPC transport over a pair of streams (stdin and stdout by default). */
export function createStdioTransport(options: StdioOptions = {}): PacedTransport {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const maxLineBytes = options.maxLineBytes ?? 1 << 20;
  const maxInFlight = Math.max(1, options.maxInFlight ?? 4);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /**
   * Set while the rest of an over-long line is being skipped: it is scanned, never kept, for the id its
   * error is answered under, which is answered once the id is read or the line ends.
   */
  let skipping: { scanner: IdScanner; answered: boolean } | undefined;
  let closed = false;
  let inputEnded = false;
  /** Requests handed to the server and not answered yet, by id (a count: a client may reuse an id). */
  const inFlight = new Map<Id, number>();
  let inFlightCount = 0;
  /** Requests read but not handed over yet, in order, and the bytes of their lines. */
  const waiting: { id: Id; message: unknown; bytes: number }[] = [];
  let waitingBytes = 0;
  /**
   * Set while stdout holds more than its high-water mark, until it drains: a reader that does not
   * keep up stops the server from taking more requests, so answers wait as requests, unread in the pipe.
   */
  let outputFull = false;
  let inputPaused = false;

  const transport: PacedTransport = {
    stopping: options.stopping,
    start: async () => {
      input.on('data', onData);
      input.once('end', onEnd);
      input.once('error', onStreamError);
      output.once('error', onStreamError);
      options.stopping?.addEventListener('abort', onStopping, { once: true });
      output.on('drain', onDrain);
    },
    send: async (message) => {
      write(message as OutgoingMessage);
      // An answer (not a notification) ends its request.
      const { id } = message as { id?: unknown };
      if ((typeof id === 'string' || typeof id === 'number') && !('method' in message)) settle(id);
    },
    close: async () => close(),
    // A cancelled call's place is given back only when the server is done with it, so that the next
    // request cannot find the caller's admission slots still taken and be refused as busy.
    unanswered: (id) => settle(id),
  };

  function onData(chunk: Buffer): void {
    let from = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, from)) {
      const tail = chunk.subarray(from, at);
      from = at + 1;
      if (skipping) {
        skip(tail, true);
        continue;
      }
      if (pendingBytes + tail.length > maxLineBytes) {
        tooLong(tail, true);
        continue;
      }
      const line = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
      pending = [];
      pendingBytes = 0;
      receive(line);
    }
    const rest = chunk.subarray(from);
    if (rest.length === 0) return;
    if (skipping) return skip(rest, false);
    if (pendingBytes + rest.length > maxLineBytes) {
      tooLong(rest, false);
      return;
    }
    pending.push(rest);
    pendingBytes += rest.length;
  }

  function onEnd(): void {
    // A last line without its newline is still a line.
    if (skipping) skip(Buffer.alloc(0), true);
    else if (pending.length > 0) receive(Buffer.concat(pending));
    pending = [];
    pendingBytes = 0;
    inputEnded = true;
    closeIfDone();
  }

  /** A line over the limit: what was kept of it is scanned for its id and let go, and the rest is skipped. */
  function tooLong(more: Buffer, ends: boolean): void {
    skipping = { scanner: createIdScanner(), answered: false };
    for (const piece of pending) skipping.scanner.feed(piece);
    pending = [];
    pendingBytes = 0;
    skip(more, ends);
  }

  /**
   * More of an over-long line, scanned for its id: the error goes out as soon as the id is read (or
   * when the line ends without one), so that a client waiting under that id is answered at once.
   */
  function skip(more: Buffer, ends: boolean): void {
    const line = skipping!;
    line.scanner.feed(more);
    if (ends) line.scanner.end();
    if (!line.answered && line.scanner.done) {
      line.answered = true;
      write(errorResponse(line.scanner.id, -32600, `Invalid Request: a message is limited to ${maxLineBytes} bytes`));
    }
    if (ends) skipping = undefined;
  }

  function receive(line: Buffer): void {
    const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    if (end === 0) return; // blank lines between messages are harmless
    const parsed = parseJson(line.subarray(0, end));
    if (!parsed) {
      write(errorResponse(undefined, -32700, 'Parse error: a line is not valid UTF-8 JSON'));
      return;
    }
    const message = parsed.value;
    const id = requestIdOf(message);
    if (id === undefined) {
      // Notifications and anything the dispatcher answers at once (without an id, for a malformed message).
      const cancelled = cancelledRequestId(message);
      if (cancelled !== undefined) forgetWaiting(cancelled);
      deliver(message);
    } else if (options.stopping?.aborted) {
      refuse(id);
    } else if (isObject(message) && message.method === 'subscriptions/listen') {
      // A subscription lasts as long as the session: it takes no place among the paced requests, and
      // the end of stdin ends it rather than waiting for it.
      deliver(message);
    } else {
      waiting.push({ id, message, bytes: end });
      waitingBytes += end;
      pump();
    }
  }

  function onStopping(): void {
    for (const { id } of waiting.splice(0)) refuse(id);
    waitingBytes = 0;
    regulateInput();
    closeIfDone();
  }

  function refuse(id: Id): void {
    write(
      errorResponse(id, SHUTTING_DOWN, 'Server shutting down: the request was not run; send it again after a restart'),
    );
  }

  function write(message: OutgoingMessage): void {
    if (closed) return;
    if (!output.write(`${encodeMessage(message)}\n`)) {
      outputFull = true;
      regulateInput();
    }
  }

  /**
   * Hands waiting requests to the server while fewer than maxInFlight are unanswered and stdout is
   * not full, then pauses or resumes stdin to match.
   */
  function pump(): void {
    while (!closed && !outputFull && inFlightCount < maxInFlight && waiting.length > 0) {
      const { id, message, bytes } = waiting.shift()!;
      waitingBytes -= bytes;
      inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
      inFlightCount++;
      deliver(message);
    }
    regulateInput();
  }

  /**
   * Reading stops while stdout is full or too many requests wait, and goes on when both clear. Lines
   * answered at once (parse errors) are written without waiting, so a full stdout must stop them too.
   */
  function regulateInput(): void {
    const hold = outputFull || waitingBytes >= MAX_WAITING_BYTES;
    if (hold && !inputPaused && !inputEnded) {
      inputPaused = true;
      input.pause();
    } else if (!hold && inputPaused) {
      inputPaused = false;
      input.resume();
    }
  }

  function onDrain(): void {
    outputFull = false;
    pump();
  }

  function deliver(message: unknown): void {
    transport.onmessage?.(message as JSONRPCMessage);
  }

  /** A request was answered, or cancelled (which the server does not answer). */
  function settle(id: Id): void {
    const count = inFlight.get(id);
    if (count === undefined) return;
    if (count > 1) inFlight.set(id, count - 1);
    else inFlight.delete(id);
    inFlightCount--;
    pump();
    closeIfDone();
  }

  /** A cancelled request that was still waiting is dropped; one in flight is settled when the server is done with it. */
  function forgetWaiting(id: Id): void {
    const at = waiting.findIndex((w) => w.id === id);
    if (at !== -1) {
      waitingBytes -= waiting[at]!.bytes;
      waiting.splice(at, 1);
      regulateInput();
    }
  }

  function closeIfDone(): void {
    if (inputEnded && inFlightCount === 0 && waiting.length === 0) close();
  }

  function onStreamError(err: Error): void {
    transport.onerror?.(err);
    close();
  }

  function close(): void {
    if (closed) return;
    closed = true;
    input.off('data', onData);
    options.stopping?.removeEventListener('abort', onStopping);
    output.off('drain', onDrain);
    transport.onclose?.();
  }

  return transport;
}

/** Serves until the client closes stdin and every request read is answered; resolves when the answers are out. */
export async function serveStdio(server: McpServer, options: StdioOptions = {}): Promise<void> {
  const output = options.output ?? process.stdout;
  await server.connect(createStdioTransport(options));
  await server.closed;
  await server.close().catch(() => undefined);
  // A pipe whose reader is slow holds answers back; the process must not exit before they are out.
  await new Promise<void>((resolve) => output.write('', () => resolve()));
}
