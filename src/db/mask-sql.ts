/**
 * The masks a pack stores beside its personal columns, as SQL for generated columns: computed once when
 * a row is written instead of on every read, so that a masked view only reads them. For ordinary names,
 * emails and phones each gives what the server's own mask (src/lib/masking.ts) gives, the server's masks
 * leave these values as they are, and `doctor` recognizes them as masked. A generated column can hold no
 * subquery, hence the two regular expressions of the initials.
 */
import { sql, type RawBuilder } from 'kysely';

/** "Jane van Doe" -> "J.V.D.": the first character of each part, upper-cased, each followed by a dot. */
export function initialsSql(column: string): RawBuilder<string> {
  return sql<string>`upper(regexp_replace(regexp_replace(${sql.ref(column)}, '[[:space:].''-]+$', ''),
                          '[[:space:].''-]*([^[:space:].''-])[^[:space:].''-]*', '\\1.', 'g'))`;
}

/** "jane.doe@example.com" -> "j***@example.com"; anything without a usable @ becomes "***". */
export function maskedEmailSql(column: string): RawBuilder<string> {
  const value = sql.ref(column);
  return sql<string>`case when position('@' in ${value}) > 1
                          then left(${value}, 1) || '***@' || split_part(${value}, '@', -1)
                          else '***' end`;
}

/** "+1 (555) 010-2345" -> "2345": the last four digits only. */
export function lastFourDigitsSql(column: string): RawBuilder<string> {
  return sql<string>`right(regexp_replace(${sql.ref(column)}, '[^0-9]', '', 'g'), 4)`;
}
