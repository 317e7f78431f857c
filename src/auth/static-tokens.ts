/**
 * Static bearer tokens, for scripts and cron: from QUERYGATE_HTTP_TOKEN (one token, every tool) and/or
 * a JSON file of named tokens, each with optional tools, toolset or scopes, an expiry and a data scope.
 * Only SHA-256 hashes are kept; comparisons take constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { CALLER_NAME, RESERVED_CALLER_IDS } from '../lib/caller-ids.js';
import { ConfigError } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Caller } from '../lib/caller.js';
import { claimValues, failure, type AuthResult } from './authenticator.js';
import { callerWithScopes, NO_TOOLS, type Grants } from './grants.js';

export interface StaticTokens {
  /** The answer for a token, or undefined when it is none of these. */
  check(token: string): AuthResult | undefined;
  readonly count: number;
}

interface TokenEntry {
  readonly hash: Buffer;
  readonly caller: Caller;
  /** When it stops working, in ms since the epoch. */
  readonly expires?: number;
  readonly scopes?: readonly string[];
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
const MIN_TOKEN_LENGTH = 16;
const DAY_MS = 86_400_000;
/** Tokens that end within this are named in a warning at start-up. */
const EXPIRY_WARNING_MS = 14 * DAY_MS;

export interface StaticTokenOptions {
  readonly envToken?: string;
  readonly file?: string;
  readonly grants?: Grants;
  /** The data-scope dimensions the served packs declare; a token naming another is refused. */
  readonly dimensions?: ReadonlySet<string>;
  readonly now?: () => number;
  readonly logger?: Logger;
}

/**
 * The token file: {"tokens": [{"name": "analyst", "token": "…", "tools": ["query_sales"]},
 * {"name": "desk", "token": "…", "toolset": "analysts"},
 * {"name": "eu-report", "sha256": "<hex>", "scopes": ["sales:read"], "data_scope": {"region": ["Europe"]},
 *  "expires": "2027-03-31"}]}. Without "tools", "toolset" or "scopes", every tool.
 */
export function loadStaticTokens(options: StaticTokenOptions, knownTools: readonly string[]): StaticTokens | undefined {
  const now = options.now ?? Date.now;
  const entries: TokenEntry[] = [];
  if (options.envToken !== undefined) {
    if (options.envToken.length < MIN_TOKEN_LENGTH) {
      throw new ConfigError(`QUERYGATE_HTTP_TOKEN: must be at least ${MIN_TOKEN_LENGTH} characters`);
    }
    entries.push({ hash: sha256(options.envToken), caller: { id: 'default' } });
  }
  if (options.file !== undefined) entries.push(...readTokenFile(options.file, knownTools, options));
  const names = entries.map((e) => e.caller.id);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new ConfigError(`token name "${duplicate}" is used twice`);
  if (entries.length === 0) return undefined;
  for (const entry of entries) {
    if (entry.expires === undefined) continue;
    const left = entry.expires - now();
    if (left <= 0) options.logger?.warn(`token "${entry.caller.id}" has expired and is refused`);
    else if (left < EXPIRY_WARNING_MS) {
      options.logger?.warn(`token "${entry.caller.id}" expires in ${Math.ceil(left / DAY_MS)} days`);
    }
  }

  return {
    count: entries.length,
    check: (token) => {
      const presented = sha256(token);
      // Compare against every entry, so the time taken does not tell which one matched.
      let found: TokenEntry | undefined;
      for (const entry of entries) if (timingSafeEqual(presented, entry.hash)) found = entry;
      if (!found) return undefined;
      if (found.expires !== undefined && now() >= found.expires) {
        return failure('expired', `the token expired at ${new Date(found.expires).toISOString()}`);
      }
      return { ok: true, caller: found.caller, ...(found.scopes ? { scopes: found.scopes } : {}) };
    },
  };
}

/** "2027-03-31" (the start of that day, UTC) or an RFC 3339 time with its offset. */
function parseExpiry(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value);
  if (!date && !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) return undefined;
  const ms = Date.parse(date ? `${value}T00:00:00Z` : value);
  if (!Number.isFinite(ms)) return undefined;
  // A date that rolled over (2027-02-30) is a typo, not a day.
  if (date && new Date(ms).toISOString().slice(0, 10) !== value) return undefined;
  return ms;
}

