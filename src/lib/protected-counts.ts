/**
 * Protected counts of people, released by the cell-key method (the perturbation statistical offices
 * use for flexible table builders). A pack declares which of its people counts are protected; each
 * released figure of one is the true count of a cell (a row, a total, a time bucket: any set of rows a
 * call can ask for) changed by a small noise that depends only on WHO is in the cell:
 *
 *   person key   h(p)  = hashtextextended($seed || ':' || p::text, 0) & 4294967295   (keyed, 0..2^32-1)
 *   cell key     u     = (sum(distinct h(p)) mod 2^32) / 2^32                       (0 <= u < 1)
 *   true count   n     = count(distinct p)
 *   released          = 0                               when n = 0
 *                       T when u·T < n, else 0          when 0 < n < T   (T the threshold; mean n)
 *                       greatest(T, n + ⌊5u⌋ − 2)       when n >= T      (noise −2..+2)
 *
 * So a released figure is never 1..T−1, the same set of people always gets the same figure (a repeated
 * or rephrased call learns nothing new), and two different sets get independent noise: a total minus
 * its rows, a week minus its days, all minus a filtered call each subtract noisy figures, and the
 * difference is the hidden count only by chance. Both aggregates are computed in the pass that counts,
 * with no join. The seed is a bind parameter derived from the server's token key, so no caller can
 * compute the keys. Why this and not suppression, and what stays possible: docs/security.md.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';

/** What a template's builder needs to release protected counts: the registry gives it in ctx.protection. */
export interface CountProtection {
  /** The fewest people a released figure other than 0 stands for. */
  readonly threshold: number;
  /** The key of the person keys, derived from the server's token key; bound as a parameter. */
  readonly seed: string;
}

/** The width of the person and cell keys: 2^32, so that a cell key is a fraction with 32 bits. */
const KEY_SPACE = 4294967296;

/** The noise on a count at or above the threshold is one of −NOISE..+NOISE. */
export const NOISE = 2;

/**
 * A person's key, as a row expression to select once per row (the metrics statement binds it in its
 * lateral join, so that every aggregate over it is the same text and PostgreSQL computes it once):
 *   hashtextextended($seed || ':' || (<person>)::text, 0) & 4294967295
 */
export function personKey(person: Expression<unknown>, protection: CountProtection): RawBuilder<number> {
  return sql<number>`(hashtextextended(${protection.seed} || ':' || (${person})::text, 0) & ${sql.lit(KEY_SPACE - 1)})`;
}

/**
 * The released count of a cell, from the true count of its distinct people and the sum of their
 * distinct keys (both aggregates over the same rows, `filter` included):
 *   case when n = 0 then 0
 *        when n < $T then case when u * $T < n then $T else 0 end
 *        else greatest($T, n + floor(u * 5) - 2) end
 * with u = mod(keys, 2^32) / 2^32.
 */
export function releasedCount(
  count: RawBuilder<unknown>,
  keys: RawBuilder<unknown>,
  protection: CountProtection,
): RawBuilder<number> {
  const t = protection.threshold;
  const u = sql`(mod(coalesce(${keys}, 0), ${sql.lit(KEY_SPACE)})::numeric / ${sql.lit(KEY_SPACE)})`;
  return sql<number>`(case when ${count} = 0 then 0 when ${count} < ${t} then case when ${u} * ${t} < ${count} then ${t} else 0 end else greatest(${t}, ${count} + floor(${u} * ${sql.lit(2 * NOISE + 1)})::int - ${sql.lit(NOISE)}) end)`;
}

/**
 * The same rule in TypeScript, for tests and documentation to recompute a released figure from a
 * cell's true count and the sum of its people's keys.
 */
export function releasedFrom(count: number, keySum: bigint, threshold: number): number {
  if (count === 0) return 0;
  const u = Number(keySum % BigInt(KEY_SPACE)) / KEY_SPACE;
  if (count < threshold) return u * threshold < count ? threshold : 0;
  return Math.max(threshold, count + Math.floor(u * (2 * NOISE + 1)) - NOISE);
}
