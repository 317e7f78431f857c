/**
 * Session ids for legacy Streamable HTTP clients (2025-11-25 and before), kept by no one. The server
 * holds no session, so an id is a random nonce and its keyed hash: any replica with the same key can
 * tell an id it could have issued from one it could not, and answers the latter with 404, which
 * tells the client to initialize again. 2026-07-28 has no sessions and ignores the header.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface SessionIds {
  /** A new id for a caller's `initialize`. */
  mint(callerId: string): string;
  /** Whether the id was issued, by a server with this key, to this caller. */
  valid(id: string, callerId: string): boolean;
}

const ID = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

export function createSessionIds(key: Uint8Array): SessionIds {
  const sign = (nonce: string, callerId: string): Buffer =>
    createHmac('sha256', key).update(`${nonce}\n${callerId}`).digest();
  return {
    mint: (callerId) => {
      const nonce = randomBytes(16).toString('base64url');
      return `${nonce}.${sign(nonce, callerId).toString('base64url')}`;
    },
    valid: (id, callerId) => {
      const parts = ID.exec(id);
      return parts !== null && timingSafeEqual(Buffer.from(parts[2]!, 'base64url'), sign(parts[1]!, callerId));
    },
  };
}
