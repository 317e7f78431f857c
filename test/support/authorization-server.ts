/**
 * Real authorization servers on loopback for the OAuth tests:
 * - `oidc-provider`, a certified OpenID Provider, issuing access tokens for querygate's URL through
 *   client credentials and through authorization code with PKCE, as JWTs or opaque tokens (for
 *   introspection);
 * - a bare issuer whose keys the test holds, publishing its metadata and key set and counting the
 *   fetches, to sign the tokens an attacker would make and to rotate its keys.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';
import Provider, { errors } from 'oidc-provider';

export const CLIENT_SECRET = 'client-secret-0123456789-abcdef';
/** The resource server's own credentials at the provider, for introspection. */
export const INTROSPECTION_CLIENT = { id: 'querygate', secret: 'querygate-introspection-secret-0123' };

/** Each account's and each machine client's region, which the provider puts in its tokens' `region` claim. */
export const REGIONS: Readonly<Record<string, string | string[] | undefined>> = {
  'eu-analyst': 'Europe',
  'eu-bot': 'Europe',
  'opaque-bot': 'Europe',
  'two-region-bot': ['Europe', 'Asia Pacific'],
};

export interface RunningProvider {
  readonly issuer: string;
  close(): Promise<void>;
}

/** A port free now, for a server whose URL must be known before it starts (the token audience). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((done) => probe.listen(0, '127.0.0.1', done));
  const { port } = probe.address() as AddressInfo;
  await new Promise((done) => probe.close(done));
  return port;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function startProvider(options: {
  /** querygate's canonical URL: the resource its tokens are for. */
  readonly resource: string;
  /** Another resource the provider also issues tokens for. */
  readonly otherResource: string;
  /** Where the desktop client is sent back with its code. */
  readonly redirectUri: string;
}): Promise<RunningProvider> {
  const server = createServer();
  const issuer = await listen(server);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const machine = (client_id: string, scope = 'sales:read sales:reports') => ({
    client_id,
    client_secret: CLIENT_SECRET,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope,
  });
  const provider = new Provider(issuer, {
    clients: [
      machine('report-bot'),
      machine('eu-bot'),
      machine('two-region-bot'),
      machine('opaque-bot'),
      machine('other-bot', 'other:read'),
      {
        client_id: INTROSPECTION_CLIENT.id,
        client_secret: INTROSPECTION_CLIENT.secret,
        grant_types: [],
        response_types: [],
        redirect_uris: [],
      },
      {
        client_id: 'desktop',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [options.redirectUri],
      },
    ],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: 'provider-key-1', alg: 'RS256', use: 'sig' }] },
    scopes: ['openid', 'offline_access', 'sales:read', 'sales:reports', 'other:read'],
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    features: {
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? options.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator, client) => {
          if (indicator === options.otherResource) {
            return {
              scope: 'other:read sales:read',
              audience: indicator,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'RS256' } },
            };
          }
          if (indicator !== options.resource) throw new errors.InvalidTarget();
          return {
            scope: 'sales:read sales:reports',
            audience: indicator,
            accessTokenTTL: 600,
            accessTokenFormat: client.clientId === 'opaque-bot' ? 'opaque' : 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (_ctx, token) => {
      const who = ('accountId' in token && token.accountId) || token.clientId;
      const region = who === undefined ? undefined : REGIONS[who];
      return region === undefined ? undefined : { region };
    },
    // The interaction pages are the provider's development ones: a login form that takes any name.
    ttl: { AccessToken: 600, ClientCredentials: 600, Interaction: 600, Session: 600, Grant: 600 },
  });
  provider.on('server_error', (_ctx, err) => console.error('provider error', err));
  server.on('request', provider.callback());
  return { issuer, close: () => new Promise((done) => server.close(() => done())) };
}

export interface TestIssuer {
  readonly issuer: string;
  /** Times its key set was fetched. */
  readonly fetches: number;
  /** The key it signs with now, as a public JWK. */
  publicJwk(): JWK;
  /** The private key it signs with now, for a test that makes its own header. */
  privateKey(): CryptoKey;
  sign(claims: JWTPayload, options?: { kid?: string; key?: CryptoKey }): Promise<string>;
  /** Makes a new key, publishes it instead of the old one and signs with it from now on. */
  rotate(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestIssuer(): Promise<TestIssuer> {
  let fetches = 0;
  let generation = 1;
  let current = await generateKeyPair('ES256', { extractable: true });
  let published: JWK[] = [];
  const publish = async (): Promise<void> => {
    published = [{ ...(await exportJWK(current.publicKey)), kid: `test-key-${generation}`, alg: 'ES256', use: 'sig' }];
  };
  await publish();
  const server = createServer((req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }));
    } else if (req.url === '/jwks') {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: published }));
    } else {
      res.writeHead(404).end();
    }
  });
  const issuer = await listen(server);
  return {
    issuer,
    get fetches() {
      return fetches;
    },
    publicJwk: () => published[0]!,
    privateKey: () => current.privateKey,
    sign: (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: options.kid ?? `test-key-${generation}`, typ: 'at+jwt' })
        .sign(options.key ?? current.privateKey),
    rotate: async () => {
      generation++;
      current = await generateKeyPair('ES256', { extractable: true });
      await publish();
    },
    close: () => new Promise((done) => server.close(() => done())),
  };
}
