/**
 * OpenTelemetry traces: the built CLI with QUERYGATE_TRACING=otlp sends its spans to a real OTLP/HTTP
 * receiver on loopback. A call continues the trace context the client sent, in `_meta.traceparent`
 * or in the HTTP `traceparent` header, and each statement it runs is a child span; spans carry the
 * statement's text but never its parameters.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCli, type RunningCli } from './support/cli.js';
import { post } from './support/raw-http.js';
import { eventually } from './support/scratch.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: OtlpValue }[];
}
interface Received {
  resource: Record<string, OtlpValue>;
  span: OtlpSpan;
}

let receiver: Server;
const received: Received[] = [];
let server: RunningCli;
let url: URL;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/v1/traces' && /json/.test(req.headers['content-type'] ?? '')) {
        const parsed = JSON.parse(body) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: OtlpValue }[] };
            scopeSpans: { spans: OtlpSpan[] }[];
          }[];
        };
        for (const rs of parsed.resourceSpans) {
          const resource = Object.fromEntries(rs.resource.attributes.map((a) => [a.key, a.value]));
          for (const ss of rs.scopeSpans) for (const span of ss.spans) received.push({ resource, span });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
  const port = (receiver.address() as { port: number }).port;
  server = startCli(['serve', '--http', '--port', '0'], {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_TOKEN_KEY: 'tracing-test-key-0123',
    QUERYGATE_TRACING: 'otlp',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  url = new URL((await server.waitForLog(/listening on (http:\/\/[^"\s]+\/mcp)/))[1]!);
});

afterAll(async () => {
  expect(await server?.stop()).toBe(0);
  await new Promise((done) => receiver?.close(done));
});

const attribute = (span: OtlpSpan, key: string): OtlpValue | undefined =>
  span.attributes.find((a) => a.key === key)?.value;

function context(): { traceId: string; spanId: string; traceparent: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

async function callOrderCount(meta: Record<string, unknown>, headers: Record<string, string> = {}): Promise<void> {
  const answer = await post(
    url,
    {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'query_order_count',
        arguments: { start_date: '2025-06-01', end_date: '2025-06-07' },
        _meta: meta,
      },
    },
    { 'mcp-protocol-version': '2025-11-25', ...headers },
  );
  expect(answer.status).toBe(200);
  expect(answer.json.result?.isError).toBeFalsy();
}

/** The call span of a trace and the statement spans under it, once they have arrived. */
async function traceOf(traceId: string): Promise<{ call: Received; statements: Received[] }> {
  return eventually(`the spans of trace ${traceId}`, async () => {
    const spans = received.filter((r) => r.span.traceId === traceId);
    const call = spans.find((r) => r.span.name === 'tools/call query_order_count');
    const statements = spans.filter((r) => r.span.name === 'db.query');
    return call && statements.length > 0 ? { call, statements } : undefined;
  });
}

describe('traces', () => {
  it('continue the trace context of _meta.traceparent, with a child span per statement', async () => {
    const sent = context();
    await callOrderCount({ traceparent: sent.traceparent });
    const { call, statements } = await traceOf(sent.traceId);
    expect(call.span.parentSpanId).toBe(sent.spanId);
    expect(call.span.kind).toBe(2); // SERVER
    expect(attribute(call.span, 'gen_ai.tool.name')?.stringValue).toBe('query_order_count');
    expect(attribute(call.span, 'mcp.method.name')?.stringValue).toBe('tools/call');
    expect(call.resource['service.name']?.stringValue).toBe('querygate');
    for (const { span } of statements) {
      expect(span.parentSpanId).toBe(call.span.spanId);
      expect(span.kind).toBe(3); // CLIENT
      expect(attribute(span, 'db.system.name')?.stringValue).toBe('postgresql');
      const text = attribute(span, 'db.query.text')?.stringValue ?? '';
      expect(text).toMatch(/^select /i);
      // Parameters are bound, so the arguments' values are not in the text.
      expect(text).not.toContain('2025-06');
    }
  });

  it('continue the HTTP traceparent header when the request has no _meta.traceparent', async () => {
    const sent = context();
    await callOrderCount({}, { traceparent: sent.traceparent });
    const { call } = await traceOf(sent.traceId);
    expect(call.span.parentSpanId).toBe(sent.spanId);
  });

  it('start a trace of their own when the client sent none, or a malformed one', async () => {
    const before = new Set(received.map((r) => r.span.traceId));
    await callOrderCount({ traceparent: 'ff-not-a-trace-context' });
    const fresh = await eventually('a call span in a new trace', async () =>
      received.find((r) => r.span.name === 'tools/call query_order_count' && !before.has(r.span.traceId)),
    );
    expect(fresh.span.parentSpanId ?? '').toBe('');
  });
});
