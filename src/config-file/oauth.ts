/**
 * The configuration file's `oauth` section: the settings of the OAuth resource server, their schema
 * (as the file spells them) and the settings made of them. A room of its own since only the auth
 * layer reads it, and it is as long as the rest of the file's schema.
 */
import { z } from 'zod';

/** One authorization server whose access tokens are accepted. */
export interface AuthorizationServerSettings {
  /** The issuer identifier: its tokens' `iss`, and where its metadata is found. */
  readonly issuer: string;
  /** The `aud` its tokens must carry; this server's canonical URL when absent (RFC 8707). */
  readonly audience: readonly string[] | undefined;
  /** Where its signing keys are; from its metadata when absent. */
  readonly jwksUri: string | undefined;
  /** The signature algorithms accepted: asymmetric ones only. */
  readonly algorithms: readonly string[];
  /** The JOSE header `typ` a token must have (`at+jwt`, RFC 9068), so that an ID token is not taken for an access token. */
  readonly tokenType: string | undefined;
  /** The claims whose values are the token's scopes: `scope` and `scp` by default; Entra ID puts app permissions in `roles`. */
  readonly scopeClaims: readonly string[];
  /** RFC 7662 introspection of opaque tokens; JWTs only when absent. */
  readonly introspection:
    { readonly endpoint: string | undefined; readonly clientId: string; readonly clientSecretEnv: string } | undefined;
}

/** How a token claim becomes a data-scope dimension. */
export interface DataScopeClaim {
  readonly claim: string;
  /** A token without the claim: refused (the default), or let through unscoped on that dimension. */
  readonly whenMissing: 'refuse' | 'unscoped';
}

export interface OAuthSettings {
  /** This server's canonical URL, as clients reach it (https://host/mcp): the resource of RFC 8707 and 9728. */
  readonly resource: string;
  readonly authorizationServers: readonly AuthorizationServerSettings[];
  /** Data-scope dimension → the claim carrying its values. */
  readonly dataScope: Readonly<Record<string, DataScopeClaim>>;
  /** Whether audit lines carry a keyed hash of the subject instead of the subject itself. */
  readonly hashSubjects: boolean;
  /** Leeway on exp and nbf. */
  readonly clockSkewSeconds: number;
  /** Least time between two fetches of an issuer's keys on an unknown `kid`. */
  readonly jwksRefetchSeconds: number;
  /** How long fetched keys are trusted before they are fetched again. */
  readonly jwksMaxAgeSeconds: number;
}

/** Asymmetric JWS algorithms: a token's key must be the issuer's published public key. */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;
const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519'];

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/** An https URL (http only on loopback: keys, tokens and secrets must not cross a network in clear). */
const httpUrl = (what: string) =>
  z.string({ error: `must be ${what}` }).refine((value) => {
    try {
      const url = new URL(value);
      const secure = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.includes(url.hostname));
      return secure && url.hash === '' && url.username === '';
    } catch {
      return false;
    }
  }, `must be ${what}: an https URL (http only on loopback) without a fragment or credentials`);

/** The `oauth` section as the file spells it; `name` is the rule of a data-scope dimension's name. */
export function oauthSchema(wholeNumber: { error: string }, name: RegExp) {
  const server = z.strictObject({
    issuer: httpUrl('the issuer identifier'),
    audience: z
      .union([z.string(), z.array(z.string()).min(1, 'must list at least one audience')], {
        error: 'must be a string or a list of strings',
      })
      .optional(),
    jwks_uri: httpUrl('a URL').optional(),
    algorithms: z
      .array(
        z.enum(ASYMMETRIC_ALGORITHMS, {
          error: `must be one of ${ASYMMETRIC_ALGORITHMS.join(', ')}: never "none", never an HMAC algorithm, whose key would be the public one`,
        }),
        { error: 'must be a list' },
      )
      .min(1, 'must list at least one algorithm')
      .optional(),
    scope_claims: z
      .array(z.string({ error: 'must be a claim name' }).min(1, 'must not be empty'), { error: 'must be a list' })
      .min(1, 'must list at least one claim')
      .optional(),
    token_type: z.string({ error: 'must be a string' }).min(1, 'must not be empty').optional(),
    introspection: z
      .strictObject({
        endpoint: httpUrl('a URL').optional(),
        client_id: z.string({ error: 'must be a string' }).min(1, 'must not be empty'),
        client_secret_env: z
          .string({ error: 'must be the name of an environment variable' })
          .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the name of an environment variable'),
      })
      .optional(),
  });
  return z.strictObject({
    resource: httpUrl("this server's canonical URL"),
    authorization_servers: z
      .array(server, { error: 'must be a list' })
      .min(1, 'must list at least one')
      // An opaque token names no issuer: it would be shown to each server in turn, so only one may introspect.
      .refine(
        (servers) => servers.filter((as) => as.introspection !== undefined).length <= 1,
        'only one authorization server may have introspection: an opaque token names no issuer, and must be shown to no other',
      ),
    data_scope: z
      .record(
        z.string().regex(name, 'a dimension name is 1 to 64 letters, digits, _ . or -'),
        z.strictObject({
          claim: z.string({ error: 'must be a claim name' }).min(1, 'must not be empty'),
          when_missing: z.enum(['refuse', 'unscoped'], { error: 'must be "refuse" or "unscoped"' }).default('refuse'),
        }),
      )
      .default({}),
    hash_subjects: z.boolean({ error: 'must be true or false' }).default(true),
    clock_skew_seconds: z.int(wholeNumber).min(0, 'must not be negative').max(300, 'must be at most 300').default(30),
    jwks_refetch_seconds: z
      .int(wholeNumber)
      .min(1, 'must be at least 1: an unknown kid must not make every request fetch keys')
      .default(60),
    jwks_max_age_seconds: z.int(wholeNumber).min(60, 'must be at least 60').default(600),
  });
}

/** The section as checked by its schema. */
type OAuthSection = z.infer<ReturnType<typeof oauthSchema>>;

/** The settings made of the checked section: camelCase, with the defaults applied. */
export function oauthSettingsOf(oauth: OAuthSection): OAuthSettings {
  return {
    resource: oauth.resource,
    authorizationServers: oauth.authorization_servers.map((as) => ({
      issuer: as.issuer,
      audience: as.audience === undefined ? undefined : [as.audience].flat(),
      jwksUri: as.jwks_uri,
      algorithms: as.algorithms ?? DEFAULT_ALGORITHMS,
      scopeClaims: as.scope_claims ?? ['scope', 'scp'],
      tokenType: as.token_type,
      introspection: as.introspection && {
        endpoint: as.introspection.endpoint,
        clientId: as.introspection.client_id,
        clientSecretEnv: as.introspection.client_secret_env,
      },
    })),
    dataScope: Object.fromEntries(
      Object.entries(oauth.data_scope).map(([dimension, { claim, when_missing }]) => [
        dimension,
        { claim, whenMissing: when_missing },
      ]),
    ),
    hashSubjects: oauth.hash_subjects,
    clockSkewSeconds: oauth.clock_skew_seconds,
    jwksRefetchSeconds: oauth.jwks_refetch_seconds,
    jwksMaxAgeSeconds: oauth.jwks_max_age_seconds,
  };
}
