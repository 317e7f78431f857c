/**
 * querygate as an OAuth 2.1 resource server, against real authorization servers on loopback: the
 * certified `oidc-provider` (client credentials; authorization code with PKCE through headless
 * Chromium; opaque tokens through introspection) and a bare issuer whose keys the test holds, to make
 * the tokens an attacker would. The server is the built CLI over HTTP; the clients are the MCP SDK's.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientProvider,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { exportSPKI, generateKeyPair, importJWK, SignJWT, UnsecuredJWT, type KeyObject } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFailureThrottle } from '../../src/auth/index.js';
import { throttleKey } from '../../src/auth/throttle.js';
import {
  CLIENT_SECRET,
  freePort,
  INTROSPECTION_CLIENT,
  startProvider,
  startTestIssuer,
  type RunningProvider,
  type TestIssuer,
} from '../support/authorization-server.js';
import { BROWSER_TESTS, launchChromium } from '../support/browser.js';
import { startCli, type RunningCli } from '../support/cli.js';
import { connectAdmin } from '../support/harness.js';
import { parseExposition, valueOf } from '../support/prometheus-text.js';
import { post, type Answer } from '../support/raw-http.js';
import { eventually } from '../support/scratch.js';
import { SALES_QUERY_TOOLS } from '../support/tool-names.js';

const ANALYST_TOOLS = SALES_QUERY_TOOLS;

let provider: RunningProvider;
let issuer: TestIssuer;
let callbacks: Server;
let redirectUri: string;
/** The server most tests use: keys refetched at most once an hour, so a burst of made-up kids fetches nothing. */
let main: RunningCli;
let resource: string;
/** A second server: keys refetched at most once a second (rotation), a region required, a low failure throttle. */
let strict: RunningCli;
let strictResource: string;
let auditPath: string;
const folder = mkdtempSync(join(tmpdir(), 'querygate-oauth-'));

function writeConfig(name: string, oauth: Record<string, unknown>): string {
  const path = join(folder, name);
  writeFileSync(
    path,
    JSON.stringify({
      toolsets: { analysts: ANALYST_TOOLS, reports: ['weekly_sales_report'] },
      scopes: { 'sales:read': ['analysts'], 'sales:reports': ['reports'] },
      oauth,
    }),
    { mode: 0o600 },
  );
  return path;
}

async function startServer(port: number, config: string, env: Record<string, string> = {}): Promise<RunningCli> {
  const cli = startCli(['serve', '--http', '--port', String(port)], {
    DATABASE_URL: inject('readerUrl'),
    QUERYGATE_TOKEN_KEY: 'oauth-test-token-key-0123',
    QUERYGATE_CONFIG: config,
    ...env,
  });
  await cli.waitForLog(/listening on/);
  return cli;
}

beforeAll(async () => {
  callbacks = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('signed in'));
  await new Promise<void>((done) => callbacks.listen(0, '127.0.0.1', done));
  redirectUri = `http://127.0.0.1:${(callbacks.address() as { port: number }).port}/callback`;
  const port = await freePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  provider = await startProvider({ resource, otherResource: 'https://elsewhere.example/api', redirectUri });
  issuer = await startTestIssuer();
  main = await startServer(
    port,
    writeConfig('main.json', {
      resource,
      authorization_servers: [
        {
          issuer: provider.issuer,
          introspection: { client_id: INTROSPECTION_CLIENT.id, client_secret_env: 'QG_INTROSPECTION_SECRET' },
        },
        // As Entra ID's app permissions: scopes in `roles` too.
        { issuer: issuer.issuer, scope_claims: ['scope', 'scp', 'roles'] },
      ],
      data_scope: { region: { claim: 'region', when_missing: 'unscoped' } },
      jwks_refetch_seconds: 3600,
    }),
    { QG_INTROSPECTION_SECRET: INTROSPECTION_CLIENT.secret, QUERYGATE_AUTH_FAILURES_PER_MINUTE: '1000' },
  );
  const strictPort = await freePort();
  strictResource = `http://127.0.0.1:${strictPort}/mcp`;
  auditPath = join(folder, 'audit.log');
  strict = await startServer(
    strictPort,
    writeConfig('strict.json', {
      resource: strictResource,
      authorization_servers: [{ issuer: issuer.issuer, token_type: 'at+jwt' }],
      data_scope: { region: { claim: 'region' } },
      jwks_refetch_seconds: 1,
    }),
    { QUERYGATE_AUTH_FAILURES_PER_MINUTE: '5', QUERYGATE_TRUST_PROXY_HOPS: '1', QUERYGATE_AUDIT_LOG: auditPath },
  );
}, 60_000);

