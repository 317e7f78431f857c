/**
 * One authorization server as a resource server sees it: its metadata (RFC 8414, or OpenID Connect
 * Discovery) and its signing keys, fetched when first needed and cached. A token naming a key not
 * in the cache makes the keys be fetched again, but at most once per refetch interval, so a flood of
 * made-up `kid`s cannot turn into a flood of requests to the issuer; and a fetch under way is shared.
 */
import {
  createLocalJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTVerifyOptions,
  type JWTVerifyResult,
} from 'jose';
import type { AuthorizationServerSettings } from '../config-file/index.js';
import type { Logger } from '../lib/logger.js';

export interface IssuerOptions {
  readonly refetchMs: number;
  readonly maxAgeMs: number;
  readonly now: () => number;
  readonly logger: Logger;
}

export interface Issuer {
  readonly settings: AuthorizationServerSettings;
  /** Verifies a JWT's signature and claims with the issuer's keys; throws jose's errors, or IssuerUnavailable. */
  verify(token: string, options: JWTVerifyOptions): Promise<JWTVerifyResult>;
  /** The introspection endpoint: configured, or from the metadata. */
  introspectionEndpoint(): Promise<string | undefined>;
  /** Fetches metadata and keys now, so that the first call does not wait for them. */
  warm(): Promise<void>;
}

/** The authorization server could not be asked: its metadata or keys did not come. */
export class IssuerUnavailable extends Error {}

const FETCH_TIMEOUT_MS = 5000;
const MAX_DOCUMENT_BYTES = 1 << 20;

interface Metadata {
  readonly issuer: string;
  readonly jwks_uri?: string;
  readonly introspection_endpoint?: string;
}

async function fetchJson(url: string): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
  } catch (err) {
    throw new IssuerUnavailable(`${url}: ${(err as Error).message}`);
  }
  if (!response.ok) throw new IssuerUnavailable(`${url}: HTTP ${response.status}`);
  return readJson(response, url);
}

/** A response's JSON body, read up to MAX_DOCUMENT_BYTES: a bigger one is cut off, not held in memory. */
export async function readJson(response: Response, url: string): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  for (;;) {
    const next = await reader?.read();
    if (!next || next.done) break;
    size += next.value.byteLength;
    if (size > MAX_DOCUMENT_BYTES) {
      await reader!.cancel();
      throw new IssuerUnavailable(`${url}: larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    chunks.push(next.value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new IssuerUnavailable(`${url}: not JSON`);
  }
}

/** RFC 8414's location (the well-known part before the issuer's path), then OpenID Connect's (after it). */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/** Only public asymmetric keys: an `oct` key would let an HMAC token be checked against a published secret. */
function publicKeys(value: unknown): JSONWebKeySet {
  const keys = (value as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) throw new IssuerUnavailable('the key set has no "keys" list');
  return {
    keys: keys.filter(
      (key): key is JSONWebKeySet['keys'][number] =>
        typeof key === 'object' &&
        key !== null &&
        ['RSA', 'EC', 'OKP'].includes((key as { kty?: unknown }).kty as string) &&
        !('d' in key) &&
        ((key as { use?: unknown }).use === undefined || (key as { use?: unknown }).use === 'sig'),
    ),
  };
}

export function createIssuer(settings: AuthorizationServerSettings, options: IssuerOptions): Issuer {
  let metadata: Promise<Metadata> | undefined;
  let keys: { readonly set: ReturnType<typeof createLocalJWKSet>; readonly at: number } | undefined;
  let fetching: Promise<void> | undefined;
  let lastFetch = Number.NEGATIVE_INFINITY;

  const loadMetadata = (): Promise<Metadata> => {
    metadata ??= (async () => {
      const problems: string[] = [];
      for (const url of metadataUrls(settings.issuer)) {
        try {
          const document = (await fetchJson(url)) as Partial<Metadata>;
          // Mix-up protection: the document must be the issuer's own.
          if (document.issuer !== settings.issuer) {
            problems.push(`${url}: names issuer ${JSON.stringify(document.issuer)}`);
            continue;
          }
          return document as Metadata;
        } catch (err) {
          problems.push((err as Error).message);
        }
      }
      throw new IssuerUnavailable(`no metadata for ${settings.issuer}: ${problems.join('; ')}`);
    })();
    // A failure is not kept: the next request asks again.
    metadata.catch(() => (metadata = undefined));
    return metadata;
  };

  const fetchKeys = (): Promise<void> => {
    fetching ??= (async () => {
      lastFetch = options.now();
      try {
        const uri = settings.jwksUri ?? (await loadMetadata()).jwks_uri;
        if (uri === undefined) throw new IssuerUnavailable(`${settings.issuer} publishes no jwks_uri`);
        const set = publicKeys(await fetchJson(uri));
        keys = { set: createLocalJWKSet(set), at: options.now() };
        options.logger.debug('fetched signing keys', { issuer: settings.issuer, keys: set.keys.length });
      } finally {
        fetching = undefined;
      }
    })();
    return fetching;
  };

  const current = async (): Promise<ReturnType<typeof createLocalJWKSet>> => {
    if (!keys) {
      // Never fetched, or the issuer was down: asked again at most once per refetch interval, so a
      // flood of tokens naming this issuer cannot become a flood of requests to it.
      if (fetching === undefined && options.now() - lastFetch < options.refetchMs) {
        throw new IssuerUnavailable(`${settings.issuer}: its keys could not be fetched; asking again shortly`);
      }
      await (fetching ?? fetchKeys());
    } else if (options.now() - keys.at >= options.maxAgeMs && options.now() - lastFetch >= options.refetchMs) {
      // Stale keys are refreshed; if the issuer is down meanwhile, the ones held keep working.
      await fetchKeys().catch((err: unknown) =>
        options.logger.warn('could not refresh signing keys; keeping those held', {
          issuer: settings.issuer,
          message: (err as Error).message,
        }),
      );
    }
    return keys!.set;
  };

  return {
    settings,
    verify: async (token, verifyOptions) => {
      try {
        return await jwtVerify(token, await current(), verifyOptions);
      } catch (err) {
        if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
        // A key not seen yet: the issuer may have rotated. Ask again, but not more often than allowed.
        if (options.now() - lastFetch < options.refetchMs && fetching === undefined) throw err;
        await (fetching ?? fetchKeys());
        return jwtVerify(token, keys!.set, verifyOptions);
      }
    },
    introspectionEndpoint: async () =>
      settings.introspection?.endpoint ?? (await loadMetadata()).introspection_endpoint,
    warm: async () => {
      await current();
    },
  };
}
