import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseJson } from '../../protocol/json-rpc.js';
import { sendError, type Edge } from './edge.js';

/** The most of a body over the limit that is read (and thrown away) so that its client can read the 413. */
const DISCARD_BYTES = 16 << 20;

/**
 * The one JSON-RPC message a POST carries, or undefined when the request was refused: its method,
 * its content type, what it accepts, its size, its JSON, a batch.
 */
export async function readMessage(
  { options }: Edge,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<{ readonly value: unknown } | undefined> {
  if (req.method !== 'POST') {
    // Stateless server: no standalone SSE stream (GET), and sessions that end by themselves (DELETE).
    res.setHeader('allow', 'POST');
    sendError(res, 405, -32000, 'Method not allowed: this stateless server takes POST only');
    return undefined;
  }
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType !== 'application/json') {
    sendError(res, 415, -32000, 'Unsupported Media Type: send application/json');
    return undefined;
  }
  if (!/application\/json|\*\/\*/i.test(req.headers.accept ?? '')) {
    sendError(res, 406, -32000, 'Not Acceptable: accept application/json');
    return undefined;
  }
  const body = await readBody(req, options.maxBodyBytes);
  if (body === 'too_large') {
    options.metrics?.refusal('http_body_too_large');
    sendError(res, 413, -32600, `Request body larger than ${options.maxBodyBytes} bytes`);
    return undefined;
  }
  const decoded = parseJson(body);
  if (!decoded) {
    sendError(res, 400, -32700, 'Parse error: the body is not valid UTF-8 JSON');
    return undefined;
  }
  if (Array.isArray(decoded.value)) {
    // JSON-RPC batches left MCP in 2025-06-18.
    sendError(res, 400, -32600, 'Invalid Request: JSON-RPC batches are not supported');
    return undefined;
  }
  return { value: decoded.value };
}

/**
 * The body, or 'too_large' as soon as it is known to pass the limit. The rest of a body too large is
 * still read, and thrown away, up to DISCARD_BYTES: the client is most likely still sending it, and
 * a connection closed under it is reset before it can read its 413 (EPIPE). Past that bound the
 * connection is cut; within it, the body is read to its end and the connection serves on.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    let chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const refuse = (): void => {
      tooLarge = true;
      chunks = [];
      resolve('too_large');
    };
    if (Number.isFinite(declared) && declared > limit) refuse();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (!tooLarge && size > limit) refuse();
      if (!tooLarge) chunks.push(chunk);
      else if (size > DISCARD_BYTES) req.socket.destroy();
    });
    req.once('end', () => {
      if (!tooLarge) resolve(Buffer.concat(chunks));
    });
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the client went away while sending its request'));
    });
  });
}