afterAll(async () => {
  expect(await main?.stop()).toBe(0);
  expect(await strict?.stop()).toBe(0);
  await provider?.close();
  await issuer?.close();
  await new Promise((done) => callbacks?.close(done));
});

const now = (): number => Math.floor(Date.now() / 1000);
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const MODERN = { 'mcp-protocol-version': '2025-11-25' };

/** tools/list with a bearer token (or none), raw, so that every header of the answer can be read. */
function listWith(token: string | undefined, target = resource, headers: Record<string, string> = {}): Promise<Answer> {
  return post(new URL(target), LIST, {
    ...MODERN,
    ...headers,
    ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
  });
}

/** Parameters of a WWW-Authenticate Bearer challenge. */
function challenge(answer: Answer): Record<string, string> {
  const header = String(answer.headers['www-authenticate'] ?? '');
  expect(header).toMatch(/^Bearer /);
  return Object.fromEntries([...header.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** The claims of a token the test issuer would rightly issue for `target`. */
function claims(target = resource, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    iss: issuer.issuer,
    aud: target,
    sub: 'alice',
    scope: 'sales:read',
    region: 'Europe',
    iat: now(),
    exp: now() + 300,
    ...extra,
  };
}

async function clientCredentialsToken(clientId: string, target = resource, scope = 'sales:read'): Promise<string> {
  const response = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${clientId}:${CLIENT_SECRET}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: target, scope }),
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  if (!body.access_token) throw new Error(`no token: ${JSON.stringify(body)}`);
  return body.access_token;
}

describe('discovery', () => {
  it('serves Protected Resource Metadata at the path-suffixed and the bare well-known paths', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const response = await fetch(new URL(path, resource));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource,
        authorization_servers: [provider.issuer, issuer.issuer],
        scopes_supported: ['sales:read', 'sales:reports'],
        bearer_methods_supported: ['header'],
        resource_name: 'querygate',
      });
    }
  });

  it('answers a request without a token with 401 and a challenge naming the metadata and the scopes', async () => {
    const answer = await listWith(undefined);
    expect(answer.status).toBe(401);
    expect(challenge(answer)).toEqual({
      realm: 'querygate',
      resource_metadata: new URL('/.well-known/oauth-protected-resource/mcp', resource).href,
      scope: 'sales:read sales:reports',
    });
  });
});

