/**
 * OAuth 2.1 access tokens, as a resource server checks them: a JWT is verified against its issuer's
 * published keys (an allow-list of asymmetric algorithms, the issuer, this server as the audience
 * per RFC 8707, exp and nbf with a small skew); an opaque token is asked about by introspection
 * (RFC 7662) when an authorization server is configured for it. The token's scopes give its tools,
 * its claims its data scope. Tokens are never passed on, and never logged.
 */
import { createHmac } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, type JWTPayload } from 'jose';
import type { AuthorizationServerSettings, OAuthSettings } from '../config-file/index.js';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { claimValues, failure, type AuthResult } from './authenticator.js';
import { callerWithScopes, grantsAnything, type Grants } from './grants.js';
import { createIssuer, IssuerUnavailable, readJson, type Issuer } from './issuers.js';
import { createTokenCache } from './token-cache.js';

export interface OAuthDeps {
  readonly grants: Grants;
  /** The data-scope dimensions the served packs declare: `data_scope` may map claims to these only. */
  readonly dimensions: ReadonlySet<string>;
  /** Key of the hash that stands for subjects in audit lines and caller ids. */
  readonly subjectKey: Uint8Array;
  readonly logger: Logger;
  readonly env?: NodeJS.ProcessEnv;
  readonly now?: () => number;
}

export interface OAuthResourceServer {
  check(token: string): Promise<AuthResult>;
  /** Fetches every issuer's keys, so that the first calls do not wait; failures are logged, not thrown. */
  warm(): Promise<void>;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const INTROSPECTION_CACHE_SIZE = 10_000;
const INTROSPECTION_CACHE_MS = 60_000;
/**
 * After an introspection request fails, none is made for this long, doubled at each failure in a row
 * up to the maximum: an authorization server in trouble is not asked once per bad token.
 */
const INTROSPECTION_BACKOFF_MS = 1000;
const INTROSPECTION_MAX_BACKOFF_MS = 30_000;

/**
 * The claim of that name ("region", or Entra ID's flat "extn.region"), or else at that dotted path
 * ("realm_access.region", for a claim nested in an object).
 */
function claimAt(payload: Record<string, unknown>, path: string): unknown {
  if (path in payload) return payload[path];
  let value: unknown = payload;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/**
 * The token's scopes, from each of its scope claims: `scope` (RFC 9068, space-separated), `scp` (Entra
 * ID, Okta: a string or a list), or others the configuration names (Entra ID's `roles`).
 */
function scopesOf(payload: Record<string, unknown>, claims: readonly string[]): string[] {
  return claims.flatMap((claim) => {
    const raw = claimAt(payload, claim);
    const list = typeof raw === 'string' ? raw.split(' ') : Array.isArray(raw) ? raw : [];
    return list.filter((s): s is string => typeof s === 'string' && s.length > 0);
  });
}

export function createOAuthResourceServer(settings: OAuthSettings, deps: OAuthDeps): OAuthResourceServer {
  const now = deps.now ?? Date.now;
  const env = deps.env ?? process.env;
  const issuers: Issuer[] = settings.authorizationServers.map((as) =>
    createIssuer(as, {
      refetchMs: settings.jwksRefetchSeconds * 1000,
      maxAgeMs: settings.jwksMaxAgeSeconds * 1000,
      now,
      logger: deps.logger,
    }),
  );
  for (const dimension of Object.keys(settings.dataScope)) {
    if (!deps.dimensions.has(dimension)) {
      throw new ConfigError(
        `QUERYGATE_CONFIG oauth.data_scope.${dimension}: not a data-scope dimension of the served packs (${deps.dimensions.size === 0 ? 'they declare none' : [...deps.dimensions].join(', ')})`,
      );
    }
  }
  const secrets = new Map<AuthorizationServerSettings, string>();
  settings.authorizationServers.forEach((as, i) => {
    if (!as.introspection) return;
    const secret = env[as.introspection.clientSecretEnv];
    if (secret === undefined || secret === '') {
      throw new ConfigError(
        `QUERYGATE_CONFIG oauth.authorization_servers[${i}].introspection.client_secret_env: ${as.introspection.clientSecretEnv} is not set`,
      );
    }
    secrets.set(as, secret);
  });
  const audiences = (as: AuthorizationServerSettings): string[] => [...(as.audience ?? [settings.resource])];

  const subjectHash = (issuer: string, subject: string): string =>
    `sub-${createHmac('sha256', deps.subjectKey).update(`${issuer}\n${subject}`).digest('base64url').slice(0, 22)}`;

  /** The caller a verified token (or an active introspection answer) stands for. */
  const callerFrom = (payload: Record<string, unknown>, as: AuthorizationServerSettings): AuthResult => {
    const scopes = scopesOf(payload, as.scopeClaims);
    if (!grantsAnything(scopes, deps.grants)) {
      return failure('insufficient_scope', 'the token grants none of the scopes this server serves', 403, [
        ...deps.grants.scopes().keys(),
      ]);
    }
    const dataScope: Record<string, readonly string[]> = {};
    for (const [dimension, { claim, whenMissing }] of Object.entries(settings.dataScope)) {
      const value = claimAt(payload, claim);
      if (value === undefined) {
        if (whenMissing === 'unscoped') continue;
        return failure(
          'missing_claim',
          `the token carries no "${claim}" claim, which this server requires to know the caller's ${dimension}`,
          403,
        );
      }
      const values = claimValues(value);
      if (!values) {
        return failure('bad_claim', `the token's "${claim}" claim is not a value or a list of values`, 403);
      }
      dataScope[dimension] = values;
    }
    const clientId = [payload.client_id, payload.azp, payload.appid].find((v): v is string => typeof v === 'string');
    const subject = typeof payload.sub === 'string' ? payload.sub : clientId;
    if (subject === undefined) return failure('missing_claim', 'the token names neither a subject nor a client');
    const shown = settings.hashSubjects
      ? subjectHash(as.issuer, subject)
      : issuers.length > 1
        ? `${as.issuer}#${subject}`
        : subject;
    return {
      ok: true,
      scopes,
      ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}),
      caller: callerWithScopes(
        {
          // "oauth:" keeps subjects apart from static token names (which cannot hold ":"): an IdP
          // subject named like a token must not share its jobs, its rate or its audit lines.
          id: `oauth:${shown}`,
          subject: shown,
          ...(clientId === undefined ? {} : { clientId }),
          ...(Object.keys(dataScope).length > 0 ? { dataScope } : {}),
        },
        scopes,
        deps.grants,
      ),
    };
  };

