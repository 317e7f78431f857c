/**
 * Answers about tokens, kept by a hash of the token (never the token) until a time: at most `size`
 * of them, the oldest forgotten first.
 */
import { createHash } from 'node:crypto';
import type { AuthResult } from './authenticator.js';

export interface TokenCache {
  /** The answer kept for the token, while it is still good. */
  get(token: string): AuthResult | undefined;
  set(token: string, result: AuthResult, until: number): void;
}

export function createTokenCache(size: number, now: () => number): TokenCache {
  const kept = new Map<string, { readonly result: AuthResult; readonly until: number }>();
  const keyOf = (token: string): string => createHash('sha256').update(token).digest('base64url');
  return {
    get: (token) => {
      const key = keyOf(token);
      const entry = kept.get(key);
      if (entry && entry.until > now()) return entry.result;
      kept.delete(key);
      return undefined;
    },
    set: (token, result, until) => {
      const key = keyOf(token);
      kept.delete(key);
      kept.set(key, { result, until });
      if (kept.size > size) kept.delete(kept.keys().next().value!);
    },
  };
}
