/**
 * The outcome of authenticating one HTTP request, whatever proved it: a static token or an OAuth
 * access token. A failure says why in words a client may see (never token material), and which
 * status it gets: 401 to authenticate again, 403 when a valid token is not enough, 503 when the
 * authorization server could not be asked.
 */
import type { Caller } from '../lib/caller.js';

export type AuthFailureReason =
  | 'missing_token'
  | 'malformed_token'
  | 'unknown_token'
  | 'expired'
  | 'not_yet_valid'
  | 'bad_signature'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'disallowed_algorithm'
  | 'unknown_key'
  | 'inactive_token'
  | 'insufficient_scope'
  | 'missing_claim'
  | 'bad_claim'
  | 'issuer_unavailable';

export interface AuthFailure {
  readonly ok: false;
  readonly reason: AuthFailureReason;
  readonly status: 401 | 403 | 503;
  /** For the client: what was wrong, without any token material. */
  readonly description: string;
  /** For 403 insufficient_scope: the scopes that would do. */
  readonly scope?: readonly string[];
  /** For 503: the seconds after which the authorization server will be asked again. */
  readonly retryAfterSeconds?: number;
}

export interface AuthSuccess {
  readonly ok: true;
  readonly caller: Caller;
  /** Present when the caller's tools come from scopes: a tool outside them gets an insufficient_scope challenge. */
  readonly scopes?: readonly string[];
  /** When the token stops being valid (ms since the epoch), for a verified OAuth token: it is not trusted past it. */
  readonly expiresAt?: number;
}

export type AuthResult = AuthSuccess | AuthFailure;

/** Checks one bearer token. */
export type TokenCheck = (token: string) => Promise<AuthResult | undefined>;

export function failure(
  reason: AuthFailureReason,
  description: string,
  status: 401 | 403 | 503 = 401,
  scope?: readonly string[],
): AuthFailure {
  return { ok: false, reason, status, description, ...(scope ? { scope } : {}) };
}

/** The bearer token of an Authorization header; undefined when there is none, null when it is malformed. */
export function bearerToken(authorization: string | undefined): string | undefined | null {
  if (authorization === undefined || authorization.trim() === '') return undefined;
  // RFC 6750's b64token characters.
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
  return match ? match[1]! : null;
}

/** Validates a data-scope claim's value: a non-empty string, or a non-empty list of them. */
export function claimValues(value: unknown): readonly string[] | undefined {
  const values = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(values) || values.length === 0) return undefined;
  if (!values.every((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200)) return undefined;
  return [...new Set(values)];
}
