/**
 * Who is calling over HTTP: static tokens, OAuth access tokens, or both; and what the server says to
 * a client that must authenticate (RFC 6750's challenge, RFC 9728's Protected Resource Metadata).
 */
import type { OAuthSettings } from '../config-file/index.js';
import { bearerToken, failure, type AuthFailure, type AuthResult } from './authenticator.js';
import { scopesGranting, type Grants } from './grants.js';
import type { OAuthResourceServer } from './oauth.js';
import { createTokenCache } from './token-cache.js';
import type { StaticTokens } from './static-tokens.js';

export type { AuthFailure, AuthFailureReason, AuthResult } from './authenticator.js';
export type { Grants, ScopeGrants, Toolsets } from './grants.js';
export { createOAuthResourceServer } from './oauth.js';
export { loadStaticTokens } from './static-tokens.js';
export { createFailureThrottle, type FailureThrottle } from './throttle.js';

/** Longest bearer token looked at: anything longer is refused before any work is done on it. */
const MAX_TOKEN_LENGTH = 8192;
/** Verified OAuth tokens kept, so that a client's next requests cost no verification. */
const VERIFIED_CACHE_SIZE = 10_000;
const VERIFIED_CACHE_MS = 60_000;

export interface ProtectedResource {
  /** The paths this server answers the metadata at: the path-suffixed form (RFC 9728 §3.1) and the bare one. */
  readonly paths: readonly string[];
  /** Where a client finds it, for the challenge's resource_metadata. */
  readonly metadataUrl: string;
  document(): Record<string, unknown>;
}

export interface Authenticator {
  /**
   * The answer when it needs no work: no token or a malformed header, a static token, or an OAuth
   * token verified a moment ago (kept up to a minute, never past its exp). Undefined when the token
   * must be verified, which may wait on a signature check or on the authorization server.
   */
  known(authorization: string | undefined): AuthResult | undefined;
  authenticate(authorization: string | undefined): Promise<AuthResult>;
  /** The scopes that grant a tool: an insufficient_scope challenge names them. */
  scopesGranting(tool: string): string[];
  /** The WWW-Authenticate value for a refusal. */
  challenge(refusal: AuthFailure): string;
  /** Present when OAuth is configured. */
  readonly protectedResource: ProtectedResource | undefined;
  /** Static tokens configured. */
  readonly staticTokens: number;
}

/** A value for a quoted-string parameter: no quotes, backslashes or control characters. */
const quoted = (value: string): string =>
  `"${[...value]
    .filter((c) => c >= ' ' && c <= '~' && c !== '"' && c !== '\\')
    .join('')
    .slice(0, 300)}"`;

export function createAuthenticator(options: {
  readonly staticTokens?: StaticTokens;
  readonly oauth?: { readonly settings: OAuthSettings; readonly server: OAuthResourceServer };
  readonly grants: Grants;
  readonly now?: () => number;
}): Authenticator | undefined {
  const { staticTokens, oauth, grants } = options;
  if (!staticTokens && !oauth) return undefined;
  const protectedResource = oauth && protectedResourceOf(oauth.settings, grants);
  const now = options.now ?? Date.now;
  const verified = createTokenCache(VERIFIED_CACHE_SIZE, now);
  const known = (authorization: string | undefined): AuthResult | undefined => {
    const token = bearerToken(authorization);
    if (token === undefined) return failure('missing_token', 'a bearer token is required');
    if (token === null || token.length > MAX_TOKEN_LENGTH) {
      return failure('malformed_token', 'the Authorization header is not "Bearer <token>"');
    }
    // Static tokens first: a hash lookup, cheaper than any signature.
    const found = staticTokens?.check(token);
    if (found) return found;
    if (!oauth) return failure('unknown_token', 'the token is not one this server knows');
    return verified.get(token);
  };
  return {
    staticTokens: staticTokens?.count ?? 0,
    protectedResource,
    scopesGranting: (tool) => scopesGranting(tool, grants),
    known,
    authenticate: async (authorization) => {
      const answer = known(authorization);
      if (answer) return answer;
      const token = bearerToken(authorization)!;
      const result = await oauth!.server.check(token);
      if (result.ok) verified.set(token, result, Math.min(now() + VERIFIED_CACHE_MS, result.expiresAt ?? Infinity));
      return result;
    },
    challenge: (refusal) => {
      const params: string[] = [];
      // RFC 6750: invalid_token goes with 401, insufficient_scope with 403; another 403 (a token
      // without its data-scope claim) names no error, so that a client does not sign in again in a loop.
      if (refusal.reason === 'insufficient_scope') params.push('error="insufficient_scope"');
      else if (refusal.status === 401 && refusal.reason !== 'missing_token') params.push('error="invalid_token"');
      else params.push('realm="querygate"');
      if (protectedResource) params.push(`resource_metadata=${quoted(protectedResource.metadataUrl)}`);
      const scope = refusal.scope ?? (refusal.reason === 'missing_token' ? [...grants.scopes().keys()] : []);
      if (scope.length > 0) params.push(`scope=${quoted(scope.join(' '))}`);
      if (refusal.reason !== 'missing_token') params.push(`error_description=${quoted(refusal.description)}`);
      return `Bearer ${params.join(', ')}`;
    },
  };
}

function protectedResourceOf(settings: OAuthSettings, grants: Grants): ProtectedResource {
  const url = new URL(settings.resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const bare = '/.well-known/oauth-protected-resource';
  return {
    paths: path === '' ? [bare] : [`${bare}${path}`, bare],
    metadataUrl: `${url.origin}${bare}${path}`,
    document: () => ({
      resource: settings.resource,
      authorization_servers: settings.authorizationServers.map((as) => as.issuer),
      scopes_supported: [...grants.scopes().keys()],
      bearer_methods_supported: ['header'],
      resource_name: 'querygate',
    }),
  };
}