describe('an MCP client completes an OAuth flow and calls tools', () => {
  it('with client credentials: discovery from the 401, a token for this resource, then tool calls', async () => {
    const authProvider = new ClientCredentialsProvider({
      clientId: 'report-bot',
      clientSecret: CLIENT_SECRET,
      scope: 'sales:read sales:reports',
      expectedIssuer: provider.issuer,
    });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider }));
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual([...ANALYST_TOOLS, 'weekly_sales_report']);
    const result = await client.callTool({
      name: 'query_order_count',
      arguments: { start_date: '2025-06-01', end_date: '2025-06-07' },
    });
    expect(result.isError).toBeFalsy();
    // The token the SDK obtained is a JWT for this server, from the provider.
    const token = authProvider.tokens()!.access_token;
    const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(payload).toMatchObject({ iss: provider.issuer, aud: resource, client_id: 'report-bot' });
    await client.close();
  });

  it.skipIf(!BROWSER_TESTS)(
    'with authorization code and PKCE, signing in through a real browser',
    async () => {
      let tokens: StoredOAuthTokens | undefined;
      let verifier = '';
      let authorizationUrl: URL | undefined;
      const authProvider: OAuthClientProvider = {
        redirectUrl: redirectUri,
        clientMetadata: { redirect_uris: [redirectUri], client_name: 'desktop', token_endpoint_auth_method: 'none' },
        clientInformation: () => ({ client_id: 'desktop' }),
        tokens: () => tokens,
        saveTokens: (saved) => void (tokens = saved),
        redirectToAuthorization: (url) => void (authorizationUrl = url),
        saveCodeVerifier: (v) => void (verifier = v),
        codeVerifier: () => verifier,
      };
      const transport = new StreamableHTTPClientTransport(new URL(resource), { authProvider });
      const client = new Client({ name: 'oauth-desktop', version: '1.0.0' });
      await expect(client.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
      expect(authorizationUrl!.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorizationUrl!.searchParams.get('resource')).toBe(resource);

      const browser = await launchChromium();
      let callback: URL;
      try {
        const page = await browser.newPage();
        await page.goto(authorizationUrl!.href);
        await page.fill('input[name="login"]', 'eu-analyst');
        await page.fill('input[name="password"]', 'any password');
        await page.click('button[type="submit"]');
        // The development consent page: one button to authorize.
        await page.click('button[type="submit"]');
        await page.waitForURL((url) => url.href.startsWith(redirectUri));
        callback = new URL(page.url());
      } finally {
        await browser.close();
      }
      await transport.finishAuth(callback.searchParams);
      const signedIn = new Client({ name: 'oauth-desktop', version: '1.0.0' });
      await signedIn.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider }));
      const result = await signedIn.callTool({
        name: 'query_sales',
        arguments: { start_date: '2025-06-01', end_date: '2025-06-07', group_by: 'region' },
      });
      expect(result.isError).toBeFalsy();
      const payload = JSON.parse(Buffer.from(tokens!.access_token.split('.')[1]!, 'base64url').toString()) as Record<
        string,
        unknown
      >;
      expect(payload).toMatchObject({ sub: 'eu-analyst', aud: resource, region: 'Europe' });
      await signedIn.close();
    },
    60_000,
  );

  it('with an opaque token, asked about by introspection', async () => {
    const token = await clientCredentialsToken('opaque-bot');
    expect(token.split('.')).toHaveLength(1);
    const answer = await listWith(token);
    expect(answer.status).toBe(200);
    expect((answer.json.result!.tools as { name: string }[]).map((t) => t.name)).toEqual(ANALYST_TOOLS);
    const made = await listWith('Zm9yZ2VkLW9wYXF1ZS10b2tlbi0wMTIzNDU2Nzg5');
    expect(made.status).toBe(401);
    expect(challenge(made)).toMatchObject({ error: 'invalid_token' });
    expect(made.json.error!.message).toMatch(/not active/);
  });
});

