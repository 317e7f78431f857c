/** Raw POSTs to an MCP endpoint, so that headers and bodies a well-behaved client would never send can be. */
import { request } from 'node:http';

export interface Answer {
  status: number;
  headers: Record<string, unknown>;
  /** The body as sent: JSON, or an SSE stream of messages. */
  body: string;
  json: Record<string, unknown> & {
    id?: unknown;
    result?: Record<string, unknown>;
    error?: Record<string, unknown> & { code?: number; message?: string };
  };
}

/** POSTs `body` (JSON unless a string) with JSON and SSE accepted; a header given as undefined is left out. */
export function post(url: URL, body: unknown, headers: Record<string, string | undefined> = {}): Promise<Answer> {
  const sent: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) delete sent[name];
    else sent[name] = value;
  }
  return new Promise((done, fail) => {
    const req = request(url, { method: 'POST', headers: sent }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => {
        let json = {};
        try {
          json = JSON.parse(text) as object;
        } catch {
          // an SSE body: the test reads `body`
        }
        done({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: json as Answer['json'] });
      });
    });
    req.on('error', fail);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}
