/**
 * The caller ids the engine gives itself, kept apart from the names a configuration gives tokens:
 * a token named like one of these would share its rate limit, its bound on jobs and its jobs. Token
 * names cannot hold ":", so the prefixed ids (`stdio:…`, `oauth:…`) never meet one; the bare ones
 * are refused as token names (src/auth/static-tokens.ts).
 */
import { randomBytes } from 'node:crypto';

/** Every client over HTTP when no token is asked for. */
export const HTTP_CALLER_ID = 'http';
/** The `report` command. */
export const CLI_CALLER_ID = 'cli';
/** What every stdio process was once; still reserved, so that no token takes it. */
export const STDIO_CALLER_ID = 'stdio';

export const RESERVED_CALLER_IDS: readonly string[] = [HTTP_CALLER_ID, CLI_CALLER_ID, STDIO_CALLER_ID];

/** A caller's own name, as a token's or QUERYGATE_STDIO_CALLER: letters, digits, _ . - only. */
export const CALLER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The id of this stdio process's caller: `stdio:<name>` for the name the operator gives (so that a
 * restarted session finds its jobs again), or `stdio:<random>`, its own, shared with no other process.
 */
export function stdioCallerId(name: string | undefined): string {
  return `${STDIO_CALLER_ID}:${name ?? randomBytes(12).toString('base64url')}`;
}
