/**
 * The three kinds of error, kept apart:
 * 1. ArgumentError - the model can fix the call; an isError result naming the field and the rule.
 * 2. InfraError - database down, timeout, busy; an isError result with a code and a retry hint,
 *    details only in the log under the request id.
 * 3. ConfigError - a programmer or operator mistake; thrown at start-up, the server refuses to run.
 * Protocol errors (unknown tool, malformed request) are JSON-RPC errors raised by the server itself.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface ArgumentIssue {
  /** Dotted path of the offending argument, or "arguments" for the object as a whole. */
  readonly field: string;
  /** The rule that was broken, phrased so a model can correct the call. */
  readonly rule: string;
}

export class ArgumentError extends Error {
  /**
   * `invalid_arguments`, or another stable code for a call refused for what the model can change:
   * `too_many_jobs`, `unknown_job`.
   */
  constructor(
    readonly issues: readonly ArgumentIssue[],
    readonly code: string = 'invalid_arguments',
  ) {
    // A rule that already names its field ("end_date 2025-01-01 is before ...") is not prefixed again.
    super(
      issues
        .map((i) => (i.field === 'arguments' || i.rule.startsWith(`${i.field} `) ? i.rule : `${i.field}: ${i.rule}`))
        .join('; '),
    );
    this.name = 'ArgumentError';
  }
}

export type InfraErrorCode =
  'database_unavailable' | 'database_refused' | 'timeout' | 'busy' | 'rate_limited' | 'query_failed' | 'shutting_down';

const INFRA_TEXT: Record<InfraErrorCode, (retryAfter: number) => string> = {
  database_unavailable: () => 'The database is unavailable right now. Retry in a few seconds.',
  database_refused: () =>
    "The database refused the server's login or a permission the query needs. Retrying will not help until an operator fixes the credentials or the grants; report the request id.",
  timeout: () => 'The query timed out and was cancelled. Try a narrower date range, or retry later.',
  busy: (s) => `The server is busy. Retry in ${s} second${s === 1 ? '' : 's'}.`,
  rate_limited: (s) => `Too many calls: the rate limit is reached. Retry in ${s} second${s === 1 ? '' : 's'}.`,
  query_failed: () => 'The query failed on the server. Retrying will not help; report the request id.',
  shutting_down: () => 'The server is stopping and cancelled the query before it finished. Retry in a few seconds.',
};

export class InfraError extends Error {
  constructor(
    readonly code: InfraErrorCode,
    /** The underlying failure; logged, never sent to the client. */
    override readonly cause?: unknown,
    /** For refusals: seconds after which a retry can succeed. */
    readonly retryAfterSeconds = 1,
  ) {
    super(INFRA_TEXT[code](retryAfterSeconds));
    this.name = 'InfraError';
  }
}

/** A JSON-RPC protocol error: `code`, `message` and `data` go on the wire as they are. */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** JSON-RPC "Invalid params", which the spec uses for an unknown tool. */
export const INVALID_PARAMS = -32602;
/** JSON-RPC "Method not found". */
export const METHOD_NOT_FOUND = -32601;

/**
 * A resource the request names does not exist. Its code depends on the request's revision (-32602
 * since 2026-07-28, -32002 before), which revisions.ts gives it; the URI goes back in `data`.
 */
export class ResourceNotFoundError extends ProtocolError {
  constructor(readonly uri: string) {
    super(INVALID_PARAMS, `Resource not found: ${JSON.stringify(uri.slice(0, 200))}`, { uri });
    this.name = 'ResourceNotFoundError';
  }
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * A configuration mistake that is a right the database withholds: the reader lacks a grant a served
 * source needs. Still kind 3 (the server refuses to run); `querygate report` tells it apart, with the
 * exit status of a refused login, since the same person fixes both.
 */
export class PermissionError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = 'PermissionError';
  }
}

const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
]);

/** Maps a node-postgres failure onto the infrastructure error a client may see. */
export function classifyDatabaseError(err: unknown): InfraError {
  if (err instanceof InfraError) return err;
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const message = err instanceof Error ? err.message : '';
  if (code === '57014') return new InfraError('timeout', err); // query_canceled: statement_timeout fired
  if (code === '25P03') return new InfraError('timeout', err); // idle_in_transaction_session_timeout
  if (/^Query read timeout$/.test(message)) return new InfraError('timeout', err); // pg's client-side backstop
  // PgBouncer's refusals when its pools are full: the query never started, so it is a wait, not a slow query.
  if (/^(query_wait_timeout|no more connections allowed)/.test(message)) return new InfraError('busy', err);
  // Admission control never lets more calls run than the pool has connections, so a pool timeout
  // means a connection could not be opened in time: the database is unreachable.
  if (/timeout exceeded when trying to connect/i.test(message)) return new InfraError('database_unavailable', err);
  // A wrong or rotated password (28P01), a role that may not log in (28000), a grant missing (42501):
  // an operator's to fix, not an outage to wait out.
  if (typeof code === 'string' && (code.startsWith('28') || code === '42501')) {
    return new InfraError('database_refused', err);
  }
  if (
    (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P') || code === '53300')) ||
    (typeof code === 'string' && UNAVAILABLE_NODE_CODES.has(code)) ||
    /Connection terminated|connection timeout|Connection refused/i.test(message)
  ) {
    return new InfraError('database_unavailable', err);
  }
  return new InfraError('query_failed', err);
}

/** The isError result for a failed call: safe text only, keyed by the request id found in the log. */
export function errorResult(err: ArgumentError | InfraError, requestId: string): CallToolResult {
  const text = !(err instanceof ArgumentError)
    ? err.message
    : err.code === 'invalid_arguments'
      ? `Invalid arguments: ${err.message}. Fix the arguments and call again.`
      : `Refused: ${err.message}.`;
  return {
    isError: true,
    content: [{ type: 'text', text: `${text} (code: ${err.code}, request_id: ${requestId})` }],
  };
}
