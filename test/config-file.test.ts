/** The configuration file's schema: what it accepts, and an error naming the field and the rule for the rest. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  parseConfigFile,
  readConfigFile,
  resolveConfigFile,
  type AvailablePack,
  type ConfigFile,
} from '../src/config-file/index.js';
import { loadStaticTokens } from '../src/auth/index.js';
import { ConfigError } from '../src/lib/errors.js';

const OPTIONS = { statementTimeoutMs: 5000 };
const AVAILABLE: AvailablePack[] = [
  {
    pack: 'sales',
    templates: [{ name: 'query_order_count' }, { name: 'query_sales' }, { name: 'query_top_products' }],
  },
  { pack: 'support', path: './support/pack/index.js', templates: [{ name: 'query_ticket_volume' }] },
];

/** A tokens file of one token, readable by its owner only. */
function writeTokensFile(folder: string, token: Record<string, unknown>): string {
  const path = join(folder, 'tokens.json');
  writeFileSync(path, JSON.stringify({ tokens: [token] }));
  chmodSync(path, 0o600);
  return path;
}

/** The message a file is refused with. */
function refusal(check: () => unknown): string {
  try {
    check();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the file was accepted');
}
const parsed = (value: unknown): ConfigFile => parseConfigFile(value, OPTIONS);
const resolved = (value: unknown) => resolveConfigFile(parsed(value), AVAILABLE);

describe('a valid configuration file', () => {
  it('selects packs and templates, in the packs’ order, and carries every setting through', () => {
    const config = resolved({
      packs: [{ name: 'sales', templates: ['query_sales', 'query_order_count'] }, { path: './support/pack/index.js' }],
      toolsets: { analysts: ['query_sales', 'query_ticket_volume'] },
      limits: { query_sales: { max_rows: 50, timeout_ms: 2000 } },
      time_zone: 'Europe/Paris',
      token_key: 'a-masking-key-of-some-length',
      small_group_threshold: 7,
    });
    expect(Object.fromEntries(config.selection)).toEqual({
      sales: ['query_order_count', 'query_sales'],
      support: ['query_ticket_volume'],
    });
    expect(config.tools).toEqual(['query_order_count', 'query_sales', 'query_ticket_volume']);
    expect(config.toolsets).toEqual({ analysts: ['query_sales', 'query_ticket_volume'] });
    expect(config.limits).toEqual({ query_sales: { maxRows: 50, timeoutMs: 2000 } });
    expect(config).toMatchObject({
      timeZone: 'Europe/Paris',
      tokenKey: 'a-masking-key-of-some-length',
      smallGroupThreshold: 7,
    });
  });

  it('serves every template of every pack when it names none, and leaves the small-group threshold to each pack', () => {
    const config = resolved({});
    expect(config.tools).toEqual(['query_order_count', 'query_sales', 'query_top_products', 'query_ticket_volume']);
    expect(config.smallGroupThreshold).toBeUndefined(); // each pack's own, or 5
    expect(config.timeZone).toBeUndefined();
    expect(config.tokenKey).toBeUndefined();
  });
});

describe('a configuration file is refused with the field and the rule', () => {
  it.each([
    [{ packs: [{ name: 'sales' }], tolsets: {} }, 'QUERYGATE_CONFIG (the file): unknown key "tolsets"'],
    [{ packs: [{ name: 'sales', template: [] }] }, 'QUERYGATE_CONFIG packs[0]: unknown key "template"'],
    [{ limits: { query_sales: { max_row: 5 } } }, 'QUERYGATE_CONFIG limits.query_sales: unknown key "max_row"'],
    [{ packs: [{}] }, 'QUERYGATE_CONFIG packs[0]: give either "name" or "path"'],
    [{ packs: [{ name: 'sales', path: './x.js' }] }, 'QUERYGATE_CONFIG packs[0]: give either "name" or "path"'],
    [{ packs: [] }, 'QUERYGATE_CONFIG packs: must list at least one pack'],
    [{ packs: 'sales' }, 'QUERYGATE_CONFIG packs: must be a list'],
    [
      { packs: [{ name: 'sales', templates: [] }] },
      'QUERYGATE_CONFIG packs[0].templates: must list at least one template',
    ],
    [{ packs: [{ name: 'sales', templates: [3] }] }, 'QUERYGATE_CONFIG packs[0].templates[0]: must be a tool name'],
    [
      { limits: { query_sales: { max_rows: 101 } } },
      'QUERYGATE_CONFIG limits.query_sales.max_rows: must be at most 100, the row cap of every tool',
    ],
    [{ limits: { query_sales: { max_rows: 0 } } }, 'QUERYGATE_CONFIG limits.query_sales.max_rows: must be at least 1'],
    [
      { limits: { query_sales: { max_rows: 2.5 } } },
      'QUERYGATE_CONFIG limits.query_sales.max_rows: must be a whole number',
    ],
    [
      { limits: { query_sales: { timeout_ms: 5001 } } },
      "QUERYGATE_CONFIG limits.query_sales.timeout_ms: must be at most 5000, the server's QUERYGATE_STATEMENT_TIMEOUT_MS",
    ],
    [{ toolsets: { analysts: [] } }, 'QUERYGATE_CONFIG toolsets.analysts: must list at least one tool'],
    [{ toolsets: { 'two words': ['query_sales'] } }, 'QUERYGATE_CONFIG toolsets["two words"]: a toolset name is'],
    [{ time_zone: 'Mars/Olympus_Mons' }, 'QUERYGATE_CONFIG time_zone: is not an IANA time zone'],
    [{ token_key: 'short' }, 'QUERYGATE_CONFIG token_key: must be at least 16 characters'],
    [{ small_group_threshold: 1 }, 'QUERYGATE_CONFIG small_group_threshold: must be at least 2'],
    [{ small_group_threshold: '5' }, 'QUERYGATE_CONFIG small_group_threshold: must be a whole number'],
    [['sales'], 'QUERYGATE_CONFIG (the file): must be a mapping'],
  ])('%j', (value, message) => {
    expect(refusal(() => parsed(value))).toContain(message);
  });

  it('names every field that breaks a rule, not only the first', () => {
    const message = refusal(() => parsed({ time_zone: 'Nowhere', small_group_threshold: 0 }));
    expect(message).toContain('time_zone: is not an IANA time zone');
    expect(message).toContain('small_group_threshold: must be at least 2');
  });

  it.each([
    [
      { packs: [{ name: 'sales', templates: ['query_sales', 'query_foo'] }] },
      'QUERYGATE_CONFIG packs[0].templates[1]: "query_foo" is not a template of pack "sales"',
    ],
    [
      { packs: [{ name: 'salez' }] },
      'QUERYGATE_CONFIG packs[0].name: "salez" is not a pack; the packs are sales, support',
    ],
    [
      { packs: [{ path: './elsewhere.js' }] },
      'QUERYGATE_CONFIG packs[0].path: no pack was loaded from "./elsewhere.js"',
    ],
    [{ packs: [{ name: 'sales' }, { name: 'sales' }] }, 'QUERYGATE_CONFIG packs[1]: pack "sales" is listed twice'],
    [
      {
        packs: [{ name: 'sales', templates: ['query_sales'] }],
        toolsets: { analysts: ['query_sales', 'query_order_count'] },
      },
      'QUERYGATE_CONFIG toolsets.analysts[1]: "query_order_count" is not a served tool',
    ],
    [
      { packs: [{ name: 'support' }], limits: { query_sales: { max_rows: 5 } } },
      'QUERYGATE_CONFIG limits.query_sales: "query_sales" is not a served tool',
    ],
  ])('names what it does not know: %j', (value, message) => {
    expect(refusal(() => resolved(value))).toContain(message);
  });
});

describe('the file on disk', () => {
  const folder = mkdtempSync(join(tmpdir(), 'querygate-config-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const write = (name: string, text: string, mode = 0o600): string => {
    const path = join(folder, name);
    writeFileSync(path, text);
    chmodSync(path, mode);
    return path;
  };

  it('is read as YAML when its name ends .yaml or .yml, and as JSON otherwise', () => {
    const yaml = 'packs:\n  - name: sales\n    templates: [query_sales]\nlimits:\n  query_sales: { max_rows: 10 }\n';
    for (const name of ['c.yaml', 'c.yml']) {
      expect(readConfigFile(write(name, yaml), OPTIONS)).toMatchObject({
        packs: [{ name: 'sales', templates: ['query_sales'] }],
        limits: { query_sales: { maxRows: 10 } },
      });
    }
    expect(readConfigFile(write('c.json', '{"time_zone": "Asia/Tokyo"}'), OPTIONS).timeZone).toBe('Asia/Tokyo');
    expect(refusal(() => readConfigFile(write('bad.json', 'packs: []'), OPTIONS))).toMatch(
      /bad\.json\): not valid JSON/,
    );
    expect(refusal(() => readConfigFile(write('bad.yaml', 'packs: [\n'), OPTIONS))).toMatch(
      /bad\.yaml\): not valid YAML/,
    );
  });

  it('that holds token_key must be readable by its owner only', () => {
    const secret = 'token_key: a-masking-key-of-some-length\n';
    expect(refusal(() => readConfigFile(write('open.yaml', secret, 0o644), OPTIONS))).toMatch(
      /open\.yaml\): holds token_key and is readable by others \(mode 644\); chmod 600 it/,
    );
    expect(readConfigFile(write('closed.yaml', secret, 0o600), OPTIONS).tokenKey).toBe('a-masking-key-of-some-length');
    // Without a secret in it, the file may be readable by others.
    expect(readConfigFile(write('public.yaml', 'time_zone: UTC\n', 0o644), OPTIONS).timeZone).toBe('UTC');
  });

  it('that cannot be read is refused with the reason', () => {
    expect(refusal(() => readConfigFile(join(folder, 'missing.yaml'), OPTIONS))).toMatch(
      /QUERYGATE_CONFIG \(.*missing\.yaml\): ENOENT/,
    );
  });
});

