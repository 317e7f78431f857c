/**
 * OpenTelemetry traces, off unless QUERYGATE_TRACING=otlp: one span per tool call, continuing the
 * trace context the client sent (`_meta.traceparent`, or the HTTP `traceparent` header), and a child
 * span for each statement it runs. Exported over OTLP/HTTP (JSON) to the collector the standard
 * OTEL_EXPORTER_OTLP_* variables name. Nothing global is set: the provider, its tracer and the
 * current call are this object's own, passed explicitly, so several servers in one process keep
 * their traces apart. Spans carry the statement's text, never its parameters, and no result rows.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReaderDatabase } from '../db/connect.js';
import type { Logger } from '../lib/logger.js';
import type { Registry } from '../registry/interface.js';

export interface Tracing {
  /** The registry, with a span around each call. */
  registry<R extends Registry>(registry: R): R;
  /** The reader, with a span around each statement, a child of the call that ran it. */
  database(db: ReaderDatabase): ReaderDatabase;
  /** Sends the spans still buffered and stops. */
  shutdown(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();

export function createTracing(env: NodeJS.ProcessEnv, logger: Logger, version: string): Tracing {
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? 'querygate',
      'service.version': version,
    }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), {
        ...(Number.isInteger(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
      }),
    ],
  });
  const tracer: Tracer = provider.getTracer('querygate', version);
  const currentCall = new AsyncLocalStorage<Span>();
  logger.info('tracing: spans go to the OTLP endpoint', {
    endpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318',
  });

  return {
    registry: (registry) => {
      const traced = Object.create(registry) as typeof registry;
      Object.defineProperty(traced, 'call', {
        value: (async (name, args, deps, options) => {
          const parent =
            options.traceparent === undefined
              ? ROOT_CONTEXT
              : propagator.extract(ROOT_CONTEXT, { traceparent: options.traceparent }, defaultTextMapGetter);
          // A name the server does not serve is the client's text: it names no span.
          const served = registry.tools.some((tool) => tool.name === name);
          const span = tracer.startSpan(
            served ? `tools/call ${name}` : 'tools/call (unknown tool)',
            {
              kind: SpanKind.SERVER,
              attributes: {
                'mcp.method.name': 'tools/call',
                'gen_ai.operation.name': 'execute_tool',
                ...(served ? { 'gen_ai.tool.name': name } : {}),
                'querygate.caller': options.caller.id,
              },
            },
            parent,
          );
          try {
            const result = await currentCall.run(span, () => registry.call(name, args, deps, options));
            if (result.isError) span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool answered an error' });
            return result;
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).name });
            throw err;
          } finally {
            span.end();
          }
        }) satisfies Registry['call'],
      });
      return traced;
    },
    database: (db) => ({
      compiler: db.compiler,
      pool: db.pool,
      close: () => db.close(),
      execute: async (statement, signal) => {
        const call = currentCall.getStore();
        const span = tracer.startSpan(
          'db.query',
          {
            kind: SpanKind.CLIENT,
            attributes: { 'db.system.name': 'postgresql', 'db.query.text': statement.sql },
          },
          call ? trace.setSpan(ROOT_CONTEXT, call) : ROOT_CONTEXT,
        );
        try {
          const result = await db.execute(statement, signal);
          span.setAttribute('db.response.returned_rows', result.rows.length);
          return result;
        } catch (err) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (err as { code?: string }).code ?? 'error' });
          throw err;
        } finally {
          span.end();
        }
      },
    }),
    shutdown: () => provider.shutdown(),
  };
}
