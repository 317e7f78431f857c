/**
 * What one call of a tool reports along the way and at its end: its audit line, the client's log
 * message, the job runner's ending, and the error result a client gets; and the result of a call
 * that succeeded.
 */
import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { callerFields, type AuditEntry, type AuditOutcome } from '../../observability/audit.js';
import {
  ArgumentError,
  ConfigError,
  INVALID_PARAMS,
  InfraError,
  ProtocolError,
  errorResult,
} from '../../lib/errors.js';
import { preSerialized } from '../../protocol/json-rpc.js';
import type { CallDeps, CallOptions, ClientLogLevel } from '../interface.js';

const REPORT_LEVEL: Record<AuditOutcome, ClientLogLevel> = {
  ok: 'info',
  cancelled: 'info',
  rejected: 'warning',
  refused: 'warning',
  unknown_tool: 'warning',
  failed: 'error',
};

/** What one call of a tool (a template or a report) reports along the way and at its end. */
export interface CallRecord {
  readonly requestId: string;
  args: Record<string, unknown> | null;
  /** For a refusal: when a retry can succeed. */
  retryAfterSeconds?: number;
  audit(outcome: AuditOutcome, fields?: Partial<AuditEntry>): void;
  fail(error: InfraError, cause?: unknown): CallToolResult;
  reject(error: ArgumentError): CallToolResult;
  cancelled(): CallToolResult;
}

export function callRecord(name: string, deps: CallDeps, options: CallOptions): CallRecord {
  const requestId = randomUUID();
  const started = performance.now();
  const trace = options.traceparent === undefined ? {} : { traceparent: options.traceparent };
  const record: CallRecord = {
    requestId,
    args: null,
    audit: (outcome, fields = {}) => {
      const duration = Math.round((performance.now() - started) * 100) / 100;
      deps.audit.write({
        request_id: requestId,
        caller: options.caller.id,
        ...callerFields(options.caller),
        tool: name,
        arguments: record.args,
        outcome,
        duration_ms: duration,
        ...trace,
        ...fields,
      });
      const { error_code, invalid_fields, row_count } = fields;
      options.ended?.({
        outcome,
        ...(error_code === undefined ? {} : { code: error_code }),
        ...(record.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: record.retryAfterSeconds }),
      });
      options.report?.(REPORT_LEVEL[outcome], {
        tool: name,
        outcome,
        ...(error_code === undefined ? {} : { error_code }),
        ...(invalid_fields === undefined ? {} : { invalid_fields }),
        ...(row_count === undefined ? {} : { row_count }),
        duration_ms: duration,
        request_id: requestId,
      });
    },
    fail: (error, cause) => {
      record.retryAfterSeconds = error.retryAfterSeconds;
      if (cause !== undefined) {
        deps.logger.error('tool call failed', { request_id: requestId, ...trace, ...describeCause(cause) });
      }
      record.audit(error.code === 'rate_limited' || error.code === 'busy' ? 'refused' : 'failed', {
        error_class: 'infrastructure',
        error_code: error.code,
      });
      return errorResult(error, requestId);
    },
    reject: (error) => {
      record.audit('rejected', {
        error_class: 'argument',
        error_code: error.code,
        invalid_fields: error.issues.map((i) => i.field),
      });
      return errorResult(error, requestId);
    },
    // Nobody waits for the answer to a call the client gave up on, whether it was waiting for a
    // connection or running: that is neither a refusal, a timeout nor a failure.
    cancelled: () => {
      record.audit('cancelled');
      return { isError: true, content: [{ type: 'text', text: `The call was cancelled. (request_id: ${requestId})` }] };
    },
  };
  return record;
}

/**
 * The result for structured output: the structure, and its JSON text in a text block for clients that
 * read text. The JSON is written once and kept on the result, so a transport can put the whole result
 * on the wire without serializing the rows a second time (see preSerialized).
 */
export function successResult(data: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(data);
  return preSerialized<CallToolResult>(
    { content: [{ type: 'text', text }], structuredContent: data },
    `{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}}`,
  );
}

/** What the log may say about a failure: the message and pg error code, never the SQL or parameters. */
function describeCause(err: unknown): Record<string, unknown> {
  if (err instanceof InfraError || err instanceof ConfigError) {
    return { class: err.name, message: err.message, ...(err.cause ? { cause: describeCause(err.cause) } : {}) };
  }
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { class: err.name, message: err.message, ...(code ? { code } : {}) };
  }
  return { class: typeof err };
}

/**
 * The answer to a tool that does not exist and to one outside the caller's toolset, the same so that
 * nobody can probe: an audit line, then the protocol error -32602.
 */
export function refuseUnknownTool(name: string, deps: CallDeps, options: CallOptions): never {
  deps.audit.write({
    request_id: randomUUID(),
    caller: options.caller.id,
    ...callerFields(options.caller),
    tool: String(name).slice(0, 100),
    arguments: null,
    outcome: 'unknown_tool',
    error_class: 'protocol',
    error_code: 'unknown_tool',
    duration_ms: 0,
    ...(options.traceparent === undefined ? {} : { traceparent: options.traceparent }),
  });
  // The same answer for a tool that does not exist and one outside the toolset: no probing.
  throw new ProtocolError(INVALID_PARAMS, `Unknown tool: ${JSON.stringify(String(name).slice(0, 100))}`);
}