function readTokenFile(path: string, knownTools: readonly string[], options: StaticTokenOptions): TokenEntry[] {
  const where = `QUERYGATE_HTTP_TOKENS_FILE (${path})`;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  if ((mode & 0o077) !== 0) {
    throw new ConfigError(`${where}: readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${where}: ${(err as Error).message}`);
  }
  const tokens = (parsed as { tokens?: unknown }).tokens;
  // An empty list would silently turn authentication off: refuse it, failing closed.
  if (!Array.isArray(tokens) || tokens.length === 0) {
    throw new ConfigError(`${where}: expected {"tokens": [...]} with at least one token`);
  }
  const toolsets = options.grants?.toolsets;
  return tokens.map((raw: unknown, i): TokenEntry => {
    const t = raw as Record<string, unknown>;
    const at = `${where}: tokens[${i}]`;
    const unknown = Object.keys(t).filter(
      (key) => !['name', 'token', 'sha256', 'tools', 'toolset', 'scopes', 'data_scope', 'expires'].includes(key),
    );
    if (unknown.length > 0) throw new ConfigError(`${at}: unknown key ${unknown.map((k) => `"${k}"`).join(', ')}`);
    if (typeof t.name !== 'string' || !CALLER_NAME.test(t.name))
      throw new ConfigError(`${at}.name: letters, digits, _ . - only`);
    if (RESERVED_CALLER_IDS.includes(t.name.toLowerCase())) {
      throw new ConfigError(
        `${at}.name: "${t.name}" is reserved for the server's own callers (${RESERVED_CALLER_IDS.join(', ')}); give the token another name`,
      );
    }
    let hash: Buffer;
    if (typeof t.token === 'string' && t.sha256 === undefined) {
      if (t.token.length < MIN_TOKEN_LENGTH)
        throw new ConfigError(`${at}.token: at least ${MIN_TOKEN_LENGTH} characters`);
      hash = sha256(t.token);
    } else if (typeof t.sha256 === 'string' && t.token === undefined && /^[0-9a-f]{64}$/i.test(t.sha256)) {
      hash = Buffer.from(t.sha256, 'hex');
    } else {
      throw new ConfigError(`${at}: give either "token" or "sha256" (64 hex digits)`);
    }
    const expires = t.expires === undefined ? undefined : parseExpiry(t.expires);
    if (t.expires !== undefined && expires === undefined) {
      throw new ConfigError(`${at}.expires: a date (2027-03-31, the start of that day in UTC) or an RFC 3339 time`);
    }
    const dataScope = readDataScope(t.data_scope, `${at}.data_scope`, options.dimensions);
    const base = { id: t.name, ...(dataScope ? { dataScope } : {}) };
    const given = ['tools', 'toolset', 'scopes'].filter((key) => t[key] !== undefined);
    if (given.length > 1) throw new ConfigError(`${at}: give only one of "tools", "toolset" or "scopes"`);
    const entry = (caller: Caller, scopes?: readonly string[]): TokenEntry => ({
      hash,
      caller,
      ...(expires === undefined ? {} : { expires }),
      ...(scopes ? { scopes } : {}),
    });
    if (t.scopes !== undefined) {
      const known = [...(options.grants?.scopes().keys() ?? [])];
      if (
        !Array.isArray(t.scopes) ||
        t.scopes.length === 0 ||
        !t.scopes.every((s) => typeof s === 'string' && known.includes(s))
      ) {
        throw new ConfigError(
          `${at}.scopes: ${known.length === 0 ? 'no scopes are configured (QUERYGATE_CONFIG scopes)' : `a list of scopes from ${known.join(', ')}`}`,
        );
      }
      const scopes = t.scopes as string[];
      return entry(callerWithScopes(base, scopes, options.grants!), scopes);
    }
    if (t.toolset !== undefined) {
      const known = [...(toolsets?.().keys() ?? [])];
      if (typeof t.toolset !== 'string' || !known.includes(t.toolset)) {
        throw new ConfigError(
          `${at}.toolset: ${known.length === 0 ? 'no toolsets are configured (QUERYGATE_CONFIG toolsets)' : `one of ${known.join(', ')}`}`,
        );
      }
      const name = t.toolset;
      // A toolset a reload removed leaves the token with no tools: closed, not open.
      return entry({
        ...base,
        get tools() {
          return toolsets!().get(name) ?? NO_TOOLS;
        },
      });
    }
    if (t.tools === undefined) return entry(base);
    if (!Array.isArray(t.tools) || !t.tools.every((tool) => typeof tool === 'string' && knownTools.includes(tool))) {
      throw new ConfigError(`${at}.tools: a list of tool names from ${knownTools.join(', ')}`);
    }
    return entry({ ...base, tools: new Set(t.tools as string[]) });
  });
}

/** {"region": ["Europe"]} or {"region": "Europe"}: each dimension one the packs declare, each with values. */
function readDataScope(
  value: unknown,
  at: string,
  dimensions: ReadonlySet<string> | undefined,
): Readonly<Record<string, readonly string[]>> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new ConfigError(`${at}: a mapping of dimensions to values, such as {"region": ["Europe"]}`);
  }
  return Object.fromEntries(
    Object.entries(value).map(([dimension, raw]) => {
      if (dimensions && !dimensions.has(dimension)) {
        throw new ConfigError(
          `${at}.${dimension}: not a data-scope dimension of the served packs (${dimensions.size === 0 ? 'they declare none' : [...dimensions].join(', ')})`,
        );
      }
      const values = claimValues(raw);
      if (!values) throw new ConfigError(`${at}.${dimension}: a value or a non-empty list of values`);
      return [dimension, values];
    }),
  );
}