describe('a bearer token that names a toolset', () => {
  const folder = mkdtempSync(join(tmpdir(), 'querygate-tokens-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const tokensFile = (token: Record<string, unknown>): string =>
    writeTokensFile(folder, { name: 'desk', token: 'desk-token-0123456789', ...token });
  const known = ['query_order_count', 'query_sales'];

  it('sees the toolset in force at each request, and nothing once a reload removed it', () => {
    let toolsets = new Map([['analysts', new Set(['query_sales'])]]);
    const grants = { toolsets: () => toolsets, scopes: () => new Map() };
    const tokens = loadStaticTokens({ file: tokensFile({ toolset: 'analysts' }), grants }, known)!;
    const found = tokens.check('desk-token-0123456789');
    if (!found?.ok) throw new Error('the token was not accepted');
    const { caller } = found;
    expect([...caller.tools!]).toEqual(['query_sales']);
    toolsets = new Map([['analysts', new Set(['query_sales', 'query_order_count'])]]);
    expect([...caller.tools!]).toEqual(['query_sales', 'query_order_count']);
    toolsets = new Map();
    expect([...caller.tools!]).toEqual([]);
  });

  it('is refused at start-up when the toolset does not exist, or with tools besides', () => {
    const grants = { toolsets: () => new Map([['analysts', new Set(['query_sales'])]]), scopes: () => new Map() };
    expect(refusal(() => loadStaticTokens({ file: tokensFile({ toolset: 'nobody' }), grants }, known))).toMatch(
      /tokens\[0\]\.toolset: one of analysts$/,
    );
    expect(refusal(() => loadStaticTokens({ file: tokensFile({ toolset: 'analysts' }) }, known))).toMatch(
      /tokens\[0\]\.toolset: no toolsets are configured \(QUERYGATE_CONFIG toolsets\)$/,
    );
    expect(
      refusal(() =>
        loadStaticTokens({ file: tokensFile({ toolset: 'analysts', tools: ['query_sales'] }), grants }, known),
      ),
    ).toMatch(/tokens\[0\]: give only one of "tools", "toolset" or "scopes"$/);
  });
});

describe('a static token with scopes, a data scope and an expiry', () => {
  const folder = mkdtempSync(join(tmpdir(), 'querygate-scoped-tokens-'));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  const tokensFile = (token: Record<string, unknown>): string =>
    writeTokensFile(folder, { name: 'eu-cron', token: 'eu-cron-token-0123456789', ...token });
  const known = ['query_order_count', 'query_sales', 'weekly_sales_report'];
  let scopes = new Map<string, readonly string[]>([
    ['sales:read', ['analysts']],
    ['sales:all', ['*']],
  ]);
  const grants = {
    toolsets: () => new Map([['analysts', new Set(['query_order_count', 'query_sales'])]]),
    scopes: () => scopes,
  };
  const dimensions = new Set(['region']);

  it('gets the tools its scopes grant, following a reload, and carries its data scope', () => {
    const tokens = loadStaticTokens(
      { file: tokensFile({ scopes: ['sales:read'], data_scope: { region: 'Europe' } }), grants, dimensions },
      known,
    )!;
    const found = tokens.check('eu-cron-token-0123456789');
    if (!found?.ok) throw new Error('the token was not accepted');
    expect(found.scopes).toEqual(['sales:read']);
    expect([...found.caller.tools!]).toEqual(['query_order_count', 'query_sales']);
    expect(found.caller.dataScope).toEqual({ region: ['Europe'] });
    scopes = new Map([['sales:read', ['*']]]);
    expect(found.caller.tools).toBeUndefined();
    scopes = new Map();
    expect([...found.caller.tools!]).toEqual([]);
  });

  it('is refused from its expiry on, saying when it expired', () => {
    let now = Date.parse('2027-03-30T23:59:59Z');
    const tokens = loadStaticTokens({ file: tokensFile({ expires: '2027-03-31' }), grants, now: () => now }, known)!;
    expect(tokens.check('eu-cron-token-0123456789')?.ok).toBe(true);
    now += 1000;
    expect(tokens.check('eu-cron-token-0123456789')).toEqual({
      ok: false,
      reason: 'expired',
      status: 401,
      description: 'the token expired at 2027-03-31T00:00:00.000Z',
    });
    expect(tokens.check('another-token-0123456789')).toBeUndefined();
  });

  it('is refused at start-up with a bad expiry, scope or data scope, naming the field', () => {
    scopes = new Map([['sales:read', ['analysts']]]);
    const load = (token: Record<string, unknown>) => () =>
      loadStaticTokens({ file: tokensFile(token), grants, dimensions }, known);
    expect(refusal(load({ expires: '2027-02-30' }))).toMatch(/tokens\[0\]\.expires: a date/);
    expect(refusal(load({ expires: 'next year' }))).toMatch(/tokens\[0\]\.expires: a date/);
    expect(refusal(load({ scopes: ['sales:write'] }))).toMatch(
      /tokens\[0\]\.scopes: a list of scopes from sales:read$/,
    );
    expect(refusal(load({ data_scope: { country: ['FR'] } }))).toMatch(
      /tokens\[0\]\.data_scope\.country: not a data-scope dimension of the served packs \(region\)$/,
    );
    expect(refusal(load({ data_scope: { region: [] } }))).toMatch(/data_scope\.region: a value or a non-empty list/);
    expect(refusal(load({ scope: 'sales:read' }))).toMatch(/tokens\[0\]: unknown key "scope"$/);
  });
});

describe('the oauth section', () => {
  const oauth = (extra: Record<string, unknown> = {}, server: Record<string, unknown> = {}) => ({
    oauth: {
      resource: 'https://querygate.example.com/mcp',
      authorization_servers: [{ issuer: 'https://idp.example.com/realms/sales', ...server }],
      ...extra,
    },
  });

  it('reads the settings, with safe defaults', () => {
    expect(parseConfigFile(oauth(), OPTIONS).oauth).toEqual({
      resource: 'https://querygate.example.com/mcp',
      authorizationServers: [
        {
          issuer: 'https://idp.example.com/realms/sales',
          audience: undefined,
          jwksUri: undefined,
          algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA', 'Ed25519'],
          scopeClaims: ['scope', 'scp'],
          tokenType: undefined,
          introspection: undefined,
        },
      ],
      dataScope: {},
      hashSubjects: true,
      clockSkewSeconds: 30,
      jwksRefetchSeconds: 60,
      jwksMaxAgeSeconds: 600,
    });
  });

  it('refuses HMAC and "none" algorithms, a resource with a fragment, and a refetch interval of 0', () => {
    expect(refusal(() => parseConfigFile(oauth({}, { algorithms: ['HS256'] }), OPTIONS))).toMatch(
      /oauth\.authorization_servers\[0\]\.algorithms\[0\]: must be one of RS256, .*never an HMAC algorithm/,
    );
    expect(refusal(() => parseConfigFile(oauth({}, { algorithms: ['none'] }), OPTIONS))).toMatch(
      /algorithms\[0\]: must be one of/,
    );
    expect(refusal(() => parseConfigFile(oauth({ resource: 'https://q.example.com/mcp#x' }), OPTIONS))).toMatch(
      /oauth\.resource: must be this server's canonical URL/,
    );
    expect(
      refusal(() => parseConfigFile(oauth({}, { issuer: 'http://idp.example.com/realms/sales' }), OPTIONS)),
    ).toMatch(
      /oauth\.authorization_servers\[0\]\.issuer: must be the issuer identifier: an https URL \(http only on loopback\)/,
    );
    const introspecting = { introspection: { client_id: 'q', client_secret_env: 'SECRET' } };
    expect(
      refusal(() =>
        parseConfigFile(
          {
            oauth: {
              resource: 'https://q.example.com/mcp',
              authorization_servers: [
                { issuer: 'https://a.example.com', ...introspecting },
                { issuer: 'https://b.example.com', ...introspecting },
              ],
            },
          },
          OPTIONS,
        ),
      ),
    ).toMatch(/oauth\.authorization_servers: only one authorization server may have introspection/);
    expect(refusal(() => parseConfigFile(oauth({ jwks_refetch_seconds: 0 }), OPTIONS))).toMatch(
      /oauth\.jwks_refetch_seconds: must be at least 1/,
    );
  });

  it('refuses a scope that grants a toolset the file does not define', () => {
    const file = parseConfigFile(
      { toolsets: { analysts: ['query_sales'] }, scopes: { 'sales:read': ['analysts', 'reporters'] } },
      OPTIONS,
    );
    expect(refusal(() => resolveConfigFile(file, AVAILABLE))).toMatch(
      /scopes\["sales:read"\]\[1\]: "reporters" is not a toolset \(the toolsets: analysts\), nor "\*"$/,
    );
  });
});
