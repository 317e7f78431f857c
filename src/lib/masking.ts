/**
 * Desensitizing functions. Each is idempotent (masking a masked value changes nothing), so the
 * server can apply them on top of the masking a pack's views already do at the source.
 */
import { createHmac } from 'node:crypto';
import { memoize } from './memo.js';

/** The kinds of personal or internal data, each with the one treatment that makes it safe to return. */
export type PersonalKind = 'internal_id' | 'name' | 'email' | 'phone';

/** The treatments that make a personal value safe to return: each kind of personal data has one. */
export type Mask = 'token' | 'initials' | 'mask_email' | 'mask_phone';

/** The one mask that makes each kind of personal data safe. */
export const MASK_FOR: Record<PersonalKind, Mask> = {
  internal_id: 'token',
  name: 'initials',
  email: 'mask_email',
  phone: 'mask_phone',
};

export const MASKS: readonly Mask[] = Object.values(MASK_FOR);

const ALREADY_INITIALS = /^(?:\p{Lu}\.)+$/u;
const FOUR_DIGITS = /^\d{4}$/;
/** The view's mask: one character other than @, then ***@ and a domain without @ (or *** alone). */
const ALREADY_MASKED_EMAIL = /^(?:[^@]\*\*\*@[^@]+|\*\*\*)$/;

/** "jane.doe@example.com" -> "j***@example.com"; anything without a usable @ becomes "***". */
export function maskEmail(value: string): string {
  if (ALREADY_MASKED_EMAIL.test(value)) return value; // what a masking view sends
  const at = value.lastIndexOf('@');
  if (at < 1 || at === value.length - 1) return '***';
  return `${value[0]}***@${value.slice(at + 1)}`;
}

/** "Jane van Doe" -> "J.V.D."; "J.D." stays "J.D.". */
export function initials(value: string): string {
  if (ALREADY_INITIALS.test(value)) return value; // what a masking view sends: nothing to split
  const parts = value.split(/[\s.\-']+/u).filter((part) => part.length > 0);
  return parts.map((part) => `${[...part][0]!.toUpperCase()}.`).join('');
}

/** "+1 (555) 010-2345" -> "2345": the last four digits only. */
export function lastFourDigits(value: string): string {
  if (FOUR_DIGITS.test(value)) return value; // what a masking view sends
  return value.replace(/\D/g, '').slice(-4);
}

/** Turns an internal id into an opaque token that is stable for a given key: "ord_3f9a...". */
export type Tokenizer = (entity: string, id: string) => string;

export function createTokenizer(key: string): Tokenizer {
  // A keyed hash costs microseconds and a page of results needs two per row: remember recent ones,
  // entity by entity, so that a lookup hashes the id PostgreSQL sent and builds no string.
  const byEntity = new Map<string, (id: string) => string>();
  return (entity, id) => {
    let token = byEntity.get(entity);
    if (!token) {
      const prefix = `${entity}:`.slice(0, 3) + '_'; // "ord_", "cus_"
      token = memoize((id: string): string => {
        const digest = createHmac('sha256', key).update(`${entity}:${id}`).digest('base64url');
        return prefix + digest.slice(0, 16);
      }, 10_000);
      byEntity.set(entity, token);
    }
    return token(id);
  };
}