  const verifyJwt = async (token: string): Promise<AuthResult> => {
    let alg: unknown;
    let claims: JWTPayload;
    try {
      alg = decodeProtectedHeader(token).alg;
      claims = decodeJwt(token);
    } catch {
      return failure('malformed_token', 'the access token is not a well-formed JWT');
    }
    const issuer = issuers.find((i) => i.settings.issuer === claims.iss);
    if (!issuer)
      return failure('wrong_issuer', 'the token was not issued by an authorization server this server trusts');
    const { algorithms } = issuer.settings;
    if (typeof alg !== 'string' || !algorithms.includes(alg)) {
      return failure(
        'disallowed_algorithm',
        `the token's algorithm is not accepted; accepted: ${algorithms.join(', ')}`,
      );
    }
    try {
      const { payload } = await issuer.verify(token, {
        issuer: issuer.settings.issuer,
        audience: audiences(issuer.settings),
        algorithms: [...algorithms],
        clockTolerance: settings.clockSkewSeconds,
        requiredClaims: ['exp'],
        ...(issuer.settings.tokenType === undefined ? {} : { typ: issuer.settings.tokenType }),
        currentDate: new Date(now()),
      });
      return callerFrom(payload, issuer.settings);
    } catch (err) {
      return verificationFailure(err, deps.logger, issuer.settings.issuer);
    }
  };

  const introspected = createTokenCache(INTROSPECTION_CACHE_SIZE, now);
  // At most one authorization server introspects (the configuration's rule): an opaque token is its.
  const introspector = issuers.find((i) => secrets.has(i.settings));
  /**
   * A circuit breaker in front of the introspection endpoint: after a failure, no request until
   * `closedUntil`, then a single one (a probe) while the others wait outside with 503 and Retry-After.
   */
  let backoffMs = 0;
  let closedUntil = 0;
  let probing = false;
  const unavailable = (): AuthResult => ({
    ...failure('issuer_unavailable', 'the authorization server could not be asked about the token', 503),
    retryAfterSeconds: Math.max(1, Math.ceil((closedUntil - now()) / 1000)),
  });
  const introspect = async (token: string): Promise<AuthResult> => {
    if (!introspector) {
      return failure('malformed_token', 'the access token is not a JWT, and opaque tokens are not accepted here');
    }
    const cached = introspected.get(token);
    if (cached) return cached;
    if (backoffMs > 0 && (now() < closedUntil || probing)) return unavailable();
    const as = introspector.settings;
    let answer: Record<string, unknown>;
    const probe = backoffMs > 0;
    if (probe) probing = true;
    try {
      answer = await introspectAt(introspector, token, as.introspection!.clientId, secrets.get(as)!);
      backoffMs = 0;
    } catch (err) {
      backoffMs = Math.min(INTROSPECTION_MAX_BACKOFF_MS, Math.max(INTROSPECTION_BACKOFF_MS, backoffMs * 2));
      closedUntil = now() + backoffMs;
      deps.logger.warn('token introspection failed; not asking again for a while', {
        issuer: as.issuer,
        message: (err as Error).message,
        retry_in_ms: backoffMs,
      });
      return unavailable();
    } finally {
      if (probe) probing = false;
    }
    let result: AuthResult = failure('inactive_token', 'the authorization server says the token is not active');
    let until = now() + INTROSPECTION_CACHE_MS;
    if (answer.active === true) {
      result = checkIntrospected(answer, as);
      if (result.ok) result = callerFrom(answer, as);
      if (typeof answer.exp === 'number') until = Math.min(until, answer.exp * 1000);
    }
    introspected.set(token, result, until);
    return result;
  };

