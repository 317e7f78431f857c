import { ConfigError } from '../../lib/errors.js';
import { quote } from '../../lib/date-range.js';
import { TOOL_NAME, type AnyTemplate } from '../types.js';

/**
 * A template names itself as a tool (snake_case verb_noun), has words a model can choose it by,
 * declares each column as { type, source, treatment }, and carries its pack's personal columns.
 */
export function assertShape(t: AnyTemplate): void {
  const where = `template ${t.name}`;
  if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) {
    throw new ConfigError(`${where}: name must be snake_case verb_noun`);
  }
  for (const field of ['title', 'description'] as const) {
    if (typeof t[field] !== 'string') {
      throw new ConfigError(`${where}: ${field} is missing; give it one: a text for a model choosing the tool`);
    }
  }
  if (t.title.trim() === '') throw new ConfigError(`${where}: title is empty`);
  if (t.description.trim().length < 40) throw new ConfigError(`${where}: description is too short to choose by`);
  if (typeof t.columns !== 'object' || t.columns === null || Object.keys(t.columns).length === 0) {
    throw new ConfigError(`${where}: declares no columns`);
  }
  for (const [alias, column] of Object.entries(t.columns) as [string, unknown][]) {
    if (typeof column !== 'object' || column === null) {
      throw new ConfigError(
        `${where}: column ${alias} is declared as ${quote(column)}; declare it as { type, source, treatment }, e.g. ${alias}: { type: 'text', source: 'computed', treatment: ${typeof column === 'string' ? quote(column).replaceAll('"', "'") : "'plain'"} }`,
      );
    }
  }
  if (typeof t.personal !== 'object' || t.personal === null) {
    throw new ConfigError(`${where}: has no personal-column declarations; write it with its pack's templateKit`);
  }
}
