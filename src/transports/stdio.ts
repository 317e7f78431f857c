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
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer } from '../server.js';
import { encodeMessage, type JsonRpcResponse } from './json-rpc.js';

const NEWLINE = 0x0a;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface StdioOptions {
  readonly input?: Readable;
  readonly output?: Writable;
  /** Longest line accepted, in bytes; the same limit as an HTTP body. */
  readonly maxLineBytes?: number;
}

/** A line-delimited JSON-RPC transport over a pair of streams (stdin and stdout by default). */
export function createStdioTransport(options: StdioOptions = {}): Transport {
  const input = options.input ?? process.stdin;
  const output = options.output ?? process.stdout;
  const maxLineBytes = options.maxLineBytes ?? 1 << 20;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Set while the rest of an over-long line is being skipped. */
  let skipping = false;
  let closed = false;
  /** Requests read but not yet answered: when input ends, they are answered before the session closes. */
  const unanswered = new Set<string | number>();
  let inputEnded = false;

  const transport: Transport = {
    start: async () => {
      input.on('data', onData);
      input.once('end', () => {
        inputEnded = true;
        if (unanswered.size === 0) close();
      });
      input.once('error', onStreamError);
      output.once('error', onStreamError);
    },
    send: async (message) => {
      if (closed) return;
      output.write(`${encodeMessage(message as JsonRpcResponse)}\n`);
      settle((message as { id?: unknown }).id);
    },
    close: async () => close(),
  };

  function onData(chunk: Buffer): void {
    let from = 0;
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, from)) {
      const tail = chunk.subarray(from, at);
      from = at + 1;
      if (skipping) {
        skipping = false;
        continue;
      }
      if (pendingBytes + tail.length > maxLineBytes) {
        tooLong();
        continue;
      }
      const line = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
      pending = [];
      pendingBytes = 0;
      receive(line);
    }
    const rest = chunk.subarray(from);
    if (rest.length === 0 || skipping) return;
    if (pendingBytes + rest.length > maxLineBytes) {
      tooLong();
      skipping = true;
      return;
    }
    pending.push(rest);
    pendingBytes += rest.length;
  }

  function tooLong(): void {
    pending = [];
    pendingBytes = 0;
    reply(-32600, `Invalid Request: a message is limited to ${maxLineBytes} bytes`);
  }

  function receive(line: Buffer): void {
    const end = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    if (end === 0) return; // blank lines between messages are harmless
    let message: unknown;
    try {
      message = JSON.parse(utf8.decode(line.subarray(0, end)));
    } catch {
      reply(-32700, 'Parse error: a line is not valid UTF-8 JSON');
      return;
    }
    track(message);
    transport.onmessage?.(message as JSONRPCMessage);
  }

  function track(message: unknown): void {
    if (typeof message !== 'object' || message === null) return;
    const { id, method, params } = message as { id?: unknown; method?: unknown; params?: { requestId?: unknown } };
    if (method === 'notifications/cancelled')
      settle(params?.requestId); // a cancelled call is not answered
    else if (typeof method === 'string' && (typeof id === 'string' || typeof id === 'number')) unanswered.add(id);
  }

  function settle(id: unknown): void {
    if (!unanswered.delete(id as string | number)) return;
    if (inputEnded && unanswered.size === 0) close();
  }

  function reply(code: number, message: string): void {
    void transport.send({ jsonrpc: '2.0', id: null, error: { code, message } } as unknown as JSONRPCMessage);
  }

  function onStreamError(err: Error): void {
    transport.onerror?.(err);
    close();
  }

  function close(): void {
    if (closed) return;
    closed = true;
    input.off('data', onData);
    transport.onclose?.();
  }

  return transport;
}

/** Serves until the client closes stdin; resolves then. */
export async function serveStdio(server: McpServer): Promise<void> {
  await server.connect(createStdioTransport());
  await server.closed;
  await server.close().catch(() => undefined);
}