  const checkIntrospected = (answer: Record<string, unknown>, as: AuthorizationServerSettings): AuthResult => {
    const t = now() / 1000;
    if (answer.iss !== undefined && answer.iss !== as.issuer) {
      return failure('wrong_issuer', 'the token was not issued by an authorization server this server trusts');
    }
    const aud = [answer.aud].flat();
    if (!audiences(as).some((a) => aud.includes(a))) {
      return failure('wrong_audience', 'the token was not issued for this server');
    }
    if (typeof answer.exp === 'number' && answer.exp + settings.clockSkewSeconds <= t) {
      return failure('expired', 'the token has expired');
    }
    if (typeof answer.nbf === 'number' && answer.nbf - settings.clockSkewSeconds > t) {
      return failure('not_yet_valid', 'the token is not valid yet');
    }
    return { ok: true, caller: { id: '' } };
  };

  return {
    check: (token) => (JWT_SHAPE.test(token) ? verifyJwt(token) : introspect(token)),
    warm: async () => {
      for (const issuer of issuers) {
        await issuer.warm().catch((err: unknown) =>
          deps.logger.warn('could not fetch the signing keys of an authorization server yet', {
            issuer: issuer.settings.issuer,
            message: (err as Error).message,
          }),
        );
      }
    },
  };
}

async function introspectAt(
  issuer: Issuer,
  token: string,
  clientId: string,
  secret: string,
): Promise<Record<string, unknown>> {
  const endpoint = await issuer.introspectionEndpoint();
  if (endpoint === undefined)
    throw new IssuerUnavailable(`${issuer.settings.issuer} publishes no introspection endpoint`);
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
    signal: AbortSignal.timeout(5000),
  });
  if (!response.ok) throw new IssuerUnavailable(`introspection answered HTTP ${response.status}`);
  const answer = await readJson(response, endpoint);
  if (typeof answer !== 'object' || answer === null) throw new IssuerUnavailable('introspection answered no object');
  return answer as Record<string, unknown>;
}

function verificationFailure(err: unknown, logger: Logger, issuer: string): AuthResult {
  if (err instanceof IssuerUnavailable) {
    logger.warn('could not fetch the signing keys of an authorization server', { issuer, message: err.message });
    return failure('issuer_unavailable', 'the authorization server could not be reached to check the token', 503);
  }
  if (err instanceof errors.JWTExpired) return failure('expired', 'the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'aud') return failure('wrong_audience', 'the token was not issued for this server');
    if (err.claim === 'iss')
      return failure('wrong_issuer', 'the token was not issued by an authorization server this server trusts');
    if (err.claim === 'nbf' || err.claim === 'iat') return failure('not_yet_valid', 'the token is not valid yet');
    if (err.claim === 'typ') return failure('malformed_token', 'the token is not an access token (its typ header)');
    return failure('malformed_token', `the token's "${err.claim}" claim is missing or invalid`);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return failure('bad_signature', 'the token signature does not verify');
  if (err instanceof errors.JOSEAlgNotAllowed)
    return failure('disallowed_algorithm', "the token's algorithm is not accepted");
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return failure('unknown_key', 'the token is signed with a key the authorization server does not publish');
  }
  if (err instanceof errors.JOSEError) return failure('malformed_token', 'the access token is not a valid JWT');
  logger.error('token verification failed unexpectedly', { issuer, message: (err as Error).message });
  return failure('malformed_token', 'the access token could not be checked');
}