describe('a caller scoped by its token', () => {
  const WEEK = { start_date: '2025-06-01', end_date: '2025-06-07' };

  /** Orders of the week by status, from the raw tables through the admin connection, for the regions given (null: all). */
  async function groundTruth(
    regions: readonly string[] | null,
  ): Promise<{ order_count: number; by_status: Record<string, number> }> {
    const admin = await connectAdmin();
    try {
      const { rows } = await admin.query<{ status: string; n: number }>(
        `select o.status, count(*)::int as n from sales.orders o join sales.customers c on c.id = o.customer_id
          where ($1::text[] is null or c.region = any($1)) and o.ordered_at >= '2025-06-01T00:00:00Z' and o.ordered_at < '2025-06-08T00:00:00Z'
          group by o.status`,
        [regions],
      );
      const by_status = Object.fromEntries(
        ['pending', 'paid', 'shipped', 'cancelled', 'refunded'].map((s) => [
          s,
          rows.find((r) => r.status === s)?.n ?? 0,
        ]),
      );
      return { order_count: rows.reduce((sum, r) => sum + r.n, 0), by_status };
    } finally {
      await admin.end();
    }
  }

  async function connectAs(clientId: string): Promise<Client> {
    const authProvider = new ClientCredentialsProvider({
      clientId,
      clientSecret: CLIENT_SECRET,
      scope: 'sales:read',
      expectedIssuer: provider.issuer,
    });
    const client = new Client({ name: `oauth-${clientId}`, version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(resource), { authProvider }));
    return client;
  }

  it.each([
    ['eu-bot', ['Europe']],
    ['two-region-bot', ['Europe', 'Asia Pacific']],
  ] as const)(
    '%s: the region claim scopes every figure, equal to SQL over its regions alone',
    async (clientId, regions) => {
      const client = await connectAs(clientId);
      try {
        const counted = await client.callTool({ name: 'query_order_count', arguments: WEEK });
        const expected = await groundTruth(regions);
        expect(expected.order_count).toBeGreaterThan(0);
        expect(counted.structuredContent).toMatchObject({ ...expected, data_scope: { region: regions } });
        const everyone = await groundTruth(null);
        expect(everyone.order_count).toBeGreaterThan(expected.order_count);
        const byRegion = await client.callTool({ name: 'query_sales', arguments: { ...WEEK, group_by: 'region' } });
        const rows = (byRegion.structuredContent as { rows: { region: string }[] }).rows;
        expect(new Set(rows.map((r) => r.region))).toEqual(new Set(regions));
        const widened = await client.callTool({
          name: 'query_sales',
          arguments: { ...WEEK, group_by: 'day', region: 'North America' },
        });
        expect(widened.isError).toBe(true);
        expect(JSON.stringify(widened.content)).toMatch(/region: outside your data scope/);
      } finally {
        await client.close();
      }
    },
  );

  it('a token without the claim is unscoped where the configuration says so, and sees every region', async () => {
    const client = await connectAs('report-bot');
    try {
      const counted = await client.callTool({ name: 'query_order_count', arguments: WEEK });
      const everyone = await groundTruth(null);
      expect(counted.structuredContent).toMatchObject(everyone);
      expect(counted.structuredContent).not.toHaveProperty('data_scope');
    } finally {
      await client.close();
    }
  });
});

