import { ConfigError } from '../../lib/errors.js';
import { MASK_FOR, MASKS } from '../../lib/masking.js';
import { personalAt, sourcesOf } from '../sources.js';
import type { AnyTemplate } from '../types.js';

const PERSONAL_LOOKING_NAME = /(^|_)(email|phone|name|first_name|last_name|id)$/;

/**
 * Every column declares the treatment its sources allow: a personal column its kind's one mask (or
 * drop), a column that is not personal no mask, a bucket a
 * numeric column with ascending bounds.
 */
export function assertTreatments(t: AnyTemplate): void {
  const where = `template ${t.name}`;
  for (const [alias, column] of Object.entries(t.columns)) {
    const { treatment } = column;
    const column_ = `${where}: column ${alias}`;
    if (treatment === undefined) {
      throw new ConfigError(
        `${column_} declares no treatment; give it one of plain, ${MASKS.join(', ')}, drop or { bucket: [...] }`,
      );
    }
    const kinds = [...new Set(sourcesOf(column).flatMap((source) => personalAt(t.personal, source)?.kind ?? []))];
    const masks = [...new Set(kinds.map((kind) => MASK_FOR[kind]))];
    if (masks.length > 1 && treatment !== 'drop') {
      // No one treatment makes such a value safe: select each personal column on its own.
      throw new ConfigError(`${column_} combines personal columns that need different masks (${masks.join(', ')})`);
    }
    if (masks.length === 1) {
      if (treatment !== masks[0] && treatment !== 'drop') {
        throw new ConfigError(
          `${column_} returns personal data (${column.source}, ${kinds.join(', ')}) and must declare treatment "${masks[0]}" (or "drop" to keep it from leaving)`,
        );
      }
    } else if (typeof treatment === 'string' && (MASKS as readonly string[]).includes(treatment)) {
      throw new ConfigError(`${column_} declares treatment "${treatment}" but ${column.source} is not personal`);
    } else if (treatment === 'plain' && column.source === 'computed' && PERSONAL_LOOKING_NAME.test(alias)) {
      throw new ConfigError(`${column_} looks personal; declare its source column so it can be masked`);
    }
    if (treatment === 'token' && column.type !== 'text') {
      throw new ConfigError(`${column_} is tokenized and must be of type text`);
    }
    if (typeof treatment === 'object') {
      const bounds = treatment.bucket;
      if (!['integer', 'number', 'money'].includes(column.type)) {
        throw new ConfigError(`${column_} is bucketed and must be of type integer, number or money`);
      }
      if (
        !Array.isArray(bounds) ||
        bounds.length === 0 ||
        bounds.some((b, k) => !Number.isFinite(b) || (k > 0 && b <= bounds[k - 1]!))
      ) {
        throw new ConfigError(`${column_}: bucket bounds must be finite numbers in ascending order`);
      }
    }
  }
}
