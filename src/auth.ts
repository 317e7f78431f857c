/**
 * Bearer tokens for HTTP: from QUERYGATE_HTTP_TOKEN (one token, every tool) and/or a JSON file of
 * named tokens with optional toolsets. Only SHA-256 hashes are kept; comparisons take constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from './errors.js';
import type { Caller } from './registry.js';

export interface Authenticator {
  /** The caller a request's Authorization header names, or undefined when it names none. */
  authenticate(authorization: string | undefined): Caller | undefined;
  readonly count: number;
}

interface TokenEntry {
  readonly hash: Buffer;
  readonly caller: Caller;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const MIN_TOKEN_LENGTH = 16;
const NO_TOOLS: ReadonlySet<string> = new Set();

/** The named toolsets in force (from the configuration file, which may be reloaded). */
export type Toolsets = () => ReadonlyMap<string, ReadonlySet<string>>;

/**
 * The token file: {"tokens": [{"name": "analyst", "token": "…", "tools": ["query_sales"]},
 * {"name": "desk", "token": "…", "toolset": "analysts"},
 * {"name": "report-bot", "sha256": "<hex of the token's SHA-256>"}]}. Without "tools" or "toolset",
 * every tool. A toolset is looked up on every request, so a reloaded configuration applies at once.
 */
export function loadAuthenticator(
  options: { envToken?: string; file?: string; toolsets?: Toolsets },
  knownTools: readonly string[],
): Authenticator | undefined {
  const entries: TokenEntry[] = [];
  if (options.envToken !== undefined) {
    if (options.envToken.length < MIN_TOKEN_LENGTH) {
      throw new ConfigError(`QUERYGATE_HTTP_TOKEN: must be at least ${MIN_TOKEN_LENGTH} characters`);
    }
    entries.push({ hash: sha256(options.envToken), caller: { id: 'default' } });
  }
  if (options.file !== undefined) entries.push(...readTokenFile(options.file, knownTools, options.toolsets));
  const names = entries.map((e) => e.caller.id);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate) throw new ConfigError(`token name "${duplicate}" is used twice`);
  if (entries.length === 0) return undefined;

  return {
    count: entries.length,
    authenticate: (authorization) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match) return undefined;
      const presented = sha256(match[1]!);
      // Compare against every entry, so the time taken does not tell which one matched.
      let found: Caller | undefined;
      for (const entry of entries) if (timingSafeEqual(presented, entry.hash)) found = entry.caller;
      return found;
    },
  };
}

function readTokenFile(path: string, knownTools: readonly string[], toolsets: Toolsets | undefined): TokenEntry[] {
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
  return tokens.map((raw: unknown, i): TokenEntry => {
    const t = raw as { name?: unknown; token?: unknown; sha256?: unknown; tools?: unknown; toolset?: unknown };
    const at = `${where}: tokens[${i}]`;
    if (typeof t.name !== 'string' || !NAME.test(t.name))
      throw new ConfigError(`${at}.name: letters, digits, _ . - only`);
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
    if (t.toolset !== undefined) {
      const known = [...(toolsets?.().keys() ?? [])];
      if (t.tools !== undefined) throw new ConfigError(`${at}: give either "tools" or "toolset"`);
      if (typeof t.toolset !== 'string' || !known.includes(t.toolset)) {
        throw new ConfigError(
          `${at}.toolset: ${known.length === 0 ? 'no toolsets are configured (QUERYGATE_CONFIG toolsets)' : `one of ${known.join(', ')}`}`,
        );
      }
      const name = t.toolset;
      // A toolset a reload removed leaves the token with no tools: closed, not open.
      const caller: Caller = {
        id: t.name,
        get tools() {
          return toolsets!().get(name) ?? NO_TOOLS;
        },
      };
      return { hash, caller };
    }
    if (t.tools === undefined) return { hash, caller: { id: t.name } };
    if (!Array.isArray(t.tools) || !t.tools.every((tool) => typeof tool === 'string' && knownTools.includes(tool))) {
      throw new ConfigError(`${at}.tools: a list of tool names from ${knownTools.join(', ')}`);
    }
    return { hash, caller: { id: t.name, tools: new Set(t.tools as string[]) } };
  });
}