describe('tokens that must be refused', () => {
  /** The refusal a token gets: its status, the challenge's error and the message's reason. */
  async function refusalOf(
    token: string,
    target = resource,
  ): Promise<{ status: number; error?: string; message: string }> {
    const answer = await listWith(token, target);
    return { status: answer.status, error: challenge(answer).error, message: String(answer.json.error?.message) };
  }

  it('accepts the rightly made token these are variations of', async () => {
    expect((await listWith(await issuer.sign(claims()))).status).toBe(200);
  });

  it('reads scopes from each configured claim: a scope string, an scp list, a roles list', async () => {
    const tools = async (extra: Record<string, unknown>): Promise<string[]> => {
      const { scope: _scope, ...rest } = claims();
      const answer = await listWith(await issuer.sign({ ...rest, ...extra }));
      return (answer.json.result!.tools as { name: string }[]).map((t) => t.name);
    };
    expect(await tools({ scp: ['sales:read'] })).toEqual(ANALYST_TOOLS);
    expect(await tools({ roles: ['sales:reports'] })).toEqual(['weekly_sales_report']);
    expect(await tools({ scope: 'sales:read', roles: ['sales:reports'] })).toEqual([
      ...ANALYST_TOOLS,
      'weekly_sales_report',
    ]);
  });

  it('refuses an expired token, and one not valid yet, beyond the clock skew', async () => {
    expect(await refusalOf(await issuer.sign(claims(resource, { iat: now() - 600, exp: now() - 120 })))).toEqual({
      status: 401,
      error: 'invalid_token',
      message: 'Unauthorized: the token has expired',
    });
    expect((await refusalOf(await issuer.sign(claims(resource, { nbf: now() + 600 })))).message).toMatch(
      /not valid yet/,
    );
    // Within the skew (30 s by default): accepted.
    expect((await listWith(await issuer.sign(claims(resource, { exp: now() - 5 })))).status).toBe(200);
  });

  it('refuses a token minted for another resource, by the test issuer and by the provider', async () => {
    const elsewhere = await refusalOf(await issuer.sign(claims('https://elsewhere.example/api')));
    expect(elsewhere).toMatchObject({ status: 401, error: 'invalid_token' });
    expect(elsewhere.message).toMatch(/not issued for this server/);
    const provided = await refusalOf(await clientCredentialsToken('report-bot', 'https://elsewhere.example/api'));
    expect(provided.message).toMatch(/not issued for this server/);
  });

  it('refuses a token from an issuer it does not trust, even one naming a trusted issuer but signed by another', async () => {
    const stranger = await startTestIssuer();
    try {
      const untrusted = await refusalOf(await stranger.sign({ ...claims(), iss: stranger.issuer }));
      expect(untrusted.message).toMatch(/not issued by an authorization server this server trusts/);
      // Names the trusted issuer and its key id, but the stranger signed it.
      const forged = await refusalOf(await stranger.sign(claims(), { kid: issuer.publicJwk().kid! }));
      expect(forged).toMatchObject({ status: 401, message: 'Unauthorized: the token signature does not verify' });
    } finally {
      await stranger.close();
    }
  });

  it('refuses a token whose signature was tampered with', async () => {
    const [head, body, signature] = (await issuer.sign(claims())).split('.');
    const flipped = Buffer.from(signature!, 'base64url');
    flipped[5]! ^= 1;
    expect(await refusalOf(`${head}.${body}.${flipped.toString('base64url')}`)).toMatchObject({
      status: 401,
      message: 'Unauthorized: the token signature does not verify',
    });
    // A body changed under the issuer's signature: the region widened.
    const widened = Buffer.from(JSON.stringify({ ...claims(), region: ['Europe', 'Americas'] })).toString('base64url');
    expect((await refusalOf(`${head}.${widened}.${signature}`)).message).toMatch(/signature does not verify/);
  });

  it('refuses alg "none"', async () => {
    const unsigned = new UnsecuredJWT(claims()).encode();
    expect(await refusalOf(unsigned)).toMatchObject({ status: 401, error: 'invalid_token' });
    expect((await refusalOf(unsigned)).message).toMatch(/algorithm is not accepted/);
  });

  it('refuses an HMAC token signed with the issuer’s public key as the secret', async () => {
    const publicKey = (await importJWK(issuer.publicJwk(), 'ES256')) as KeyObject;
    for (const secret of [
      new TextEncoder().encode(await exportSPKI(publicKey)),
      new TextEncoder().encode(JSON.stringify(issuer.publicJwk())),
    ]) {
      const token = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'HS256', kid: issuer.publicJwk().kid! })
        .sign(secret);
      expect((await refusalOf(token)).message).toMatch(/algorithm is not accepted/);
    }
  });

  it('refuses a burst of unknown key ids without fetching the keys again within the refetch interval', async () => {
    expect((await listWith(await issuer.sign(claims()))).status).toBe(200);
    const before = issuer.fetches;
    expect(before).toBeGreaterThanOrEqual(1);
    const { privateKey } = await generateKeyPair('ES256');
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        refusalOf(await issuer.sign(claims(), { kid: `made-up-${i}`, key: privateKey })),
      ),
    );
    for (const answer of answers) {
      expect(answer).toMatchObject({
        status: 401,
        message: expect.stringMatching(/key the authorization server does not publish/),
      });
    }
    expect(issuer.fetches).toBe(before);
  });

  it('answers a valid token without the scope a tool needs with 403 insufficient_scope naming it', async () => {
    const token = await issuer.sign(claims(resource, { scope: 'sales:read' }));
    const call = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'weekly_sales_report', arguments: { week: 'last_week' } },
    };
    const answer = await post(new URL(resource), call, { ...MODERN, authorization: `Bearer ${token}` });
    expect(answer.status).toBe(403);
    expect(challenge(answer)).toMatchObject({
      error: 'insufficient_scope',
      scope: 'sales:reports',
      resource_metadata: new URL('/.well-known/oauth-protected-resource/mcp', resource).href,
    });
    expect(answer.json).toMatchObject({ id: 7, error: { code: -32001 } });
    // A tool that does not exist is not a scope question: it stays an unknown tool, and its name is not echoed.
    const unknown = await post(
      new URL(resource),
      { ...call, params: { name: 'no_such_tool_\u00e9\u4e2d', arguments: {} } },
      { ...MODERN, authorization: `Bearer ${token}` },
    );
    expect(unknown.status).toBe(200);
    expect(unknown.json.error).toMatchObject({ code: -32602 });
    expect(unknown.headers['www-authenticate']).toBeUndefined();
    // tools/list shows only what the scopes grant.
    const listed = await listWith(token);
    expect((listed.json.result!.tools as { name: string }[]).map((t) => t.name)).toEqual(ANALYST_TOOLS);
    // A token whose scopes grant nothing here is refused on every request.
    const none = await listWith(await issuer.sign(claims(resource, { scope: 'profile email' })));
    expect(none.status).toBe(403);
    expect(challenge(none)).toMatchObject({ error: 'insufficient_scope', scope: 'sales:read sales:reports' });
  });
});

describe('the strict server', () => {
  const from = (address: string): Record<string, string> => ({ 'x-forwarded-for': address });

  it('refuses a token without the region claim it requires', async () => {
    const { region: _region, ...rest } = claims(strictResource);
    const answer = await listWith(await issuer.sign(rest), strictResource, from('198.51.100.1'));
    expect(answer.status).toBe(403);
    expect(answer.json.error!.message).toMatch(/no "region" claim/);
    expect(
      (await listWith(await issuer.sign(claims(strictResource)), strictResource, from('198.51.100.1'))).status,
    ).toBe(200);
  });

  it('writes the audit line with the hashed subject, the client and the data scope, never the subject itself', async () => {
    const token = await issuer.sign(claims(strictResource, { sub: 'alice@example.com', client_id: 'desk-app' }));
    const answer = await post(
      new URL(strictResource),
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'query_order_count', arguments: { start_date: '2025-06-01', end_date: '2025-06-07' } },
      },
      { ...MODERN, ...from('198.51.100.3'), authorization: `Bearer ${token}` },
    );
    expect(answer.status).toBe(200);
    const line = await eventually('the audit line', async () =>
      readFileSync(auditPath, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.type === 'audit' && l.client_id === 'desk-app'),
    );
    expect(line).toMatchObject({ tool: 'query_order_count', outcome: 'ok', data_scope: { region: ['Europe'] } });
    expect(line.subject).toMatch(/^sub-[A-Za-z0-9_-]{22}$/);
    expect(line.caller).toBe(`oauth:${String(line.subject)}`);
    expect(readFileSync(auditPath, 'utf8')).not.toContain('alice@example.com');
  });

  it('accepts a token signed with a rotated key once the refetch interval has passed, and refuses the old key', async () => {
    const old = await issuer.sign(claims(strictResource));
    expect((await listWith(old, strictResource, from('198.51.100.2'))).status).toBe(200);
    // Signed with the old key but not shown yet: a token verified before is trusted for up to a minute.
    const unseen = await issuer.sign(claims(strictResource, { sub: 'bob' }));
    await issuer.rotate();
    const before = issuer.fetches;
    await new Promise((done) => setTimeout(done, 1100));
    const rotated = await issuer.sign(claims(strictResource));
    expect((await listWith(rotated, strictResource, from('198.51.100.2'))).status).toBe(200);
    expect(issuer.fetches).toBe(before + 1);
    const stale = await listWith(unseen, strictResource, from('198.51.100.2'));
    expect(stale.status).toBe(401);
    expect(stale.json.error!.message).toMatch(/key the authorization server does not publish/);
  });

  it('refuses a token of another type (an ID token) where the issuer is held to at+jwt', async () => {
    const idToken = await new SignJWT(claims(strictResource))
      .setProtectedHeader({ alg: 'ES256', kid: issuer.publicJwk().kid!, typ: 'JWT' })
      .sign(issuer.privateKey());
    const answer = await listWith(idToken, strictResource, from('198.51.100.4'));
    expect(answer.status).toBe(401);
    expect(answer.json.error!.message).toMatch(/not an access token/);
  });

  it('meets the throttle with bad tokens sent all at once, each charged before it is verified', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const tokens = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        issuer.sign(claims(strictResource), { kid: `parallel-${i}`, key: privateKey }),
      ),
    );
    const statuses = await Promise.all(
      tokens.map(async (t) => (await listWith(t, strictResource, from('203.0.113.77'))).status),
    );
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });

  it('throttles a burst of bad tokens from one address with 429 and Retry-After, and audits each without the token', async () => {
    const bad = 'bad-token-that-must-never-be-logged-0123456789';
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await listWith(bad, strictResource, from('203.0.113.9'))).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const throttled = await listWith(await issuer.sign(claims(strictResource)), strictResource, from('203.0.113.9'));
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another address is not held up.
    expect(
      (await listWith(await issuer.sign(claims(strictResource)), strictResource, from('203.0.113.10'))).status,
    ).toBe(200);
    const lines = readFileSync(auditPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.type === 'auth_failure' && l.source === '203.0.113.9');
    // Refused three times, but audited once: when the throttle started.
    expect(lines.map((l) => [l.reason, l.status])).toEqual([
      ...Array(5).fill(['malformed_token', 401]),
      ['throttled', 429],
    ]);
    expect(readFileSync(auditPath, 'utf8')).not.toContain(bad);
    // The same failures, counted for /metrics by reason: this server's whole history, known from the tests above.
    const scraped = parseExposition(await (await fetch(new URL('/metrics', strictResource))).text());
    const failures = (reason: string): number | undefined =>
      valueOf(scraped, 'querygate_auth_failures_total', { reason });
    expect([
      failures('malformed_token'),
      failures('throttled'),
      failures('missing_claim'),
      failures('unknown_key'),
    ]).toEqual([
      5 + 1, // the burst, and the ID token
      3 + 7, // the burst's, and the parallel attempts'
      1,
      1 + 5, // the rotated-out key, and the parallel attempts let through to be verified
    ]);
    expect(valueOf(scraped, 'querygate_refusals_total', { reason: 'http_auth_throttled' })).toBe(3 + 7);
  });
});

describe('the failure throttle', () => {
  it('keys IPv6 addresses by their /64 and IPv4 ones whole', () => {
    expect(throttleKey('2001:db8:1:2::1')).toBe(throttleKey('2001:db8:1:2:ffff:0:0:9'));
    expect(throttleKey('2001:db8:1:2::1')).not.toBe(throttleKey('2001:db8:1:3::1'));
    expect(throttleKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(throttleKey('192.0.2.1')).not.toBe(throttleKey('192.0.2.2'));
  });

  it('remembers at most its bound of addresses, forgetting the least recently seen', () => {
    let t = 0;
    const throttle = createFailureThrottle({ failuresPerMinute: 1, maxAddresses: 3, now: () => t });
    for (let i = 0; i < 100; i++) throttle.failed(`192.0.2.${i}`);
    expect(throttle.size).toBe(3);
    expect(throttle.wait('192.0.2.99')).toBe(60);
    expect(throttle.wait('192.0.2.0')).toBe(0);
    t += 30_000;
    expect(throttle.wait('192.0.2.99')).toBe(30);
  });
});
